package node

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/kernelet/kernelet/internal/clientset/clientsettest"
)

// harness runs a Controller against client-go's fake clientset with a fake
// clock and inputs the test changes.
type harness struct {
	t        *testing.T
	client   *fake.Clientset
	clock    *clocktesting.FakeClock
	recorder *record.FakeRecorder
	ctl      *Controller
	cancel   context.CancelFunc
	done     chan struct{}

	mu sync.Mutex
	in Inputs
	// unchecked: the runtime was not asked yet (Runtime.LastSync zero).
	unchecked bool
}

func newHarness(t *testing.T, cfg *Config, objects ...runtime.Object) *harness {
	h := &harness{t: t, client: fake.NewClientset(objects...), clock: clocktesting.NewFakeClock(t0),
		recorder: record.NewFakeRecorder(100), in: readyInputs(), done: make(chan struct{})}
	cfg.Client, cfg.Clock, cfg.Recorder = clientsettest.FromClientset(h.client), h.clock, h.recorder
	cfg.Inputs = func(context.Context) Inputs {
		h.mu.Lock()
		defer h.mu.Unlock()
		in := h.in
		in.Runtime.LastSync = h.clock.Now()
		if h.unchecked {
			in.Runtime.LastSync = time.Time{}
		}
		return in
	}
	ctl, err := New(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.ctl = ctl
	return h
}

func (h *harness) start() { h.startWith(context.Background()) }

func (h *harness) startWith(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	h.cancel = cancel
	go func() { defer close(h.done); h.ctl.Run(ctx) }()
	h.t.Cleanup(func() { h.cancel(); <-h.done })
}

func (h *harness) setInputs(f func(*Inputs)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f(&h.in)
}

// eventually polls cond (real time) for up to 5 s.
func (h *harness) eventually(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// count counts the fake client's actions of verb on nodes (subresource
// "" or "status").
func (h *harness) count(verb, subresource string) int {
	n := 0
	for _, a := range h.client.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == "nodes" && a.GetSubresource() == subresource {
			n++
		}
	}
	return n
}

// settle waits for the status computation right after registration.
func (h *harness) settle() {
	h.t.Helper()
	h.eventually("the first status computation", func() bool { return h.count("get", "") >= 1 && h.clock.HasWaiters() })
}

// tick advances the clock by d once the status loop waits on its ticker,
// and waits for the status computation that follows.
func (h *harness) tick(d time.Duration) {
	h.t.Helper()
	h.eventually("the status loop to wait", h.clock.HasWaiters)
	gets := h.count("get", "")
	h.clock.Step(d)
	h.eventually("a status computation", func() bool {
		return h.count("get", "") > gets && h.ctl.Status().LastStatusCheck.Equal(h.clock.Now())
	})
}

func (h *harness) events() []string {
	var out []string
	for {
		select {
		case e := <-h.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func (h *harness) node() *v1.Node {
	n, err := h.client.CoreV1().Nodes().Get(context.Background(), "node-a", metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return n
}

func TestControllerRegisters(t *testing.T) {
	h := newHarness(t, testConfig())
	h.start()
	h.eventually("registration", func() bool { return !h.ctl.Status().Registered.IsZero() })
	n := h.node()
	if n.Labels[v1.LabelHostname] != "host-a" || n.Labels["role"] != "worker" || len(n.Spec.Taints) != 1 {
		t.Errorf("node = %+v", n.ObjectMeta)
	}
	if c := cond(&n.Status, v1.NodeReady); c == nil || c.Status != v1.ConditionTrue {
		t.Errorf("Ready = %+v", c)
	}
	h.eventually("the first status computation", func() bool { return h.count("get", "") > 0 })
	want := []string{
		"Normal Starting Starting kernelet.",
		"Normal NodeHasSufficientMemory Node node-a status is now: NodeHasSufficientMemory",
		"Normal NodeHasNoDiskPressure Node node-a status is now: NodeHasNoDiskPressure",
		"Normal NodeHasSufficientPID Node node-a status is now: NodeHasSufficientPID",
		"Normal NodeReady Node node-a status is now: NodeReady",
	}
	if got := h.events(); !slices.Equal(got, want) {
		t.Errorf("events =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if h.count("patch", "status") != 0 {
		t.Errorf("status patched right after creating the Node with it")
	}
	h.eventually("the lease", func() bool { return !h.ctl.Status().LastLeaseRenew.IsZero() })
	l, err := h.client.CoordinationV1().Leases(LeaseNamespace).Get(context.Background(), "node-a", metav1.GetOptions{})
	if err != nil || *l.Spec.HolderIdentity != "node-a" || *l.Spec.LeaseDurationSeconds != 40 {
		t.Fatalf("lease = %+v, %v", l, err)
	}
}

func TestControllerStatusPatchOnChangeAndReportFrequency(t *testing.T) {
	h := newHarness(t, testConfig())
	h.start()
	h.eventually("registration", func() bool { return !h.ctl.Status().Registered.IsZero() })
	h.settle()
	h.events()

	h.tick(10 * time.Second)
	if got := h.count("patch", "status"); got != 0 {
		t.Fatalf("unchanged status patched %d times", got)
	}

	h.setInputs(func(in *Inputs) { in.MemoryPressure = true })
	h.tick(10 * time.Second)
	if got := h.count("patch", "status"); got != 1 {
		t.Fatalf("changed status patched %d times, want 1", got)
	}
	if c := cond(&h.node().Status, v1.NodeMemoryPressure); c == nil || c.Status != v1.ConditionTrue ||
		!c.LastTransitionTime.Time.Equal(h.clock.Now().Truncate(time.Second)) {
		t.Errorf("MemoryPressure = %+v", c)
	}
	if got := h.events(); !slices.Equal(got, []string{"Normal NodeHasInsufficientMemory Node node-a status is now: NodeHasInsufficientMemory"}) {
		t.Errorf("events = %v", got)
	}

	for range 29 { // 4 min 50 s after the last patch: nothing to write
		h.tick(10 * time.Second)
	}
	if got := h.count("patch", "status"); got != 1 {
		t.Fatalf("patched %d times before the report frequency, want 1", got)
	}
	h.tick(10 * time.Second) // 5 min
	if got := h.count("patch", "status"); got != 2 {
		t.Fatalf("patched %d times after the report frequency, want 2", got)
	}
	c := cond(&h.node().Status, v1.NodeReady)
	if !c.LastHeartbeatTime.Time.Equal(h.clock.Now().Truncate(time.Second)) || c.LastTransitionTime.Time.Equal(c.LastHeartbeatTime.Time) {
		t.Errorf("Ready after the report = %+v", c)
	}
	if st := h.ctl.Status(); !st.LastStatusPatch.Equal(h.clock.Now()) || st.LastError != "" {
		t.Errorf("status = %+v", st)
	}
}

func TestControllerAdopts(t *testing.T) {
	existing := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "uid-1",
			Labels: map[string]string{v1.LabelHostname: "stale", "team": "x"}},
		Spec: v1.NodeSpec{PodCIDR: "10.244.3.0/24", Taints: []v1.Taint{{Key: "admin", Effect: v1.TaintEffectNoSchedule}}},
		Status: v1.NodeStatus{
			Capacity:   v1.ResourceList{"example.com/dongle": resource.MustParse("2")},
			Conditions: withReady(steadyConditions(), v1.ConditionUnknown),
		},
	}
	h := newHarness(t, testConfig(), existing)
	h.start()
	h.eventually("registration", func() bool { return !h.ctl.Status().Registered.IsZero() })
	h.eventually("the status patch", func() bool { return h.count("patch", "status") == 1 })
	n := h.node()
	if n.Labels[v1.LabelHostname] != "host-a" || n.Labels["team"] != "x" || n.Labels["role"] != "" ||
		n.Annotations[AnnotationControllerManagedAttachDetach] != "true" {
		t.Errorf("meta = %+v", n.ObjectMeta)
	}
	if n.Spec.PodCIDR != "10.244.3.0/24" || len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != "admin" {
		t.Errorf("spec = %+v", n.Spec)
	}
	if _, ok := n.Status.Capacity["example.com/dongle"]; !ok {
		t.Errorf("extended resource dropped: %v", n.Status.Capacity)
	}
	if c := cond(&n.Status, v1.NodeReady); c == nil || c.Status != v1.ConditionTrue {
		t.Errorf("Ready = %+v", c)
	}
	h.eventually("the NodeReady event", func() bool {
		return slices.Contains(h.events(), "Normal NodeReady Node node-a status is now: NodeReady")
	})
}

func TestControllerRegisterNodeFalse(t *testing.T) {
	cfg := testConfig()
	cfg.Kubelet.RegisterNode = ptr.To(false)
	h := newHarness(t, cfg)
	h.start()
	h.eventually("a failed lookup", func() bool { return h.ctl.Status().LastError != "" })
	if h.count("create", "") != 0 {
		t.Fatal("created the Node with registerNode false")
	}
	if _, err := h.client.CoreV1().Nodes().Create(context.Background(),
		&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.eventually("the node found", func() bool {
		h.clock.Step(time.Second) // through the back-off
		return !h.ctl.Status().Registered.IsZero()
	})
	h.eventually("the status patch", func() bool { return h.count("patch", "status") >= 1 })
	if n := h.node(); cond(&n.Status, v1.NodeReady) == nil || n.Labels != nil {
		t.Errorf("node = %+v", n)
	}
}

func TestControllerRetriesUntilAPIServerAnswers(t *testing.T) {
	h := newHarness(t, testConfig())
	var mu sync.Mutex
	down := true
	h.client.PrependReactor("*", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		if down {
			return true, nil, apierrors.NewServiceUnavailable("etcd down")
		}
		return false, nil, nil
	})
	var logMu sync.Mutex
	var errorLines, allLines []string
	logger := funcr.New(func(_, args string) {
		logMu.Lock()
		defer logMu.Unlock()
		allLines = append(allLines, args)
		if strings.Contains(args, `"error"=`) && strings.Contains(args, "register node") {
			errorLines = append(errorLines, args)
		}
	}, funcr.Options{Verbosity: 0})
	h.startWith(klog.NewContext(context.Background(), logger))
	h.eventually("several failures", func() bool {
		h.clock.Step(time.Second)
		return h.count("create", "") >= 5
	})
	if st := h.ctl.Status(); !strings.Contains(st.LastError, "etcd down") || st.LastErrorTime.IsZero() {
		t.Errorf("status = %+v", st)
	}
	mu.Lock()
	down = false
	mu.Unlock()
	h.eventually("registration", func() bool {
		h.clock.Step(time.Second)
		return !h.ctl.Status().Registered.IsZero()
	})
	h.eventually("the recovery logged", func() bool {
		logMu.Lock()
		defer logMu.Unlock()
		return slices.ContainsFunc(allLines, func(l string) bool { return strings.Contains(l, "Managed to register node after failures") })
	})
	logMu.Lock()
	defer logMu.Unlock()
	if len(errorLines) != 1 {
		t.Errorf("logged %d errors for one outage, want 1:\n%s", len(errorLines), strings.Join(errorLines, "\n"))
	}
}

func TestControllerReregistersDeletedNode(t *testing.T) {
	h := newHarness(t, testConfig())
	h.start()
	h.eventually("registration", func() bool { return h.count("create", "") == 1 })
	h.settle()
	if err := h.client.CoreV1().Nodes().Delete(context.Background(), "node-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.clock.Step(10 * time.Second)
	h.eventually("a second registration", func() bool { return h.count("create", "") == 2 })
	h.node()
}

func TestNewChecksConfig(t *testing.T) {
	for name, mutate := range map[string]func(*Config){
		"no name":    func(c *Config) { c.NodeName = "" },
		"no client":  func(c *Config) { c.Client = nil },
		"no inputs":  func(c *Config) { c.Inputs = nil },
		"no kubelet": func(c *Config) { c.Kubelet = nil },
		"zero period": func(c *Config) {
			c.Kubelet.NodeStatusUpdateFrequency = metav1.Duration{}
		},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Client = clientsettest.FromClientset(fake.NewClientset())
			cfg.Inputs = func(context.Context) Inputs { return Inputs{} }
			mutate(cfg)
			if _, err := New(*cfg); err == nil {
				t.Error("New accepted it")
			}
		})
	}
}

func TestControllerLease(t *testing.T) {
	cfg := testConfig()
	cfg.Kubelet.NodeLeaseDurationSeconds = 1 // renewed every 250 ms
	h := newHarness(t, cfg, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "uid-1"}})
	h.start()
	leases := h.client.CoordinationV1().Leases(LeaseNamespace)
	owned := func() bool {
		l, err := leases.Get(context.Background(), "node-a", metav1.GetOptions{})
		return err == nil && len(l.OwnerReferences) == 1 && l.OwnerReferences[0].UID == "uid-1" &&
			l.OwnerReferences[0].Kind == "Node" && l.OwnerReferences[0].Name == "node-a"
	}
	h.eventually("a lease owned by the node", owned)
	first := h.ctl.Status().LastLeaseRenew
	h.clock.Step(time.Second)
	h.eventually("a renewal", func() bool { return h.ctl.Status().LastLeaseRenew.After(first) })
	if err := leases.Delete(context.Background(), "node-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.eventually("the lease created again", owned)
}

func TestControllerStatusRetries(t *testing.T) {
	cfg := testConfig()
	var repeated int
	var mu sync.Mutex
	cfg.OnRepeatedHeartbeatFailure = func() { mu.Lock(); repeated++; mu.Unlock() }
	h := newHarness(t, cfg, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}})
	h.client.PrependReactor("patch", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" {
			return true, nil, apierrors.NewInternalError(errors.New("etcd timeout"))
		}
		return false, nil, nil
	})
	h.start()
	h.eventually("five attempts", func() bool { return strings.Contains(h.ctl.Status().LastError, "5 attempts") })
	mu.Lock()
	defer mu.Unlock()
	if n := h.count("patch", "status"); n != 5 || repeated != 4 {
		t.Errorf("%d patches, %d repeated-failure calls; want 5 and 4", n, repeated)
	}
	if gets := h.count("get", ""); gets != 1+5 {
		t.Errorf("%d reads, want one to adopt and one per attempt", gets)
	}
	if st := h.ctl.Status(); !st.LastStatusPatch.IsZero() {
		t.Errorf("status = %+v", st)
	}
}

