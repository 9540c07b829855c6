package runtime

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/kernelet/kernelet/agent/qos"
	"github.com/kernelet/kernelet/agent/runtime/podconfig"
	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/internal/httpget"
	"github.com/kernelet/kernelet/internal/kubeversion"
)

// fakeCgroups records pod cgroups; removal fails busy the first busy
// times.
type fakeCgroups struct {
	mu      sync.Mutex
	pods    map[types.UID]bool
	busy    int
	removes int
	// stragglers: removal fails busy until KillPod (kills counts them).
	stragglers bool
	kills      int
	resizes    []bool
	usage      int64
}

func (f *fakeCgroups) EnsurePod(_ context.Context, pod *v1.Pod) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pods[pod.UID] = true
	return "/kubepods/besteffort/pod" + string(pod.UID), nil
}

// ResizePod records the pod cgroup updates of in-place resizes.
func (f *fakeCgroups) ResizePod(_ context.Context, from, to *v1.Pod, widen bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resizes = append(f.resizes, widen)
	return nil
}

// Settings are the pod settings with a 100ms period.
func (f *fakeCgroups) Settings(pod *v1.Pod) cgroups.CgroupSettings {
	return cgroups.ComputePodSettings(cgroups.QoSConfig{CPUCFSQuotaPeriod: 100 * time.Millisecond}, qos.PodResources(pod))
}

// MemoryUsage reports f.usage for every container and the pod.
func (f *fakeCgroups) MemoryUsage(_ context.Context, _ *v1.Pod, ids []string) (int64, map[string]int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int64{}
	for _, id := range ids {
		out[id] = f.usage
	}
	return f.usage, out, nil
}

func (f *fakeCgroups) RemovePod(_ context.Context, uid types.UID) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.removes++
	if f.stragglers {
		return &cgroups.BusyError{Cgroup: string(uid)}
	}
	if f.busy > 0 {
		f.busy--
		return &cgroups.BusyError{Cgroup: string(uid)}
	}
	delete(f.pods, uid)
	return nil
}

