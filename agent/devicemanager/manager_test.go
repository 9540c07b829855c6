package devicemanager

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/kernelet/kernelet/agent/podworkers"
	tm "github.com/kernelet/kernelet/agent/topologymanager"
)

// testPlugin is a device plugin served in the test process.
type testPlugin struct {
	pluginapi.UnimplementedDevicePluginServer
	devs      []*pluginapi.Device
	preferred []string
	// updates are device lists sent after the first one.
	updates chan []*pluginapi.Device

	mu       sync.Mutex
	preStart [][]string
	allocs   [][]string
}

func (p *testPlugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{PreStartRequired: true, GetPreferredAllocationAvailable: true}, nil
}

func (p *testPlugin) ListAndWatch(_ *pluginapi.Empty, s pluginapi.DevicePlugin_ListAndWatchServer) error {
	if err := s.Send(&pluginapi.ListAndWatchResponse{Devices: p.devs}); err != nil {
		return err
	}
	for {
		select {
		case <-s.Context().Done():
			return nil
		case devs := <-p.updates:
			if err := s.Send(&pluginapi.ListAndWatchResponse{Devices: devs}); err != nil {
				return err
			}
		}
	}
}

func (p *testPlugin) GetPreferredAllocation(context.Context, *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	return &pluginapi.PreferredAllocationResponse{ContainerResponses: []*pluginapi.ContainerPreferredAllocationResponse{{DeviceIDs: p.preferred}}}, nil
}

func (p *testPlugin) Allocate(_ context.Context, r *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	p.mu.Lock()
	p.allocs = append(p.allocs, r.ContainerRequests[0].DevicesIds)
	p.mu.Unlock()
	ids := strings.Join(r.ContainerRequests[0].DevicesIds, ",")
	return &pluginapi.AllocateResponse{ContainerResponses: []*pluginapi.ContainerAllocateResponse{{
		Envs:   map[string]string{"TEST_DEVICES": ids},
		Mounts: []*pluginapi.Mount{{ContainerPath: "/dev-test", HostPath: "/tmp/dev-test", ReadOnly: true}},
	}}}, nil
}

func (p *testPlugin) PreStartContainer(_ context.Context, r *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	p.mu.Lock()
	p.preStart = append(p.preStart, r.DevicesIds)
	p.mu.Unlock()
	return &pluginapi.PreStartContainerResponse{}, nil
}

func servePlugin(t *testing.T, p *testPlugin, socket string) *grpc.Server {
	t.Helper()
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(s, p)
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(s.Stop)
	return s
}

func register(t *testing.T, dir string, req *pluginapi.RegisterRequest) error {
	t.Helper()
	conn, err := grpc.NewClient("unix:"+filepath.Join(dir, SocketName), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, req, grpc.WaitForReady(true))
	return err
}

// eventually polls cond every 10 ms for up to 30 s (a bound, not a
// timing assertion).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// startWithPlugin starts a Manager of cfg in a test directory with p
// registered for example.com/r, once want devices are allocatable; it
// stops at the end of the test.
func startWithPlugin(t *testing.T, cfg Config, p *testPlugin, want int64) *Manager {
	t.Helper()
	cfg.Dir = t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	m := New(cfg)
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); m.Wait() })
	servePlugin(t, p, filepath.Join(cfg.Dir, "test.sock"))
	if err := register(t, cfg.Dir, &pluginapi.RegisterRequest{Version: "v1beta1", Endpoint: "test.sock", ResourceName: "example.com/r"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the devices listed", func() bool { _, a := m.Capacity(); return a["example.com/r"] == want })
	return m
}

// topologyAdmit is the topology manager's admission (policy none, one
// NUMA node) with m as its provider, as the agent wires it.
func topologyAdmit(t *testing.T, m *Manager) podworkers.AdmitHandler {
	t.Helper()
	tmgr, err := tm.New(tm.Config{Policy: tm.PolicyNone, Scope: tm.ScopeContainer, Nodes: tm.NewMask(0), Providers: []tm.Provider{m}})
	if err != nil {
		t.Fatal(err)
	}
	return podworkers.AdmitFunc(tmgr.Admit)
}

// admit admits pod through topologyAdmit.
func admit(t *testing.T, m *Manager, pod *v1.Pod) podworkers.AdmitResult {
	t.Helper()
	return topologyAdmit(t, m).Admit(podworkers.AdmitAttributes{Pod: pod})
}

// wantAdmissionError checks that r is kubelet's UnexpectedAdmissionError
// with message want.
func wantAdmissionError(t *testing.T, what string, r podworkers.AdmitResult, want string) {
	t.Helper()
	if r.Admit || r.Reason != "UnexpectedAdmissionError" || r.Message != want {
		t.Errorf("%s: %+v, want %q", what, r, want)
	}
}

func devicePod(uid, name string, n int64) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metavGen(uid, name),
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Resources: v1.ResourceRequirements{
			Limits: v1.ResourceList{"example.com/r": *apiresource.NewQuantity(n, apiresource.DecimalSI)}}}}},
	}
}

