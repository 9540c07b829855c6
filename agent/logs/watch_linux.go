package logs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Watch masks by depth under the pod logs directory: the root and the pod
// directories report new subdirectories, the container directories report
// writes to their files.
const (
	dirMask = unix.IN_CREATE | unix.IN_MOVED_TO | unix.IN_ONLYDIR
	logMask = unix.IN_MODIFY | unix.IN_ONLYDIR
)

// logWatch reports which live logs under a pod logs directory
// (<root>/<pod>/<container>/<n>.log) were written, with inotify: IN_MODIFY
// on every container directory, new pod and container directories
// followed as they appear. It reads the kernel's events at most once per
// gap: writes in between coalesce in the kernel's queue, so a busy log
// costs at most one wake-up per gap and an idle one none.
type logWatch struct {
	f    *os.File
	fd   int
	gap  time.Duration
	dirs map[int32]watchedDir // by watch descriptor; reader goroutine only

	changed chan struct{}
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once

	mu       sync.Mutex
	dirty    map[string]bool
	overflow bool
	err      error
}

type watchedDir struct {
	path  string
	depth int // 0 root, 1 pod, 2 container
}

// newLogWatch watches root and what is under it now.
func newLogWatch(root string, gap time.Duration) (*logWatch, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify_init1: %w", err)
	}
	w := &logWatch{
		f:       os.NewFile(uintptr(fd), "inotify:"+root),
		fd:      fd,
		gap:     gap,
		dirs:    map[int32]watchedDir{},
		changed: make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
		dirty:   map[string]bool{},
	}
	if err := w.add(root, 0); err != nil {
		_ = w.f.Close()
		return nil, err
	}
	go w.read()
	return w, nil
}

// add watches dir at depth and what is in it already (it may predate the
// watch): the directories below it, or a container directory's logs
// (reported as written).
func (w *logWatch) add(dir string, depth int) error {
	mask := uint32(dirMask)
	if depth == 2 {
		mask = logMask
	}
	wd, err := unix.InotifyAddWatch(w.fd, dir, mask)
	if err != nil {
		return fmt.Errorf("inotify_add_watch %s: %w", dir, err)
	}
	w.dirs[int32(wd)] = watchedDir{path: dir, depth: depth}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil // removed meanwhile: its watch ends by itself
	}
	for _, e := range entries {
		switch p := filepath.Join(dir, e.Name()); {
		case depth < 2 && e.IsDir():
			_ = w.add(p, depth+1)
		case depth == 2 && strings.HasSuffix(e.Name(), ".log"):
			// It may have been written before the watch.
			w.mu.Lock()
			w.dirty[p] = true
			w.mu.Unlock()
		}
	}
	return nil
}

// Changed receives after logs were written since the last Take.
func (w *logWatch) Changed() <-chan struct{} { return w.changed }

// Take returns (and forgets) the logs written since the last call; all
// means events were lost (queue overflow): check every log.
func (w *logWatch) Take() (paths []string, all bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for p := range w.dirty {
		paths = append(paths, p)
	}
	clear(w.dirty)
	all, w.overflow = w.overflow, false
	return paths, all
}

// Err is why the watch stopped, nil while it works.
func (w *logWatch) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Close ends the watch and waits for its reader.
func (w *logWatch) Close() error {
	var err error
	w.once.Do(func() {
		close(w.stop)
		err = w.f.Close()
		<-w.done
	})
	return err
}

func (w *logWatch) read() {
	defer close(w.done)
	buf := make([]byte, 64<<10)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			if !errors.Is(err, os.ErrClosed) {
				w.mu.Lock()
				w.err = fmt.Errorf("read inotify: %w", err)
				w.mu.Unlock()
				w.notify()
			}
			return
		}
		w.handle(buf[:n])
		w.notify()
		// Let writes coalesce in the kernel's queue for a gap.
		t.Reset(w.gap)
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
	}
}

// handle records the events of one read.
func (w *logWatch) handle(buf []byte) {
	for off := 0; off+unix.SizeofInotifyEvent <= len(buf); {
		wd := int32(binary.NativeEndian.Uint32(buf[off:]))
		mask := binary.NativeEndian.Uint32(buf[off+4:])
		nameLen := int(binary.NativeEndian.Uint32(buf[off+12:]))
		start := off + unix.SizeofInotifyEvent
		off = start + nameLen
		name := ""
		if off <= len(buf) {
			name = strings.TrimRight(string(buf[start:off]), "\x00")
		}
		d, ok := w.dirs[wd]
		switch {
		case mask&unix.IN_Q_OVERFLOW != 0:
			w.mu.Lock()
			w.overflow = true
			w.mu.Unlock()
		case !ok:
		case mask&unix.IN_IGNORED != 0:
			delete(w.dirs, wd)
		case mask&unix.IN_ISDIR != 0 && d.depth < 2 && name != "":
			_ = w.add(filepath.Join(d.path, name), d.depth+1)
		case mask&unix.IN_MODIFY != 0 && d.depth == 2 && strings.HasSuffix(name, ".log"):
			w.mu.Lock()
			w.dirty[filepath.Join(d.path, name)] = true
			w.mu.Unlock()
		}
	}
}

func (w *logWatch) notify() {
	select {
	case w.changed <- struct{}{}:
	default:
	}
}