func newFakeManager(t *testing.T) (*Manager, *fakeCRI, *fakeCgroups) {
	t.Helper()
	f := newFakeCRI()
	cg := &fakeCgroups{pods: map[types.UID]bool{}}
	m, err := NewManager(ManagerConfig{Runtime: f, Images: f, Cgroups: cg, PodLogsDir: t.TempDir(), PodsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return m, f, cg
}

func (f *fakeCgroups) KillPod(_ context.Context, uid types.UID) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.kills++
	n := 0
	if f.stragglers {
		f.stragglers, n = false, 1
	}
	return n, nil
}

// A pod cgroup whose processes stay past the removal's wait has them
// killed, once, and is removed then (kubelet's tryKillingCgroupProcesses);
// one that stays busy after that is an error.
func TestRemoveCgroupKillsStragglers(t *testing.T) {
	f := newFakeCRI()
	cg := &fakeCgroups{pods: map[types.UID]bool{"u": true}, stragglers: true}
	m, err := NewManager(ManagerConfig{Runtime: f, Images: f, Cgroups: cg, PodLogsDir: t.TempDir(), PodsDir: t.TempDir(),
		RemoveCgroupTimeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.removeCgroup(t.Context(), &PodStatus{UID: "u"}); err != nil {
		t.Fatalf("removeCgroup with stragglers = %v, want them killed and the cgroup removed", err)
	}
	if cg.kills != 1 || cg.pods["u"] {
		t.Errorf("kills %d, cgroup left %v; want 1 kill and the cgroup gone", cg.kills, cg.pods["u"])
	}
	cg.busy = 1 << 30 // busy whatever is killed
	cg.pods["v"] = true
	if err := m.removeCgroup(t.Context(), &PodStatus{UID: "v"}); !errors.Is(err, cgroups.ErrCgroupBusy) {
		t.Errorf("removeCgroup of a cgroup busy after the kill = %v, want ErrCgroupBusy", err)
	}
	if cg.kills != 2 {
		t.Errorf("kills %d, want one more (once per removal)", cg.kills)
	}
}

func TestManagerSyncAndKill(t *testing.T) {
	ctx := context.Background()
	m, f, cg := newFakeManager(t)
	cg.busy = 2
	pod := testPod(v1.RestartPolicyAlways, []string{"init1"}, nil, "app")
	pod.Spec.Containers[0].ImagePullPolicy = v1.PullIfNotPresent
	f.images["img:1"] = true

	st, err := m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	r := m.SyncPod(ctx, pod, st, SyncOptions{Container: podconfig.ContainerOptions{HostIPs: []string{"10.0.0.1"}}})
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if r.SandboxID == "" || r.Started["init1"] == "" || r.Started["app"] != "" {
		t.Fatalf("first sync: sandbox %q started %v", r.SandboxID, r.Started)
	}
	if !cg.pods[pod.UID] {
		t.Fatal("pod cgroup not ensured")
	}
	logDir := podconfig.PodLogDir(m.logs, pod.Namespace, pod.Name, string(pod.UID))
	if _, err := os.Stat(filepath.Join(logDir, "init1")); err != nil {
		t.Fatalf("container log dir: %v", err)
	}
	f.exit(r.Started["init1"], 0)

	st, _ = m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	r = m.SyncPod(ctx, pod, st, SyncOptions{})
	if err := r.Err(); err != nil || r.Started["app"] == "" || len(r.Started) != 1 {
		t.Fatalf("second sync: started %v, %v", r.Started, err)
	}
	// A fresh Manager (agent restart) on the same runtime starts nothing.
	m2, err := NewManager(ManagerConfig{Runtime: f, Images: f, Cgroups: cg, PodLogsDir: m.logs, PodsDir: m.pods})
	if err != nil {
		t.Fatal(err)
	}
	st, _ = m2.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if r = m2.SyncPod(ctx, pod, st, SyncOptions{}); len(r.Started) != 0 || !r.Actions.Empty() {
		t.Fatalf("recovery sync: %+v", r.Actions)
	}
	listed, err := m.ListPods(ctx)
	if err != nil || len(listed) != 1 || len(listed[0].Containers) != 2 {
		t.Fatalf("ListPods: %+v, %v", listed, err)
	}

	st, _ = m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	r = m.KillPod(ctx, pod, st, nil)
	if err := r.Err(); err != nil {
		t.Fatalf("KillPod: %v", err)
	}
	if len(f.ctrs) != 0 || len(f.sbs) != 0 || cg.pods[pod.UID] || cg.removes != 3 {
		t.Fatalf("left: %d containers, %d sandboxes, cgroup %v (removes %d)", len(f.ctrs), len(f.sbs), cg.pods[pod.UID], cg.removes)
	}
	for id, got := range f.stopWith {
		if got < 2 {
			t.Errorf("StopContainer %s timeout %d, want at least 2", id, got)
		}
	}
	if _, err := os.Stat(logDir); !os.IsNotExist(err) {
		t.Fatalf("log dir left: %v", err)
	}
}

func TestManagerImagePolicy(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		policy  v1.PullPolicy
		present bool
		pullErr error
		reason  string
		pulled  bool
	}{
		{"never absent", v1.PullNever, false, nil, ReasonErrImageNeverPull, false},
		{"never present", v1.PullNever, true, nil, "", false},
		{"if not present: present", v1.PullIfNotPresent, true, nil, "", false},
		{"if not present: absent", v1.PullIfNotPresent, false, nil, "", true},
		{"always", v1.PullAlways, true, nil, "", true},
		{"pull fails", v1.PullAlways, false, errors.New("registry down"), ReasonErrImagePull, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, f, _ := newFakeManager(t)
			pod := testPod(v1.RestartPolicyAlways, nil, nil, "app")
			pod.Spec.Containers[0].ImagePullPolicy = tc.policy
			f.images["img:1"] = tc.present
			f.pullErr = tc.pullErr
			r := m.SyncPod(ctx, pod, nil, SyncOptions{})
			if got := r.Waiting["app"].Reason; got != tc.reason {
				t.Errorf("waiting %q, want %q (%v)", got, tc.reason, r.Err())
			}
			pulled := f.called("PullImage") > 0
			if pulled != tc.pulled {
				t.Errorf("pulled %v, want %v", pulled, tc.pulled)
			}
			if tc.pullErr != nil {
				// The next attempt is held back; the message repeats the
				// pull's error (kubelet's).
				st, _ := m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
				r := m.SyncPod(ctx, pod, st, SyncOptions{})
				if w := r.Waiting["app"]; w.Reason != ReasonImagePullBackOff || w.Message != `Back-off pulling image "img:1": ErrImagePull: `+tc.pullErr.Error() {
					t.Errorf("second sync waiting %+v", w)
				}
			}
		})
	}
}

func TestGracePeriod(t *testing.T) {
	i := func(v int64) *int64 { return &v }
	pod := testPod(v1.RestartPolicyAlways, nil, nil, "app")
	withSpec := pod.DeepCopy()
	withSpec.Spec.TerminationGracePeriodSeconds = i(10)
	deleting := withSpec.DeepCopy()
	deleting.DeletionGracePeriodSeconds = i(5)
	tests := []struct {
		name     string
		pod      *v1.Pod
		c        *ContainerStatus
		override *int64
		want     time.Duration
		stop     int64
	}{
		{"default", pod, nil, nil, 30 * time.Second, 30},
		{"spec", withSpec, nil, nil, 10 * time.Second, 10},
		{"deletion", deleting, nil, nil, 5 * time.Second, 5},
		{"override", deleting, nil, i(0), 0, 2},
		{"orphan from annotation", nil, &ContainerStatus{TerminationGracePeriod: i(7)}, nil, 7 * time.Second, 7},
		{"orphan deleted gracefully", nil, &ContainerStatus{TerminationGracePeriod: i(7), DeletionGracePeriod: i(3)}, nil, 3 * time.Second, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := GracePeriod(tc.pod, tc.c, tc.override)
			if got != tc.want || StopTimeout(got, nil, false) != tc.stop {
				t.Errorf("grace %v stop %d, want %v %d", got, StopTimeout(got, nil, false), tc.want, tc.stop)
			}
		})
	}
}

