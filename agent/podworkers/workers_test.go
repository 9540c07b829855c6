package podworkers

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/internal/grace"
)

type call struct {
	op  string
	uid types.UID
}

type fakeSyncer struct {
	mu       sync.Mutex
	calls    []call
	syncErr  error
	block    chan struct{} // SyncPod waits on it when set
	inSync   chan struct{}
	killed   chan types.UID
	cleaned  chan types.UID
	running  int
	maxConc  int
	syncDone chan struct{}
	// phase, retry: what SyncPod reports (default Running, 0).
	phase   v1.PodPhase
	retry   time.Duration
	stopped chan types.UID
	// killBlock, when set, holds KillPod until it is closed.
	killBlock chan struct{}
	// final is what KillPod returns as the pod's final status; kills
	// records what each KillPod was given.
	final *v1.PodStatus
	kills []killArgs
}

type killArgs struct {
	grace    *int64
	deadline *grace.Deadline
}

func newFake() *fakeSyncer {
	return &fakeSyncer{killed: make(chan types.UID, 10), cleaned: make(chan types.UID, 10), syncDone: make(chan struct{}, 100), inSync: make(chan struct{}, 100),
		stopped: make(chan types.UID, 10)}
}

func (f *fakeSyncer) record(op string, uid types.UID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call{op, uid})
}

func (f *fakeSyncer) SyncPod(ctx context.Context, pod *v1.Pod) (SyncResult, error) {
	f.record("sync", pod.UID)
	f.mu.Lock()
	f.running++
	f.maxConc = max(f.maxConc, f.running)
	block, err, phase, retry := f.block, f.syncErr, f.phase, f.retry
	f.mu.Unlock()
	if phase == "" {
		phase = v1.PodRunning
	}
	f.inSync <- struct{}{}
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
		}
	}
	f.mu.Lock()
	f.running--
	f.mu.Unlock()
	f.syncDone <- struct{}{}
	return SyncResult{Status: v1.PodStatus{Phase: phase}, RetryAfter: retry}, err
}

func (f *fakeSyncer) StopPod(_ context.Context, pod *v1.Pod) (v1.PodStatus, error) {
	f.record("stop", pod.UID)
	f.stopped <- pod.UID
	f.mu.Lock()
	defer f.mu.Unlock()
	return v1.PodStatus{Phase: f.phase}, nil
}

func (f *fakeSyncer) KillPod(_ context.Context, pod *v1.Pod, gp *int64, d *grace.Deadline) (*v1.PodStatus, error) {
	f.record("kill", pod.UID)
	f.mu.Lock()
	f.kills = append(f.kills, killArgs{gp, d})
	block, final := f.killBlock, f.final
	f.mu.Unlock()
	f.killed <- pod.UID
	if block != nil {
		<-block
	}
	return final, nil
}

func (f *fakeSyncer) lastKill() killArgs {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.kills[len(f.kills)-1]
}

func (f *fakeSyncer) CleanupPod(_ context.Context, pod *v1.Pod) error {
	f.record("cleanup", pod.UID)
	f.cleaned <- pod.UID
	return nil
}

func (f *fakeSyncer) count(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if c.op == op {
			n++
		}
	}
	return n
}

func testPod(name string, cpu, mem string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "img"}}}}
	if cpu != "" || mem != "" {
		p.Spec.Containers[0].Resources.Requests = v1.ResourceList{}
		if cpu != "" {
			p.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			p.Spec.Containers[0].Resources.Requests[v1.ResourceMemory] = resource.MustParse(mem)
		}
	}
	return p
}

func wait[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatal("timed out")
	}
	var zero T
	return zero
}

