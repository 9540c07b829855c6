package pluginmanager

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"k8s.io/klog/v2"
)

// Manager watches the registration directory and registers the plugins
// whose sockets appear there.
type Manager struct {
	dir string
	now func() time.Time

	mu         sync.Mutex
	handlers   map[string]Handler
	gen        uint64
	desired    map[string]uint64
	files      map[string]fs.FileInfo // the socket file each desired generation is
	registered map[string]Plugin
	busy       map[string]bool
	retry      map[string]retryState
	kick       chan struct{}
	wg         sync.WaitGroup
}

// retryState is the backoff of a socket's failed registration.
type retryState struct {
	gen     uint64
	delay   time.Duration
	notWhen time.Time
}

// New returns a Manager; Run starts it.
func New(cfg Config) *Manager {
	m := &Manager{
		dir: cfg.Dir, now: time.Now,
		handlers: map[string]Handler{}, desired: map[string]uint64{}, files: map[string]fs.FileInfo{},
		registered: map[string]Plugin{}, busy: map[string]bool{},
		retry: map[string]retryState{}, kick: make(chan struct{}, 1),
	}
	for t, h := range cfg.Handlers {
		m.handlers[t] = h
	}
	return m
}

// AddHandler adds (or replaces) the handler of a plugin type; plugins of
// that type that failed before are retried at their next attempt.
func (m *Manager) AddHandler(pluginType string, h Handler) {
	m.mu.Lock()
	m.handlers[pluginType] = h
	m.mu.Unlock()
	m.wake()
}

// Plugins returns the registered plugins sorted by socket path.
func (m *Manager) Plugins() []Plugin {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Plugin, 0, len(m.registered))
	for _, p := range m.registered {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].SocketPath < out[j].SocketPath })
	return out
}

// Run watches the directory until ctx ends; it then waits for the
// registrations in flight. The plugins stay registered with their
// handlers (as kubelet, which does not deregister on shutdown).
func (m *Manager) Run(ctx context.Context) error {
	if err := os.MkdirAll(m.dir, 0o750); err != nil {
		return fmt.Errorf("plugin registration dir: %w", err)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("plugin registration watcher: %w", err)
	}
	defer func() { _ = w.Close() }()
	if err := m.walk(ctx, w, m.dir); err != nil {
		return err
	}
	tick := time.NewTicker(reconcilePeriod)
	defer tick.Stop()
	defer m.wg.Wait()
	for {
		m.reconcile(ctx)
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return errors.New("plugin registration watcher closed")
			}
			m.handleEvent(ctx, w, ev)
		case err, ok := <-w.Errors:
			if !ok {
				return errors.New("plugin registration watcher closed")
			}
			klog.FromContext(ctx).Error(err, "Plugin registration watcher")
		case <-tick.C:
		case <-m.kick:
		}
	}
}

func (m *Manager) wake() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// walk watches dir and its sub-directories and desires the sockets in them.
func (m *Manager) walk(ctx context.Context, w *fsnotify.Watcher, dir string) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path != dir && errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return fmt.Errorf("plugin registration dir: %w", err)
		}
		if d.IsDir() {
			if err := w.Add(path); err != nil {
				return fmt.Errorf("watch %s: %w", path, err)
			}
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil // gone already: its Remove event follows
		}
		m.consider(ctx, path, fi)
		return nil
	})
}

// consider desires path when it is a socket not hidden by a leading dot.
// A socket seen again as the same file (a new sub-directory's walk and
// the Create event of a socket made while it was walked) keeps its
// generation; another file at the path is a new generation, registered
// again.
func (m *Manager) consider(ctx context.Context, path string, fi fs.FileInfo) {
	if strings.HasPrefix(filepath.Base(path), ".") || fi.Mode().Type()&fs.ModeSocket == 0 {
		klog.FromContext(ctx).V(5).Info("Ignoring file in the plugin registration dir", "path", path)
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.files[path]; ok && os.SameFile(old, fi) {
		if _, desired := m.desired[path]; desired {
			return
		}
	}
	m.gen++
	m.desired[path] = m.gen
	m.files[path] = fi
}

func (m *Manager) handleEvent(ctx context.Context, w *fsnotify.Watcher, ev fsnotify.Event) {
	switch {
	case ev.Has(fsnotify.Create):
		fi, err := os.Lstat(ev.Name)
		if err != nil {
			return // gone already: its Remove event follows
		}
		if fi.IsDir() {
			if err := m.walk(ctx, w, ev.Name); err != nil {
				klog.FromContext(ctx).Error(err, "Watching a new plugin registration dir", "path", ev.Name)
			}
			return
		}
		m.consider(ctx, ev.Name, fi)
	case ev.Has(fsnotify.Remove), ev.Has(fsnotify.Rename):
		m.mu.Lock()
		prefix := ev.Name + string(filepath.Separator)
		for path := range m.desired {
			if path == ev.Name || strings.HasPrefix(path, prefix) {
				delete(m.desired, path)
				delete(m.files, path)
			}
		}
		m.mu.Unlock()
	}
}

// reconcile starts the operations Plan asks for that are not running or
// waiting for their retry.
func (m *Manager) reconcile(ctx context.Context) {
	m.mu.Lock()
	defer m.mu.Unlock()
	unregister, register := Plan(m.desired, m.registered)
	for _, p := range unregister {
		if m.busy[p.SocketPath] {
			continue
		}
		delete(m.registered, p.SocketPath)
		m.busy[p.SocketPath] = true
		h := m.handlers[p.Type]
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			if h != nil {
				h.DeRegisterPlugin(ctx, p.Name, p.Endpoint)
			}
			klog.FromContext(ctx).Info("Plugin deregistered", "type", p.Type, "name", p.Name, "socket", p.SocketPath)
			m.done(p.SocketPath)
		}()
	}
	now := m.now()
	for _, path := range register {
		if m.busy[path] {
			continue
		}
		gen := m.desired[path]
		if r, ok := m.retry[path]; ok && r.gen == gen && now.Before(r.notWhen) {
			continue
		}
		if _, ok := m.registered[path]; ok {
			continue // its old generation is being unregistered first
		}
		m.busy[path] = true
		handlers := make(map[string]Handler, len(m.handlers))
		for t, h := range m.handlers {
			handlers[t] = h
		}
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			p, err := registerPlugin(ctx, path, handlers)
			p.Generation = gen
			m.registerDone(ctx, p, err)
		}()
	}
}

func (m *Manager) done(path string) {
	m.mu.Lock()
	delete(m.busy, path)
	m.mu.Unlock()
	m.wake()
}

// registerDone records a registration's outcome: a success is kept unless
// the socket went meanwhile (then it is unregistered next), a failure
// backs off.
func (m *Manager) registerDone(ctx context.Context, p Plugin, err error) {
	m.mu.Lock()
	if err != nil {
		r := m.retry[p.SocketPath]
		if r.gen != p.Generation {
			r = retryState{gen: p.Generation}
		}
		r.delay = nextBackoff(r.delay)
		r.notWhen = m.now().Add(r.delay)
		m.retry[p.SocketPath] = r
		klog.FromContext(ctx).Error(err, "Plugin registration failed", "socket", p.SocketPath, "retryIn", r.delay)
	} else {
		delete(m.retry, p.SocketPath)
		m.registered[p.SocketPath] = p
		klog.FromContext(ctx).Info("Plugin registered", "type", p.Type, "name", p.Name, "endpoint", p.Endpoint, "versions", p.Versions)
	}
	m.mu.Unlock()
	m.done(p.SocketPath)
}