func TestControllerReadyAsSoonAsItIs(t *testing.T) {
	h := newHarness(t, testConfig())
	notReady := RuntimeCondition{Type: RuntimeReadyCondition, Reason: "Starting", Message: "loading plugins"}
	h.setInputs(func(in *Inputs) {
		in.Runtime.Conditions = []RuntimeCondition{notReady, {Type: NetworkReadyCondition, Status: true}}
	})
	h.start()
	h.eventually("registration", func() bool { return !h.ctl.Status().Registered.IsZero() })
	h.settle()
	if c := cond(&h.node().Status, v1.NodeReady); c == nil || c.Status != v1.ConditionFalse ||
		c.Message != "container runtime not ready: RuntimeReady=false reason:Starting message:loading plugins" {
		t.Fatalf("Ready = %+v", c)
	}
	for range 5 { // not ready yet: checked every 100 ms, nothing written
		h.clock.Step(fastStatusInterval)
		time.Sleep(5 * time.Millisecond)
	}
	if n := h.count("patch", "status"); n != 0 {
		t.Fatalf("%d status patches while nothing changed", n)
	}
	h.setInputs(func(in *Inputs) { in.Runtime.Conditions = readyRuntime(t0).Conditions })
	h.eventually("Ready written within 100 ms", func() bool {
		if h.count("patch", "status") == 0 {
			h.clock.Step(fastStatusInterval)
			return false
		}
		return true
	})
	if d := h.clock.Since(t0); d >= 10*time.Second {
		t.Errorf("Ready after %v of fake time, want before the first period", d)
	}
	if c := cond(&h.node().Status, v1.NodeReady); c == nil || c.Status != v1.ConditionTrue {
		t.Errorf("Ready = %+v", c)
	}
	h.eventually("the NodeReady event", func() bool {
		return slices.Contains(h.events(), "Normal NodeReady Node node-a status is now: NodeReady")
	})
}