func TestCoalesceAndTerminate(t *testing.T) {
	f := newFake()
	f.block = make(chan struct{})
	terminated := make(chan *v1.Pod, 1)
	ws, err := New(Config{Syncer: f, OnTerminated: func(p *v1.Pod) { terminated <- p }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	p := testPod("a", "", "")
	ws.Update(ctx, Update{Type: SyncPod, Pod: p})
	wait(t, f.inSync)
	// Three updates while the first sync runs: one more sync after it.
	for range 3 {
		ws.Update(ctx, Update{Type: SyncPod, Pod: p})
	}
	ws.Update(ctx, Update{Type: TerminatePod, Pod: p}) // cancels the running sync
	if uid := wait(t, f.killed); uid != p.UID {
		t.Fatalf("killed %s", uid)
	}
	wait(t, f.cleaned)
	wait(t, terminated)
	if n := f.count("sync"); n != 1 {
		t.Errorf("syncs = %d, want 1 (the coalesced syncs were replaced by the terminate)", n)
	}
	if ws.Known(p.UID) {
		t.Error("pod still known after termination")
	}
}

func TestCoalescedSync(t *testing.T) {
	f := newFake()
	block := make(chan struct{})
	f.block = block
	ws, _ := New(Config{Syncer: f})
	ctx, cancel := context.WithCancel(t.Context())
	p := testPod("a", "", "")
	ws.Update(ctx, Update{Type: SyncPod, Pod: p})
	wait(t, f.inSync)
	for range 5 {
		ws.Update(ctx, Update{Type: SyncPod, Pod: p})
	}
	f.mu.Lock()
	f.block = nil
	f.mu.Unlock()
	close(block)
	wait(t, f.syncDone)
	wait(t, f.syncDone)
	time.Sleep(50 * time.Millisecond)
	if n := f.count("sync"); n != 2 {
		t.Errorf("syncs = %d, want 2", n)
	}
	cancel()
	ws.Wait()
	if f.count("kill") != 0 {
		t.Error("stopping the workers killed the pod")
	}
}

func TestBackoffOnError(t *testing.T) {
	f := newFake()
	f.syncErr = errors.New("boom")
	ws, _ := New(Config{Syncer: f, BackoffInitial: 10 * time.Millisecond, BackoffMax: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(t.Context())
	defer func() { cancel(); ws.Wait() }()
	ws.Update(ctx, Update{Type: SyncPod, Pod: testPod("a", "", "")})
	for range 3 {
		wait(t, f.syncDone)
	}
	recs := ws.Pods()
	if len(recs) != 1 || recs[0].LastErr == nil {
		t.Fatalf("records = %+v", recs)
	}
}

func TestAdmission(t *testing.T) {
	f := newFake()
	ws, _ := New(Config{Syncer: f, Admit: []AdmitHandler{
		ResourceFit(Allocatable{MilliCPU: 1000, MemoryBytes: 1 << 30, Pods: 3}),
		Validate(func(p *v1.Pod) error {
			if p.Name == "bad" {
				return errors.New("unsupported")
			}
			return nil
		}),
	}})
	ctx, cancel := context.WithCancel(t.Context())
	defer func() { cancel(); ws.Wait() }()
	ws.Update(ctx, Update{Type: SyncPod, Pod: testPod("a", "600m", "")})
	ws.Update(ctx, Update{Type: SyncPod, Pod: testPod("b", "600m", "")})
	ws.Update(ctx, Update{Type: SyncPod, Pod: testPod("c", "", "2Gi")})
	ws.Update(ctx, Update{Type: SyncPod, Pod: testPod("bad", "", "")})
	ws.Update(ctx, Update{Type: SyncPod, Pod: testPod("d", "", "")})
	ws.Update(ctx, Update{Type: SyncPod, Pod: testPod("e", "", "")})
	want := map[string]struct{ reason, msg string }{
		"a":   {"", ""},
		"b":   {ReasonOutOfCPU, "Node didn't have enough resource: cpu, requested: 600, used: 600, capacity: 1000"},
		"c":   {ReasonOutOfMemory, "Node didn't have enough resource: memory, requested: 2147483648, used: 0, capacity: 1073741824"},
		"bad": {ReasonUnexpectedAdmit, "unsupported"},
		"d":   {"", ""},
		"e":   {"", ""},
	}
	got := map[string]PodRecord{}
	for _, r := range ws.Pods() {
		got[r.Pod.Name] = r
	}
	for name, w := range want {
		r := got[name]
		if w.reason == "" {
			if r.Status.Phase == v1.PodFailed {
				t.Errorf("%s rejected: %s", name, r.Status.Message)
			}
			continue
		}
		if r.Status.Phase != v1.PodFailed || r.Status.Reason != w.reason || r.Status.Message != w.msg {
			t.Errorf("%s: %s %s %q, want Failed %s %q", name, r.Status.Phase, r.Status.Reason, r.Status.Message, w.reason, w.msg)
		}
	}
	if got := podNamesOf(ws.Admitted()); !slices.Equal(got, []string{"a", "d", "e"}) {
		t.Errorf("Admitted = %v, want the pods admitted, not the rejected ones", got)
	}
	// A fourth running pod exceeds maxPods 3.
	ws.Update(ctx, Update{Type: SyncPod, Pod: testPod("f", "", "")})
	for _, r := range ws.Pods() {
		if r.Pod.Name == "f" && (r.Status.Reason != ReasonOutOfPods ||
			r.Status.Message != "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3") {
			t.Errorf("f: %s %q", r.Status.Reason, r.Status.Message)
		}
	}
}

func TestKillKeepsFailedRecord(t *testing.T) {
	f := newFake()
	ws, _ := New(Config{Syncer: f})
	ctx, cancel := context.WithCancel(t.Context())
	defer func() { cancel(); ws.Wait() }()
	p := testPod("a", "", "")
	ws.Update(ctx, Update{Type: SyncPod, Pod: p})
	wait(t, f.syncDone)
	ws.Update(ctx, Update{Type: KillPod, Pod: p, Reason: "Evicted", Message: "low on memory"})
	wait(t, f.cleaned)
	time.Sleep(20 * time.Millisecond)
	recs := ws.Pods()
	if len(recs) != 1 || recs[0].Status.Phase != v1.PodFailed || recs[0].Status.Reason != "Evicted" {
		t.Fatalf("records = %+v", recs)
	}
	ws.Update(ctx, Update{Type: SyncPod, Pod: p})
	if f.count("sync") != 1 {
		t.Error("a killed pod was synced again")
	}
	ws.Update(ctx, Update{Type: TerminatePod, Pod: p})
	if ws.Known(p.UID) {
		t.Error("killed pod still known after its source dropped it")
	}
}

// A back-off that expires before the resync brings the next sync forward.
func TestRetryAfterBringsTheNextSyncForward(t *testing.T) {
	f := newFake()
	f.retry = 20 * time.Millisecond
	ws, ctx := startWorkers(t, Config{Syncer: f, SyncFrequency: time.Hour})
	ws.Update(ctx, Update{Type: SyncPod, Pod: testPod("a", "", "")})
	wait(t, f.syncDone)
	wait(t, f.syncDone) // not an hour later
}

// A pod that finished on its own is stopped once, syncs no more, frees
// its capacity, and is removed when its source drops it.
func TestFinishedPodIsStopped(t *testing.T) {
	f := newFake()
	f.phase = v1.PodSucceeded
	terminated := make(chan *v1.Pod, 1)
	ws, err := New(Config{Syncer: f, SyncFrequency: 10 * time.Millisecond, OnTerminated: func(p *v1.Pod) { terminated <- p },
		Admit: []AdmitHandler{ResourceFit(Allocatable{Pods: 1})}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); ws.Wait() }()
	a := testPod("a", "", "")
	ws.Update(ctx, Update{Type: SyncPod, Pod: a})
	if uid := wait(t, f.stopped); uid != a.UID {
		t.Fatalf("stopped %s", uid)
	}
	waitFor(t, func() bool { return ws.Pods()[0].Finished })
	ws.Wake(a.UID)
	ws.Update(ctx, Update{Type: SyncPod, Pod: a})
	time.Sleep(100 * time.Millisecond) // several resync periods
	if n := f.count("sync"); n != 1 {
		t.Errorf("%d syncs of a finished pod, want 1", n)
	}
	if rec := ws.Pods()[0]; rec.Status.Phase != v1.PodSucceeded {
		t.Errorf("finished pod status %+v", rec.Status)
	}
	f.mu.Lock()
	f.phase = v1.PodRunning
	f.mu.Unlock()
	b := testPod("b", "", "")
	ws.Update(ctx, Update{Type: SyncPod, Pod: b}) // maxPods 1: the finished pod does not count
	waitFor(t, func() bool { return f.count("sync") == 2 })
	ws.Update(ctx, Update{Type: TerminatePod, Pod: a})
	if uid := wait(t, f.killed); uid != a.UID {
		t.Fatalf("killed %s", uid)
	}
	wait(t, f.cleaned)
	if p := wait(t, terminated); p.UID != a.UID {
		t.Fatalf("terminated %s", p.UID)
	}
}

// A pod wanted again (same UID) while it terminates starts afresh once
// the termination is over, instead of being lost.
func TestReAddedWhileTerminatingRestarts(t *testing.T) {
	f := newFake()
	f.killBlock = make(chan struct{})
	ws, ctx := startWorkers(t, Config{Syncer: f, SyncFrequency: time.Hour})
	a := testPod("a", "", "")
	ws.Update(ctx, Update{Type: SyncPod, Pod: a})
	wait(t, f.syncDone)
	ws.Update(ctx, Update{Type: TerminatePod, Pod: a})
	wait(t, f.killed)
	ws.Update(ctx, Update{Type: SyncPod, Pod: a})
	close(f.killBlock)
	wait(t, f.cleaned)
	wait(t, f.syncDone) // the fresh worker's first sync
	if !ws.Known(a.UID) {
		t.Fatal("the re-added pod is not known")
	}
}

// A pod with the name of a pod that still terminates (an edited static
// manifest: new UID) waits for it, shown as Pending, then starts.
func TestSameNameWaitsForTheOldPod(t *testing.T) {
	f := newFake()
	f.killBlock = make(chan struct{})
	ws, ctx := startWorkers(t, Config{Syncer: f, SyncFrequency: time.Hour})
	old := testPod("web", "", "")
	edited := testPod("web", "", "")
	edited.UID = "uid-web-2"
	ws.Update(ctx, Update{Type: SyncPod, Pod: old})
	wait(t, f.syncDone)
	ws.Update(ctx, Update{Type: TerminatePod, Pod: old})
	wait(t, f.killed)
	ws.Update(ctx, Update{Type: SyncPod, Pod: edited})
	time.Sleep(50 * time.Millisecond)
	if n := f.count("sync"); n != 1 {
		t.Fatalf("the new pod synced while the old one terminates (%d syncs)", n)
	}
	var pending bool
	for _, r := range ws.Pods() {
		pending = pending || r.Pod.UID == edited.UID && r.Status.Phase == v1.PodPending
	}
	if !pending {
		t.Errorf("the waiting pod is not listed as Pending: %+v", ws.Pods())
	}
	if got := ws.Admitted(); len(got) != 1 || got[0].UID != edited.UID {
		t.Errorf("Admitted while the old pod terminates = %v, want the waiting pod alone (as Pods' Pending record)", podNamesOf(got))
	}
	close(f.killBlock)
	wait(t, f.cleaned)
	wait(t, f.syncDone)
	if !ws.Known(edited.UID) || ws.Known(old.UID) {
		t.Errorf("known: edited %v, old %v", ws.Known(edited.UID), ws.Known(old.UID))
	}
}

func TestWithTransitionTimes(t *testing.T) {
	t1, t2 := metav1.NewTime(time.Unix(100, 0)), metav1.NewTime(time.Unix(200, 0))
	prev := v1.PodStatus{Conditions: []v1.PodCondition{
		{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: t1},
		{Type: v1.PodInitialized, Status: v1.ConditionFalse, LastTransitionTime: t1}}}
	next := v1.PodStatus{Conditions: []v1.PodCondition{
		{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: t2},
		{Type: v1.PodInitialized, Status: v1.ConditionTrue, LastTransitionTime: t2},
		{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: t2}}}
	got := withTransitionTimes(prev, next)
	want := []metav1.Time{t1, t2, t2}
	for i, c := range got.Conditions {
		if !c.LastTransitionTime.Equal(&want[i]) {
			t.Errorf("%s: %v, want %v", c.Type, c.LastTransitionTime, want[i])
		}
	}
	if !next.Conditions[0].LastTransitionTime.Equal(&t2) {
		t.Error("next was modified")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// startWorkers runs workers with cfg until the test ends.
func startWorkers(t *testing.T, cfg Config) (*Workers, context.Context) {
	t.Helper()
	ws, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); ws.Wait() })
	return ws, ctx
}

// A kill's Status function shapes the Failed status, reported as the kill
// starts (before KillPod runs) and again when it is done.
func TestKillStatusFunc(t *testing.T) {
	f := newFake()
	f.killBlock = make(chan struct{})
	type seen struct {
		st     v1.PodStatus
		killed int
	}
	statuses := make(chan seen, 10)
	ws, _ := New(Config{Syncer: f, OnStatus: func(_ *v1.Pod, st v1.PodStatus) {
		statuses <- seen{st: st, killed: f.count("kill")}
	}})
	ctx, cancel := context.WithCancel(t.Context())
	defer func() { cancel(); ws.Wait() }()
	p := testPod("a", "", "")
	ws.Update(ctx, Update{Type: SyncPod, Pod: p})
	wait(t, f.syncDone)
	wait(t, statuses) // the sync's status
	withCond := func(st v1.PodStatus) v1.PodStatus {
		st.Conditions = append(st.Conditions, v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue})
		return st
	}
	ws.Update(ctx, Update{Type: KillPod, Pod: p, Reason: "Evicted", Message: "m", Status: withCond})
	first := wait(t, statuses)
	if first.killed != 0 || first.st.Phase != v1.PodFailed || first.st.Reason != "Evicted" || len(first.st.Conditions) != 1 {
		t.Fatalf("status as the kill starts: %+v (kills so far %d)", first.st, first.killed)
	}
	close(f.killBlock)
	last := wait(t, statuses)
	if last.st.Phase != v1.PodFailed || len(last.st.Conditions) != 1 || last.st.Conditions[0].Type != v1.DisruptionTarget {
		t.Fatalf("final status: %+v", last.st)
	}
}

// A status-only change of the pod in its source (the API server echoing a
// status write) replaces the worker's pod without a sync, as kubelet; a
// change of a readiness gate's condition syncs.
func TestReconcileSyncsOnlyForReadinessGates(t *testing.T) {
	f := newFake()
	ws, _ := New(Config{Syncer: f})
	ctx := t.Context()
	p := testPod("a", "", "")
	p.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "example.com/gate"}}
	ws.Update(ctx, Update{Type: SyncPod, Pod: p})
	wait(t, f.inSync)
	wait(t, f.syncDone)

	echoed := p.DeepCopy()
	echoed.Status.Phase = v1.PodRunning
	echoed.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}
	ws.Reconcile(ctx, echoed)
	select {
	case <-f.inSync:
		t.Fatal("a status-only reconcile synced the pod")
	case <-time.After(200 * time.Millisecond):
	}
	var got *v1.Pod
	for _, r := range ws.Pods() {
		if r.Pod.UID == p.UID {
			got = r.Pod
		}
	}
	if got != echoed {
		t.Errorf("the worker's pod object was not replaced by the reconciled one")
	}

	gated := echoed.DeepCopy()
	gated.Status.Conditions = append(gated.Status.Conditions, v1.PodCondition{Type: "example.com/gate", Status: v1.ConditionTrue})
	ws.Reconcile(ctx, gated)
	wait(t, f.inSync)
	if n := f.count("sync"); n != 2 {
		t.Errorf("syncs = %d, want 2 (the first, then the readiness gate's change)", n)
	}
}