func TestStopTimeout(t *testing.T) {
	i := func(v int64) *int64 { return &v }
	for name, tc := range map[string]struct {
		left      time.Duration
		override  *int64
		shortened bool
		want      int64
	}{
		"rounded up":                         {7300 * time.Millisecond, nil, false, 8},
		"pod grace below the minimum":        {1500 * time.Millisecond, nil, false, 2},
		"pod grace used up by the hook":      {-time.Second, nil, false, 2},
		"override as given":                  {30 * time.Second, i(30), false, 30},
		"override 0 kills at once":           {0, i(0), false, 0},
		"override 1 below the minimum":       {time.Second, i(1), false, 1},
		"override left after its hook":       {10 * time.Second, i(30), false, 10},
		"override used up by its hook":       {0, i(30), false, 2},
		"shortened: the time left":           {4200 * time.Millisecond, nil, true, 5},
		"shortened past: the minimum window": {-3 * time.Second, nil, true, 2},
		"shortened override 0: the minimum":  {0, i(0), true, 2},
	} {
		if got := StopTimeout(tc.left, tc.override, tc.shortened); got != tc.want {
			t.Errorf("%s: StopTimeout(%v, %v, %v) = %d, want %d", name, tc.left, tc.override, tc.shortened, got, tc.want)
		}
	}
}