func TestManagerLifecycle(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	m := New(Config{Dir: dir, SocketCheckPeriod: 20 * time.Millisecond})
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	p := &testPlugin{preferred: []string{"d1"}, devs: []*pluginapi.Device{
		{ID: "d0", Health: pluginapi.Healthy}, {ID: "d1", Health: pluginapi.Healthy}, {ID: "d2", Health: pluginapi.Unhealthy}}}
	servePlugin(t, p, filepath.Join(dir, "test.sock"))

	// kubelet's refusals
	err := register(t, dir, &pluginapi.RegisterRequest{Version: "v1alpha", Endpoint: "test.sock", ResourceName: "example.com/r"})
	if err == nil || !strings.Contains(err.Error(), `requested API version "v1alpha" is not supported by kubelet. Supported version is ["v1beta1"]`) {
		t.Errorf("bad version: %v", err)
	}
	err = register(t, dir, &pluginapi.RegisterRequest{Version: "v1beta1", Endpoint: "test.sock", ResourceName: "cpu"})
	if err == nil || !strings.Contains(err.Error(), `the ResourceName "cpu" is invalid`) {
		t.Errorf("bad resource name: %v", err)
	}
	if err := register(t, dir, &pluginapi.RegisterRequest{Version: "v1beta1", Endpoint: "test.sock", ResourceName: "example.com/r"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the devices listed", func() bool {
		c, a := m.Capacity()
		return c["example.com/r"] == 3 && a["example.com/r"] == 2
	})

	pod1 := devicePod("uid-1", "one", 1)
	if r := admit(t, m, pod1); !r.Admit {
		t.Fatal(r)
	}
	if got := m.Devices("uid-1", "app"); len(got) != 1 || !reflect.DeepEqual(got[0].DeviceIDs, []string{"d1"}) {
		t.Errorf("pod one holds %+v, want the preferred d1", got)
	}
	run, err := m.ContainerDevices(ctx, pod1, &pod1.Spec.Containers[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Envs) != 1 || run.Envs[0].Value != "d1" || len(run.Mounts) != 1 || run.Mounts[0].HostPath != "/tmp/dev-test" {
		t.Errorf("run options = %+v", run)
	}
	p.mu.Lock()
	if !reflect.DeepEqual(p.preStart, [][]string{{"d1"}}) {
		t.Errorf("PreStartContainer calls = %v", p.preStart)
	}
	p.mu.Unlock()

	if o := m.Offered()["example.com/r"]; o != 2 {
		t.Errorf("offered at admission = %d, want the 2 healthy devices", o)
	}
	pod2 := devicePod("uid-2", "two", 2)
	wantAdmissionError(t, "admitting two", admit(t, m, pod2),
		"Allocate failed due to requested number of devices unavailable for example.com/r. Requested: 2, Available: 1, which is unexpected")
	if got := m.Devices("uid-2", "app"); len(got) != 0 {
		t.Errorf("rejected pod holds %+v", got)
	}

	// The registration socket deleted: served again.
	if err := os.Remove(filepath.Join(dir, SocketName)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the registration socket back", func() bool {
		fi, err := os.Stat(filepath.Join(dir, SocketName))
		return err == nil && fi.Mode()&os.ModeSocket != 0
	})

	// An agent restart: the allocation comes back from the checkpoint.
	cancel()
	m.Wait()
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	m2 := New(Config{Dir: dir})
	if err := m2.Start(ctx2); err != nil {
		t.Fatal(err)
	}
	defer m2.Wait()
	defer cancel2()
	if got := m2.Devices("uid-1", "app"); len(got) != 1 || !reflect.DeepEqual(got[0].DeviceIDs, []string{"d1"}) {
		t.Errorf("after a restart pod one holds %+v", got)
	}
	if r := admit(t, m2, pod1); !r.Admit {
		t.Errorf("admitting pod one again after a restart: %+v", r)
	}
	if c, a := m2.Capacity(); c["example.com/r"] != 0 || a["example.com/r"] != 0 {
		t.Errorf("before the plugin registers again: capacity %v allocatable %v", c, a)
	}
	if o := m2.Offered()["example.com/r"]; o != 1 {
		t.Errorf("offered at admission before the plugin is back = %d, want the 1 device held (kubelet's sanitized allocatable)", o)
	}
	// The start removed the plugin's socket (kubelet's cleanup): the plugin
	// serves again and registers again.
	if _, err := os.Stat(filepath.Join(dir, "test.sock")); !os.IsNotExist(err) {
		t.Errorf("the stale plugin socket is still there: %v", err)
	}
	servePlugin(t, p, filepath.Join(dir, "test2.sock"))
	if err := register(t, dir, &pluginapi.RegisterRequest{Version: "v1beta1", Endpoint: "test2.sock", ResourceName: "example.com/r"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the devices listed again", func() bool {
		_, a := m2.Capacity()
		return a["example.com/r"] == 2
	})
	if got := m2.Allocatable(); len(got) != 1 || !reflect.DeepEqual(got[0].DeviceIDs, []string{"d0", "d1"}) {
		t.Errorf("allocatable = %+v", got)
	}
	m2.Release("uid-1")
	if r := admit(t, m2, devicePod("uid-3", "three", 2)); !r.Admit {
		t.Errorf("two devices after pod one released them: %+v", r)
	}
}

