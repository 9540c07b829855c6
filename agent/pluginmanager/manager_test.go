package pluginmanager

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// wait bounds every wait of these tests: generous, the machine is shared.
const wait = 30 * time.Second

// testPlugin serves the registration API on a socket, as a
// node-driver-registrar or a DRA plugin does, and records the status
// kernelet sends.
type testPlugin struct {
	registerapi.UnimplementedRegistrationServer
	info   *registerapi.PluginInfo
	status chan *registerapi.RegistrationStatus
	srv    *grpc.Server
}

func startPlugin(t *testing.T, socket string, info *registerapi.PluginInfo) *testPlugin {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(socket), 0o750); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	p := &testPlugin{info: info, status: make(chan *registerapi.RegistrationStatus, 10), srv: grpc.NewServer()}
	registerapi.RegisterRegistrationServer(p.srv, p)
	go func() { _ = p.srv.Serve(l) }()
	t.Cleanup(p.srv.Stop)
	return p
}

func (p *testPlugin) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return p.info, nil
}

func (p *testPlugin) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	p.status <- s
	return &registerapi.RegistrationStatusResponse{}, nil
}

func (p *testPlugin) nextStatus(t *testing.T) *registerapi.RegistrationStatus {
	t.Helper()
	select {
	case s := <-p.status:
		return s
	case <-time.After(wait):
		t.Fatal("no registration status")
		return nil
	}
}

// recordingHandler records the calls a handler gets as lines.
type recordingHandler struct {
	mu       sync.Mutex
	calls    chan string
	validate error
}

func newHandler() *recordingHandler { return &recordingHandler{calls: make(chan string, 20)} }

func (h *recordingHandler) ValidatePlugin(_ context.Context, name, endpoint string, versions []string) error {
	h.calls <- fmt.Sprintf("validate %s %s %s", name, endpoint, strings.Join(versions, ","))
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.validate
}

func (h *recordingHandler) RegisterPlugin(_ context.Context, name, endpoint string, versions []string) error {
	h.calls <- fmt.Sprintf("register %s %s %s", name, endpoint, strings.Join(versions, ","))
	return nil
}

func (h *recordingHandler) DeRegisterPlugin(_ context.Context, name, endpoint string) {
	h.calls <- fmt.Sprintf("deregister %s %s", name, endpoint)
}

func (h *recordingHandler) next(t *testing.T) string {
	t.Helper()
	select {
	case c := <-h.calls:
		return c
	case <-time.After(wait):
		t.Fatal("no handler call")
		return ""
	}
}

func runManager(t *testing.T, dir string, handlers map[string]Handler) *Manager {
	t.Helper()
	m := New(Config{Dir: dir, Handlers: handlers})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return m
}

// shortDir is a temporary directory short enough for Unix socket paths.
func shortDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "plg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	return filepath.Join(d, "plugins_registry")
}

func TestRegistrationLifecycle(t *testing.T) {
	dir := shortDir(t)
	csi := newHandler()
	// A socket present before the manager starts is registered too.
	early := filepath.Join(dir, "early.sock")
	pe := startPlugin(t, early, &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: "early.csi", Endpoint: "/csi/early.sock", SupportedVersions: []string{"1.0.0"}})
	m := runManager(t, dir, map[string]Handler{registerapi.CSIPlugin: csi})

	if got, want := csi.next(t), "validate early.csi /csi/early.sock 1.0.0"; got != want {
		t.Fatalf("call %q, want %q", got, want)
	}
	if got, want := csi.next(t), "register early.csi /csi/early.sock 1.0.0"; got != want {
		t.Fatalf("call %q, want %q", got, want)
	}
	if s := pe.nextStatus(t); !s.PluginRegistered || s.Error != "" {
		t.Fatalf("status %+v, want registered", s)
	}

	// A socket in a new sub-directory, without an endpoint: the socket is the endpoint.
	late := filepath.Join(dir, "sub", "late.sock")
	pl := startPlugin(t, late, &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: "late.csi", SupportedVersions: []string{"1.2.0"}})
	if got, want := csi.next(t), "validate late.csi "+late+" 1.2.0"; got != want {
		t.Fatalf("call %q, want %q", got, want)
	}
	if got, want := csi.next(t), "register late.csi "+late+" 1.2.0"; got != want {
		t.Fatalf("call %q, want %q", got, want)
	}
	if s := pl.nextStatus(t); !s.PluginRegistered {
		t.Fatalf("status %+v, want registered", s)
	}
	waitPlugins(t, m, "early.csi", "late.csi")

	// The socket goes: deregistered.
	pe.srv.Stop()
	if err := os.Remove(early); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if got, want := csi.next(t), "deregister early.csi /csi/early.sock"; got != want {
		t.Fatalf("call %q, want %q", got, want)
	}
	waitPlugins(t, m, "late.csi")
}