// A pod its worker terminated ignores its source's later terminates (the
// API server's grace-0 deletion, its removal): nothing is killed again
// and no worker starts, until the source wants it again (it starts
// afresh). The removal is the source's last word of the pod: after it a
// terminate is of a pod deleted before it ran here. A pod whose removal
// reached its worker is not remembered at all.
func TestTerminatedPodIsNotKilledAgain(t *testing.T) {
	f := newFake()
	ws, ctx := startWorkers(t, Config{Syncer: f, SyncFrequency: time.Hour})
	a := testPod("a", "", "")
	terminate := func(p *v1.Pod, removed bool) {
		ws.Update(ctx, Update{Type: TerminatePod, Pod: p, GracePeriod: p.DeletionGracePeriodSeconds, Removed: removed})
	}
	ws.Update(ctx, Update{Type: SyncPod, Pod: a})
	wait(t, f.syncDone)
	terminate(deleted(a, 30), false)
	wait(t, f.killed)
	wait(t, f.cleaned)
	waitFor(t, func() bool { return !ws.Known(a.UID) })
	// A kill now would block: a worker started for it would stay known.
	f.mu.Lock()
	f.killBlock = make(chan struct{})
	f.mu.Unlock()
	final := deleted(a, 0)
	terminate(final, false)
	terminate(final, true) // the removal
	if ws.Known(a.UID) || f.count("kill") != 1 {
		t.Fatalf("known %v, kills %d: the pod terminated already was killed again", ws.Known(a.UID), f.count("kill"))
	}
	ws.mu.Lock()
	left := len(ws.gone)
	ws.mu.Unlock()
	if left != 0 {
		t.Errorf("%d pods still remembered as gone after their removal", left)
	}
	terminate(final, false)
	if !ws.Known(a.UID) {
		t.Fatal("no worker for the terminate of a pod whose removal came before")
	}
	close(f.killBlock)
	wait(t, f.killed)
	wait(t, f.cleaned)
	waitFor(t, func() bool { return !ws.Known(a.UID) })

	// Removed while its worker ran: nothing is remembered.
	b := testPod("b", "", "")
	ws.Update(ctx, Update{Type: SyncPod, Pod: b})
	wait(t, f.syncDone)
	terminate(b, true)
	wait(t, f.killed)
	wait(t, f.cleaned)
	waitFor(t, func() bool { return !ws.Known(b.UID) })
	ws.mu.Lock()
	kept := ws.gone[b.UID]
	ws.mu.Unlock()
	if kept {
		t.Error("a pod removed while it ran is remembered as gone")
	}
}

// A pod its worker terminated and that is wanted again (same UID) starts
// afresh.
func TestTerminatedPodWantedAgainStarts(t *testing.T) {
	f := newFake()
	ws, ctx := startWorkers(t, Config{Syncer: f, SyncFrequency: time.Hour})
	a := testPod("a", "", "")
	for range 2 {
		ws.Update(ctx, Update{Type: SyncPod, Pod: a})
		wait(t, f.syncDone)
		if !ws.Known(a.UID) {
			t.Fatal("the pod has no worker")
		}
		ws.Update(ctx, Update{Type: TerminatePod, Pod: a})
		wait(t, f.cleaned)
		waitFor(t, func() bool { return !ws.Known(a.UID) })
	}
	if n := f.count("sync"); n != 2 {
		t.Errorf("syncs = %d, want 2", n)
	}
}

func podNamesOf(pods []*v1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}