func TestReleaseOnReject(t *testing.T) {
	m := startWithPlugin(t, Config{}, &testPlugin{devs: []*pluginapi.Device{{ID: "d0", Health: pluginapi.Healthy}}}, 1)
	reject := podworkers.AdmitFunc(func(podworkers.AdmitAttributes) podworkers.AdmitResult {
		return podworkers.AdmitResult{Reason: podworkers.ReasonOutOfCPU}
	})
	pass := podworkers.AdmitFunc(func(podworkers.AdmitAttributes) podworkers.AdmitResult { return podworkers.AdmitResult{Admit: true} })
	tests := []struct {
		name      string
		handlers  []podworkers.AdmitHandler
		wantAdmit bool
		wantHeld  int
	}{
		{"rejected after the allocation: released", []podworkers.AdmitHandler{topologyAdmit(t, m), reject}, false, 0},
		{"admitted: held", []podworkers.AdmitHandler{topologyAdmit(t, m), pass}, true, 1},
		{"held before, rejected again (a resize): kept", []podworkers.AdmitHandler{topologyAdmit(t, m), reject}, false, 1},
	}
	pod := devicePod("uid-1", "one", 1)
	for _, tc := range tests {
		r := m.ReleaseOnReject(tc.handlers).Admit(podworkers.AdmitAttributes{Pod: pod})
		if r.Admit != tc.wantAdmit || len(m.Devices("uid-1", "app")) != tc.wantHeld {
			t.Errorf("%s: admit %v, devices %v", tc.name, r.Admit, m.Devices("uid-1", "app"))
		}
	}
}