// An https httpGet hook that a plain-HTTP server answers is retried over
// http, as kubelet does, without the Authorization header; a retry that
// works is a LifecycleHTTPFallback warning, not a failure. Hooks send
// kube-lifecycle/<minor> as their User-Agent.
func TestHookHTTPSFallback(t *testing.T) {
	type seen struct{ ua, auth, custom string }
	got := make(chan seen, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.UserAgent(), r.Header.Get("Authorization"), r.Header.Get("X-Hook")}
	}))
	defer srv.Close()
	addr := srv.Listener.Addr().(*net.TCPAddr)
	m, _, _ := newFakeManager(t)
	h := &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Scheme: v1.URISchemeHTTPS, Port: intstr.FromString("web"), Path: "/start",
		HTTPHeaders: []v1.HTTPHeader{{Name: "Authorization", Value: "Bearer x"}, {Name: "X-Hook", Value: "1"}}}}
	c := &v1.Container{Name: "app", Ports: []v1.ContainerPort{{Name: "web", ContainerPort: int32(addr.Port)}}}
	var events []string
	msg, err := m.runHook(t.Context(), nil, "id", c, h, "127.0.0.1", 0, func(reason, msg string) { events = append(events, reason+": "+msg) })
	if err != nil {
		t.Fatalf("runHook = %q, %v", msg, err)
	}
	s := <-got
	if want := httpget.UserAgent("kube-lifecycle", kubeversion.Get()); s.ua != want || s.auth != "" || s.custom != "1" {
		t.Errorf("the http retry sent User-Agent %q Authorization %q X-Hook %q; want %q, none, 1", s.ua, s.auth, s.custom, want)
	}
	want := "LifecycleHTTPFallback: request to HTTPS lifecycle hook " + addr.String() + " got HTTP response, retry with HTTP succeeded"
	if len(events) != 1 || events[0] != want {
		t.Errorf("events %q, want [%q]", events, want)
	}

	// Nothing listening: the hook fails with kubelet's message.
	srv.Close()
	msg, err = m.runHook(t.Context(), nil, "id", c, h, "127.0.0.1", 0, nil)
	if err == nil || !strings.HasPrefix(msg, `HTTP lifecycle hook (/start) for Container "app" in Pod "" failed - error: `) {
		t.Errorf("a hook to a closed port: %q, %v", msg, err)
	}
}

func TestOrphans(t *testing.T) {
	listed := []*PodStatus{{UID: "a"}, {UID: "b"}}
	got := Orphans(listed, map[types.UID]bool{"a": true})
	if len(got) != 1 || got[0].UID != "b" {
		t.Fatalf("Orphans = %v", got)
	}
}

func TestManagerPostStartFailure(t *testing.T) {
	ctx := context.Background()
	m, f, _ := newFakeManager(t)
	f.images["img:1"] = true
	pod := testPod(v1.RestartPolicyAlways, nil, nil, "app")
	pod.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"false"}}}}
	r := m.SyncPod(ctx, pod, nil, SyncOptions{})
	if w := r.Waiting["app"]; w.Reason != ReasonPostStartHookError || !errors.Is(r.Err(), ErrPostStartHook) {
		t.Fatalf("waiting %+v, err %v", w, r.Err())
	}
	if f.called("StopContainer") != 1 {
		t.Fatalf("container not killed: %v", f.calls)
	}
	found := false
	for _, e := range r.Events {
		found = found || e.Reason == EventFailedPostStartHook
	}
	if !found {
		t.Fatalf("no FailedPostStartHook event: %+v", r.Events)
	}
}