// After a restart the Node is still Ready from the previous agent: the
// fast status checks go on until a status this agent computed says Ready,
// so Ready is written within a fast interval of the runtime turning
// ready, not a period later (before, the adopted Node's Ready ended them
// and the Node stayed NotReady for nodeStatusUpdateFrequency).
func TestControllerReadyPromptlyAfterRestart(t *testing.T) {
	existing := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "uid-1"},
		Status: v1.NodeStatus{Capacity: fullCapacity(), Conditions: steadyConditions()}}
	h := newHarness(t, testConfig(), existing)
	notReady := RuntimeCondition{Type: RuntimeReadyCondition, Reason: "Starting", Message: "loading plugins"}
	h.setInputs(func(in *Inputs) {
		in.Runtime.Conditions = []RuntimeCondition{notReady, {Type: NetworkReadyCondition, Status: true}}
	})
	h.start()
	h.eventually("the NotReady status", func() bool {
		c := cond(&h.node().Status, v1.NodeReady)
		return c != nil && c.Status == v1.ConditionFalse
	})
	h.setInputs(func(in *Inputs) { in.Runtime.Conditions = readyRuntime(t0).Conditions })
	h.eventually("Ready written", func() bool {
		if c := cond(&h.node().Status, v1.NodeReady); c == nil || c.Status != v1.ConditionTrue {
			if h.clock.HasWaiters() {
				h.clock.Step(fastStatusInterval)
			}
			return false
		}
		return true
	})
	if d := h.clock.Since(t0); d >= time.Second {
		t.Errorf("Ready after %v of fake time, want within a second of the runtime turning ready", d)
	}
}