// After an agent restart a pod admitted again keeps its devices when its
// container runs; one whose container does not run (its sandbox gone: a
// node reboot) is refused until the plugin is back with the devices
// healthy (kubelet's devicesToAllocate).
func TestAdmitAgainAfterRestart(t *testing.T) {
	dir := t.TempDir()
	p := &testPlugin{devs: []*pluginapi.Device{{ID: "d0", Health: pluginapi.Healthy}}}
	start := func(running bool) (*Manager, context.CancelFunc) {
		ctx, cancel := context.WithCancel(context.Background())
		m := New(Config{Dir: dir, Running: func(types.UID, string) bool { return running }})
		if err := m.Start(ctx); err != nil {
			t.Fatal(err)
		}
		return m, func() { cancel(); m.Wait() }
	}
	m, stop := start(true)
	servePlugin(t, p, filepath.Join(dir, "a.sock"))
	if err := register(t, dir, &pluginapi.RegisterRequest{Version: "v1beta1", Endpoint: "a.sock", ResourceName: "example.com/r"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the device listed", func() bool { _, a := m.Capacity(); return a["example.com/r"] == 1 })
	pod := devicePod("uid-1", "one", 1)
	if r := admit(t, m, pod); !r.Admit {
		t.Fatal(r)
	}
	stop()

	m, stop = start(true)
	if r := admit(t, m, pod); !r.Admit {
		t.Errorf("container running, plugin not back: %+v, want admitted", r)
	}
	stop()

	m, stop = start(false)
	defer stop()
	wantAdmissionError(t, "container not running, plugin not back", admit(t, m, pod),
		"Allocate failed due to no healthy devices present; cannot allocate unhealthy devices example.com/r, which is unexpected")
	if got := m.Devices("uid-1", "app"); len(got) != 1 {
		t.Errorf("the refused pod's checkpointed devices = %+v, want kept", got)
	}
	servePlugin(t, p, filepath.Join(dir, "b.sock"))
	if err := register(t, dir, &pluginapi.RegisterRequest{Version: "v1beta1", Endpoint: "b.sock", ResourceName: "example.com/r"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the device listed again", func() bool { _, a := m.Capacity(); return a["example.com/r"] == 1 })
	if r := admit(t, m, pod); !r.Admit {
		t.Errorf("container not running, plugin back: %+v, want admitted", r)
	}
}

// TestDRABackedResourceSkipped: a resource the scheduler backed by dynamic
// resource allocation for the container (status.extendedResourceClaimStatus)
// gets no device of the plugin of the same name, at admission nor at the
// container's creation (kubelet's allocateContainerResources).
func TestDRABackedResourceSkipped(t *testing.T) {
	p := &testPlugin{devs: []*pluginapi.Device{{ID: "d0", Health: pluginapi.Healthy}}}
	m := startWithPlugin(t, Config{}, p, 1)
	pod := devicePod("uid-1", "one", 2) // more than the plugin has
	pod.Status.ExtendedResourceClaimStatus = &v1.PodExtendedResourceClaimStatus{ResourceClaimName: "c",
		RequestMappings: []v1.ContainerExtendedResourceRequest{{ContainerName: "app", ResourceName: "example.com/r", RequestName: "container-0-request-0"}}}
	if r := admit(t, m, pod); !r.Admit {
		t.Fatalf("the DRA-backed pod was rejected: %+v", r)
	}
	run, err := m.ContainerDevices(t.Context(), pod, &pod.Spec.Containers[0])
	if err != nil || len(run.Envs)+len(run.Mounts)+len(run.Devices)+len(run.CDIDevices) != 0 || len(m.Devices("uid-1", "app")) != 0 {
		t.Errorf("the DRA-backed resource got devices: %+v, %v, held %v", run, err, m.Devices("uid-1", "app"))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.allocs) != 0 {
		t.Errorf("Allocate called: %v", p.allocs)
	}
}

// currentSocket is the socket of the resource's current plugin ("" when
// none runs).
func currentSocket(m *Manager, name string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.resources[name]
	if r == nil || !r.connected() {
		return ""
	}
	return filepath.Base(r.ep.socket)
}

// Two plugins of one resource (upstream's "Device Plugin Multiple" specs):
// the second registration takes over, the first keeps running, and
// whichever goes away first leaves the devices to the other: allocatable
// stays (before, the first plugin was dropped at the second registration
// and allocatable fell to 0 when the second went away: "DP2 changed its
// mind"). When the last one goes the devices turn unhealthy.
func TestTwoPluginsOfOneResource(t *testing.T) {
	devs := []*pluginapi.Device{{ID: "Dev-1", Health: pluginapi.Healthy}, {ID: "Dev-2", Health: pluginapi.Healthy}}
	const name = "example.com/r"
	for _, goesFirst := range []string{"dp2", "dp1"} {
		t.Run(goesFirst+" goes first", func(t *testing.T) {
			dp1 := &testPlugin{devs: devs}
			m := startWithPlugin(t, Config{}, dp1, 2) // test.sock
			dp2 := &testPlugin{devs: devs}
			s2 := servePlugin(t, dp2, filepath.Join(m.cfg.Dir, "dp2.sock"))
			if err := register(t, m.cfg.Dir, &pluginapi.RegisterRequest{Version: "v1beta1", Endpoint: "dp2.sock", ResourceName: name}); err != nil {
				t.Fatal(err)
			}
			eventually(t, "dp2 registered", func() bool { return currentSocket(m, name) == "dp2.sock" })
			// The one that stays serves the allocations afterwards.
			stays, staysSock := dp1, "test.sock"
			if goesFirst == "dp2" {
				s2.Stop()
			} else {
				stays, staysSock = dp2, "dp2.sock"
				m.mu.Lock()
				older := slices.Clone(m.resources[name].older)
				m.mu.Unlock()
				if len(older) != 1 {
					t.Fatalf("%d older plugins after dp2 registered, want dp1 still running", len(older))
				}
				older[0].stop() // dp1's stream ends as when its plugin goes
				eventually(t, "dp1 forgotten", func() bool {
					m.mu.Lock()
					defer m.mu.Unlock()
					return len(m.resources[name].older) == 0
				})
			}
			eventually(t, "the remaining plugin current", func() bool { return currentSocket(m, name) == staysSock })
			if c, a := m.Capacity(); c[name] != 2 || a[name] != 2 {
				t.Errorf("after %s went away: capacity %d allocatable %d, want 2/2", goesFirst, c[name], a[name])
			}
			pod := devicePod("uid-1", "one", 1)
			if r := admit(t, m, pod); !r.Admit {
				t.Fatalf("admitting a device pod after %s went away: %+v", goesFirst, r)
			}
			if _, err := m.ContainerDevices(context.Background(), pod, &pod.Spec.Containers[0]); err != nil {
				t.Fatal(err)
			}
			stays.mu.Lock()
			if len(stays.allocs) != 1 {
				t.Errorf("Allocate calls of the remaining plugin: %v, want 1", stays.allocs)
			}
			stays.mu.Unlock()
		})
	}
}

// The same plugin registering again (its socket) replaces its endpoint;
// when the last plugin goes the devices turn unhealthy.
func TestPluginRegistersAgainThenGoes(t *testing.T) {
	const name = "example.com/r"
	p := &testPlugin{devs: []*pluginapi.Device{{ID: "d0", Health: pluginapi.Healthy}}}
	m := startWithPlugin(t, Config{}, p, 1)
	m.mu.Lock()
	first := m.resources[name].ep
	m.mu.Unlock()
	if err := register(t, m.cfg.Dir, &pluginapi.RegisterRequest{Version: "v1beta1", Endpoint: "test.sock", ResourceName: name}); err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	r := m.resources[name]
	replaced, older := r.ep != first, len(r.older)
	m.mu.Unlock()
	if !replaced || older != 0 || !first.isStopped() {
		t.Fatalf("registering again from the same socket: replaced %v, %d older endpoints, first stopped %v", replaced, older, first.isStopped())
	}
	m.mu.Lock()
	ep := m.resources[name].ep
	m.mu.Unlock()
	ep.stop()
	eventually(t, "the devices unhealthy", func() bool { c, a := m.Capacity(); return c[name] == 1 && a[name] == 0 })
}

// Keep releases the devices of the pods keep says no to and asks keep
// without the manager's lock held: in the agent keep takes the pod
// workers' lock, under which admission takes the manager's (Offered), and
// Keep asking it under its own lock deadlocked the agent (a soak test's
// pods stayed Pending). Here keep takes the manager's lock itself: under
// the old Keep it never returned.
func TestKeepAsksWithoutTheLock(t *testing.T) {
	m := startWithPlugin(t, Config{}, &testPlugin{devs: []*pluginapi.Device{
		{ID: "d0", Health: pluginapi.Healthy}, {ID: "d1", Health: pluginapi.Healthy}}}, 2)
	for _, p := range []*v1.Pod{devicePod("uid-1", "one", 1), devicePod("uid-2", "two", 1)} {
		if r := admit(t, m, p); !r.Admit {
			t.Fatalf("%s: %+v", p.Name, r)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Keep(func(uid string) bool {
			m.Offered() // takes m.mu
			return uid == "uid-1"
		})
	}()
	select {
	case <-done:
	case <-time.After(time.Minute): // a deadlock detector, not a timing assertion
		t.Fatal("Keep did not return: keep was asked with the manager's lock held")
	}
	if got := m.Devices("uid-1", "app"); len(got) != 1 {
		t.Errorf("kept pod's devices = %+v, want its one device", got)
	}
	if got := m.Devices("uid-2", "app"); len(got) != 0 {
		t.Errorf("released pod's devices = %+v, want none", got)
	}
	if r := admit(t, m, devicePod("uid-3", "three", 1)); !r.Admit {
		t.Errorf("the released device is not offered again: %+v", r)
	}
}