// Sidecars outlive the regular containers at termination: app first, then
// the sidecars last-defined first, each with the grace left.
func TestKillPodStopsSidecarsLast(t *testing.T) {
	ctx := context.Background()
	m, f, _ := newFakeManager(t)
	f.images["img:1"] = true
	pod := testPod(v1.RestartPolicyAlways, nil, []string{"s1", "s2"}, "app", "app2")
	grace := int64(30)
	pod.Spec.TerminationGracePeriodSeconds = &grace
	for range 5 {
		st, _ := m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
		if err := m.SyncPod(ctx, pod, st, SyncOptions{}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	st, _ := m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if len(st.Containers) != 4 {
		t.Fatalf("%d containers run, want 4", len(st.Containers))
	}
	if err := m.KillPod(ctx, pod, st, nil).Err(); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(f.stopped, " ")
	if got != "app app2 s2 s1" && got != "app2 app s2 s1" {
		t.Errorf("stop order %q, want the app containers, then s2, then s1", got)
	}
	for id, timeout := range f.stopWith {
		if timeout < 2 || timeout > grace {
			t.Errorf("StopContainer %s timeout %d, want within [2, %d]", id, timeout, grace)
		}
	}
}

func TestTerminationOrder(t *testing.T) {
	pod := testPod(v1.RestartPolicyAlways, []string{"init"}, []string{"log", "proxy"}, "app")
	kills := map[string]KillInfo{"c1": {Name: "app"}, "c2": {Name: "log"}, "c3": {Name: "proxy"}, "c4": {Name: "init"}, "c5": {Name: "gone"}}
	regular, sidecars := TerminationOrder(pod, kills)
	if len(regular) != 3 || regular["c1"].Name != "app" || regular["c4"].Name != "init" || regular["c5"].Name != "gone" {
		t.Errorf("regular = %v", regular)
	}
	if strings.Join(sidecars, " ") != "c3 c2" {
		t.Errorf("sidecars = %v, want proxy (c3) then log (c2)", sidecars)
	}
	if regular, sidecars := TerminationOrder(nil, kills); len(regular) != 5 || len(sidecars) != 0 {
		t.Errorf("orphan: %d regular, sidecars %v", len(regular), sidecars)
	}
}

// The 2 s minimum gives SIGTERM a chance; an explicit override (eviction,
// force) goes to the runtime as it is, 0 included.
func TestStopTimeoutOverride(t *testing.T) {
	for name, tc := range map[string]struct {
		grace    int64
		override *int64
		want     int64
	}{
		"pod grace":            {30, nil, 30},
		"pod grace below min":  {1, nil, 2},
		"override 0":           {30, ptr.To(int64(0)), 0},
		"override 1 below min": {30, ptr.To(int64(1)), 1},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			m, f, _ := newFakeManager(t)
			f.images["img:1"] = true
			pod := testPod(v1.RestartPolicyAlways, nil, nil, "app")
			pod.Spec.TerminationGracePeriodSeconds = &tc.grace
			st, _ := m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
			if err := m.SyncPod(ctx, pod, st, SyncOptions{}).Err(); err != nil {
				t.Fatal(err)
			}
			st, _ = m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
			if err := m.KillPod(ctx, pod, st, tc.override).Err(); err != nil {
				t.Fatal(err)
			}
			for _, got := range f.stopWith {
				if got != tc.want {
					t.Errorf("StopContainer timeout %d, want %d", got, tc.want)
				}
			}
		})
	}
}

// An agent SIGKILLed between CreateContainer and StartContainer leaves a
// container created and never started: the next sync removes it and
// starts a replacement with the same restart count — one container of
// the name, no restart counted.
func TestManagerNeverStartedContainerReplaced(t *testing.T) {
	ctx := context.Background()
	m, f, _ := newFakeManager(t)
	pod := testPod(v1.RestartPolicyAlways, nil, nil, "app")
	pod.Spec.Containers[0].ImagePullPolicy = v1.PullIfNotPresent
	f.images["img:1"] = true
	st, _ := m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	r := m.SyncPod(ctx, pod, st, SyncOptions{Container: podconfig.ContainerOptions{HostIPs: []string{"10.0.0.1"}}})
	if err := r.Err(); err != nil || r.Started["app"] == "" {
		t.Fatalf("first sync: %v, started %v", err, r.Started)
	}
	ghost := r.Started["app"]
	f.mu.Lock()
	f.ctrs[ghost].State, f.ctrs[ghost].StartedAt = runtimeapi.ContainerState_CONTAINER_CREATED, 0
	f.mu.Unlock()

	st, _ = m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	r = m.SyncPod(ctx, pod, st, SyncOptions{})
	if err := r.Err(); err != nil || r.Started["app"] == "" || r.Started["app"] == ghost {
		t.Fatalf("second sync: %v, started %v", err, r.Started)
	}
	st, _ = m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if len(st.Containers) != 1 || st.Containers[0].ID == ghost || st.Containers[0].RestartCount != 0 || st.Containers[0].State != ContainerRunning {
		for _, c := range st.Containers {
			t.Logf("container %s %s restartCount %d", c.ID, c.State, c.RestartCount)
		}
		t.Fatalf("after the sync: %d containers, want the replacement alone, running, restartCount 0", len(st.Containers))
	}
}