// Before its first status the controller waits (a bounded while) for the
// runtime to have been asked, as kubelet checks the runtime once before
// its first status update: a Node Ready from the previous agent is not
// turned NotReady ("container runtime status check may not have
// completed yet") only because the runtime was not asked yet.
func TestControllerFirstStatusAwaitsRuntimeCheck(t *testing.T) {
	existing := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "uid-1"},
		Status: v1.NodeStatus{Capacity: fullCapacity(), Conditions: steadyConditions()}}
	h := newHarness(t, testConfig(), existing)
	h.unchecked = true
	h.start()
	h.eventually("registration", func() bool { return !h.ctl.Status().Registered.IsZero() })
	for range 3 {
		h.eventually("the wait", h.clock.HasWaiters)
		h.clock.Step(fastStatusInterval)
	}
	if n := h.count("patch", "status"); n != 0 {
		t.Fatalf("%d status patches before the runtime was asked", n)
	}
	h.setInputs(func(*Inputs) { h.unchecked = false })
	h.eventually("the first status computation", func() bool {
		if h.ctl.Status().LastStatusCheck.IsZero() {
			if h.clock.HasWaiters() {
				h.clock.Step(fastStatusInterval)
			}
			return false
		}
		return true
	})
	if c := cond(&h.node().Status, v1.NodeReady); c == nil || c.Status != v1.ConditionTrue {
		t.Errorf("Ready = %+v, want still True", c)
	}
	if n := h.count("patch", "status"); n != 1 {
		t.Errorf("%d status patches, want the first status written once", n)
	}

	// A runtime that never answers: the first status comes after
	// runtimeCheckWait and says so.
	h2 := newHarness(t, testConfig(), existing.DeepCopy())
	h2.unchecked = true
	h2.start()
	h2.eventually("the first status computation", func() bool {
		if h2.count("patch", "status") == 0 {
			if h2.clock.HasWaiters() {
				h2.clock.Step(fastStatusInterval)
			}
			return false
		}
		return true
	})
	if d := h2.clock.Since(t0); d < runtimeCheckWait || d > runtimeCheckWait+time.Second {
		t.Errorf("first status after %v of fake time, want after runtimeCheckWait %v", d, runtimeCheckWait)
	}
	if c := cond(&h2.node().Status, v1.NodeReady); c == nil || c.Status != v1.ConditionFalse ||
		!strings.Contains(c.Message, "container runtime status check may not have completed yet") {
		t.Errorf("Ready = %+v", c)
	}
}

func TestFastStatusUpdates(t *testing.T) {
	for _, tc := range []struct {
		ready bool
		since time.Duration
		want  bool
	}{
		{false, 0, true},
		{false, fastStatusFor - time.Millisecond, true},
		{false, fastStatusFor, false},
		{true, time.Second, false},
	} {
		if got := FastStatusUpdates(tc.ready, tc.since); got != tc.want {
			t.Errorf("FastStatusUpdates(%v, %v) = %v, want %v", tc.ready, tc.since, got, tc.want)
		}
	}
}