// waitPlugins waits until exactly the named plugins are registered.
func waitPlugins(t *testing.T, m *Manager, names ...string) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		var got []string
		for _, p := range m.Plugins() {
			got = append(got, p.Name)
		}
		if strings.Join(got, ",") == strings.Join(names, ",") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("registered %v, want %v", got, names)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRegistrationRefused(t *testing.T) {
	dir := shortDir(t)
	csi := newHandler()
	csi.validate = errors.New("no version supported")
	runManager(t, dir, map[string]Handler{registerapi.CSIPlugin: csi})

	for name, tc := range map[string]struct {
		info *registerapi.PluginInfo
		want string
	}{
		"unknown type": {
			info: &registerapi.PluginInfo{Type: "Gadget", Name: "g"},
			want: "RegisterPlugin error -- no handler registered for plugin type: Gadget at socket ",
		},
		"validation fails": {
			info: &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: "v", SupportedVersions: []string{"9.0.0"}},
			want: "RegisterPlugin error -- plugin validation failed with err: no version supported",
		},
	} {
		t.Run(name, func(t *testing.T) {
			sock := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".sock")
			p := startPlugin(t, sock, tc.info)
			s := p.nextStatus(t)
			if s.PluginRegistered || !strings.HasPrefix(s.Error, tc.want) {
				t.Errorf("status %+v, want refused with %q", s, tc.want)
			}
		})
	}
}

func TestIgnoredFiles(t *testing.T) {
	dir := shortDir(t)
	csi := newHandler()
	m := runManager(t, dir, map[string]Handler{registerapi.CSIPlugin: csi})
	// A hidden socket and a regular file are not plugins; a later visible
	// socket proves the watcher saw them first.
	hidden := startPlugin(t, filepath.Join(dir, ".hidden.sock"), &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: "hidden", SupportedVersions: []string{"1.0.0"}})
	if err := os.WriteFile(filepath.Join(dir, "plain.sock"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	visible := startPlugin(t, filepath.Join(dir, "visible.sock"), &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: "visible", SupportedVersions: []string{"1.0.0"}})
	if s := visible.nextStatus(t); !s.PluginRegistered {
		t.Fatalf("status %+v", s)
	}
	select {
	case s := <-hidden.status:
		t.Fatalf("hidden socket got a status: %+v", s)
	default:
	}
	waitPlugins(t, m, "visible")
	// The watcher handles events in order: the visible socket desired
	// means the two files before it were seen and left out.
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.desired) != 1 {
		t.Errorf("desired sockets %v, want only visible.sock", m.desired)
	}
}

// TestReRegistrationAndRetry: a socket re-created at the same path is
// deregistered and registered again; a plugin whose type has no handler
// yet is registered once AddHandler brings one (the failed attempt is
// retried).
func TestReRegistrationAndRetry(t *testing.T) {
	dir := shortDir(t)
	csi := newHandler()
	m := runManager(t, dir, map[string]Handler{registerapi.CSIPlugin: csi})
	sock := filepath.Join(dir, "d.sock")
	info := &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: "d", Endpoint: "/e", SupportedVersions: []string{"1.0.0"}}
	p := startPlugin(t, sock, info)
	if s := p.nextStatus(t); !s.PluginRegistered {
		t.Fatalf("status %+v", s)
	}
	csi.next(t) // validate
	csi.next(t) // register
	p.srv.Stop()
	if err := os.Remove(sock); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	p2 := startPlugin(t, sock, info)
	var calls []string
	for len(calls) < 3 {
		calls = append(calls, csi.next(t))
	}
	if want := "deregister d /e,validate d /e 1.0.0,register d /e 1.0.0"; strings.Join(calls, ",") != want {
		t.Errorf("calls %q, want %q", calls, want)
	}
	if s := p2.nextStatus(t); !s.PluginRegistered {
		t.Fatalf("status after re-creation %+v", s)
	}

	dra := newHandler()
	p3 := startPlugin(t, filepath.Join(dir, "dra.sock"), &registerapi.PluginInfo{Type: registerapi.DRAPlugin, Name: "gpu", SupportedVersions: []string{"v1"}})
	if s := p3.nextStatus(t); s.PluginRegistered {
		t.Fatalf("registered without a handler: %+v", s)
	}
	m.AddHandler(registerapi.DRAPlugin, dra)
	if got := dra.next(t); !strings.HasPrefix(got, "validate gpu ") {
		t.Errorf("DRA handler call %q", got)
	}
	for !p3.nextStatus(t).PluginRegistered { // attempts made before the handler came
	}
	waitPlugins(t, m, "d", "gpu")
}

// A socket seen twice as the same file (a new sub-directory's walk and the
// Create event of a socket made during that walk: CI once saw late.csi
// deregistered and registered again for it) keeps its generation; a socket
// re-created at the path is a new generation.
func TestConsiderSameSocketKeepsGeneration(t *testing.T) {
	dir := shortDir(t)
	m := New(Config{Dir: dir})
	path := filepath.Join(dir, "a.sock")
	listen := func() net.Listener {
		t.Helper()
		if err := os.MkdirAll(dir, 0o750); err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	stat := func() os.FileInfo {
		t.Helper()
		fi, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi
	}
	ctx := context.Background()
	l := listen()
	m.consider(ctx, path, stat())
	first := m.desired[path]
	m.consider(ctx, path, stat())
	if got := m.desired[path]; got != first {
		t.Fatalf("the same socket seen again: generation %d, want %d", got, first)
	}
	_ = l.Close() // removes the socket file
	// Keep the old file's inode from being reused by holding another file.
	hold, err := os.CreateTemp(dir, "hold")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = hold.Close() }()
	l = listen()
	defer func() { _ = l.Close() }()
	m.consider(ctx, path, stat())
	if got := m.desired[path]; got == first {
		t.Fatalf("a re-created socket kept generation %d", got)
	}
}
