package allocation

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kernelet/kernelet/agent/qos"
)

var q = resource.MustParse

func testPod(uid string, cpuReq, memLimit string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "ns", UID: types.UID(uid), Generation: 1},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: q(cpuReq)},
			Limits:   v1.ResourceList{v1.ResourceMemory: q(memLimit)},
		}}}},
	}
}

func TestApplyAndDiffers(t *testing.T) {
	pod := testPod("a", "100m", "64Mi")
	r := Of(pod)
	if out, changed := Apply(pod, r); changed || out != pod {
		t.Fatalf("Apply of the pod's own resources changed it")
	}
	resized := pod.DeepCopy()
	resized.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = q("200m")
	if !Differs(resized, r) {
		t.Fatal("a changed cpu request is not a resize")
	}
	out, changed := Apply(resized, r)
	if !changed || out == resized || out.Spec.Containers[0].Resources.Requests.Cpu().MilliValue() != 100 {
		t.Fatalf("Apply: changed %v, cpu %v: want a copy at 100m", changed, out.Spec.Containers[0].Resources.Requests.Cpu())
	}
	if resized.Spec.Containers[0].Resources.Requests.Cpu().MilliValue() != 200 {
		t.Fatal("Apply modified its argument")
	}
	// 0.1 and 100m are the same quantity: not a resize.
	same := pod.DeepCopy()
	same.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = q("0.1")
	if Differs(same, r) {
		t.Error("100m vs 0.1 counted as a resize")
	}
}

func TestStoreCheckpoint(t *testing.T) {
	path := filepath.Join(t.TempDir(), AllocatedStateFile)
	s, err := OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	pod := testPod("a", "100m", "64Mi")
	if err := s.Set(pod.UID, Of(pod)); err != nil {
		t.Fatal(err)
	}
	if err := s.SetContainer("b", "x", v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: q("1")}}); err != nil {
		t.Fatal(err)
	}
	if _, found := s.PodLevel("b"); found {
		t.Fatal("pod-level record of a pod without one")
	}
	plr := &v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: q("128Mi")}}
	if err := s.SetPodLevel("b", plr); err != nil {
		t.Fatal(err)
	}
	again, err := OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	if r, found := again.PodLevel("b"); !found || r.Limits.Memory().Value() != 128<<20 {
		t.Fatalf("reloaded pod-level record %+v %v", r, found)
	}
	if c, ok := again.Container("b", "x"); !ok || c.Limits.Cpu().MilliValue() != 1000 {
		t.Fatalf("SetPodLevel lost the container record: %v %v", c, ok)
	}
	got, ok := again.Get(pod.UID)
	if !ok || !Equal(got, Of(pod)) {
		t.Fatalf("reloaded %+v, want %+v", got, Of(pod))
	}
	if c, ok := again.Container("b", "x"); !ok || c.Limits.Cpu().MilliValue() != 1000 {
		t.Fatalf("container record %v %v", c, ok)
	}
	if err := again.Keep(func(uid types.UID) bool { return uid == "b" }); err != nil {
		t.Fatal(err)
	}
	if _, ok := again.Get(pod.UID); ok {
		t.Error("Keep left a pod it was told to drop")
	}
	// A changed byte fails the checksum.
	b, _ := os.ReadFile(path)
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), `"1"`, `"2"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenStore(path); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("edited checkpoint: %v, want a checksum error", err)
	}
}

func TestConditions(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	c := NewConditions(clk)
	if !c.SetPending("a", "OutOfcpu", "no room", 2) {
		t.Fatal("a new pending condition is a change")
	}
	p := c.Pending("a")
	if p.Reason != v1.PodReasonDeferred || p.ObservedGeneration != 2 || p.Message != "no room" {
		t.Fatalf("pending %+v: want Deferred at generation 2", p)
	}
	clk.Step(time.Second)
	if c.SetPending("a", "OutOfmemory", "still no room", 2) {
		t.Error("same reason and generation reported as a change")
	}
	if got := c.Pending("a").LastTransitionTime.Time; !got.Equal(time.Unix(1000, 0)) {
		t.Errorf("transition time moved to %v without a reason change", got)
	}
	if !c.SetPending("a", v1.PodReasonInfeasible, "never", 2) || c.Pending("a").Reason != v1.PodReasonInfeasible {
		t.Error("Infeasible did not replace Deferred")
	}
	gen, changed := c.SetInProgress("a", "", "", 3)
	if !changed || gen != 3 {
		t.Fatalf("in progress: gen %d changed %v", gen, changed)
	}
	if gen, _ := c.SetInProgress("a", v1.PodReasonError, "boom", 4); gen != 3 {
		t.Errorf("an existing in-progress condition moved to generation %d", gen)
	}
	if _, changed := c.SetInProgress("a", "", "", 5); changed {
		t.Error("re-setting without a reason changed the condition")
	}
	conds := c.List("a")
	if len(conds) != 2 || conds[1].Reason != v1.PodReasonError || conds[1].Message != "boom" {
		t.Fatalf("conditions %+v: want the error kept", conds)
	}
	if gen, cleared := c.ClearInProgress("a"); !cleared || gen != 3 {
		t.Errorf("clear: gen %d cleared %v", gen, cleared)
	}
	c.ClearPending("a")
	if len(c.List("a")) != 0 {
		t.Error("conditions left after clearing")
	}
}

func TestSortPending(t *testing.T) {
	prio := func(p *v1.Pod, n int32) *v1.Pod { p.Spec.Priority = &n; return p }
	guaranteed := testPod("g", "100m", "64Mi")
	guaranteed.Spec.Containers[0].Resources = v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: q("100m"), v1.ResourceMemory: q("64Mi")},
		Limits:   v1.ResourceList{v1.ResourceCPU: q("100m"), v1.ResourceMemory: q("64Mi")},
	}
	t0 := time.Unix(1000, 0)
	ps := []Pending{
		{Pod: testPod("old", "1", "1Gi"), Increasing: true, Since: t0},
		{Pod: testPod("new", "1", "1Gi"), Increasing: true, Since: t0.Add(time.Minute)},
		{Pod: guaranteed, Increasing: true, Since: t0.Add(time.Hour)},
		{Pod: prio(testPod("high", "1", "1Gi"), 100), Increasing: true},
		{Pod: testPod("shrink", "1", "1Gi"), Increasing: false},
	}
	SortPending(ps)
	var got []string
	for _, p := range ps {
		got = append(got, p.Pod.Name)
	}
	if want := "shrink high g old new"; strings.Join(got, " ") != want {
		t.Errorf("order %v, want %s", got, want)
	}
}

func TestEventMessage(t *testing.T) {
	msg := EventMessage("Pod resize started", testPod("a", "100m", "64Mi"), 2, "")
	want := `Pod resize started: {"containers":[{"name":"c","resources":{"limits":{"memory":"64Mi"},"requests":{"cpu":"100m"}}}],"generation":2}`
	if msg != want {
		t.Errorf("message\n%s\nwant\n%s", msg, want)
	}
}

// fakeNode admits pods while their cpu requests fit capacity.
type fakeNode struct {
	capacity int64
	pods     []*v1.Pod
	mu       sync.Mutex // Wake and Record run on Retry's goroutine too
	woken    []types.UID
	events   []string
}

func (n *fakeNode) wake(uid types.UID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.woken = append(n.woken, uid)
}

func (n *fakeNode) record(_ *v1.Pod, _, reason, _ string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.events = append(n.events, reason)
}

func (n *fakeNode) eventList() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return strings.Join(n.events, " ")
}

func (n *fakeNode) admit(pod *v1.Pod, others []*v1.Pod) (bool, string, string) {
	used := int64(0)
	for _, o := range others {
		used += qos.PodRequests(o).CPUMilli
	}
	if used+qos.PodRequests(pod).CPUMilli > n.capacity {
		return false, "OutOfcpu", "no room"
	}
	return true, "", ""
}

func TestManagerResize(t *testing.T) {
	ctx := context.Background()
	n := &fakeNode{capacity: 1000}
	m := NewManager(Config{Allocated: NewMemoryStore(), Admit: n.admit,
		ActivePods: func() []*v1.Pod { return n.pods },
		Wake:       n.wake,
		Record:     n.record,
		Clock:      clocktesting.NewFakeClock(time.Unix(1000, 0)),
	})
	a, b := testPod("a", "400m", "64Mi"), testPod("b", "400m", "64Mi")
	n.pods = []*v1.Pod{a, b}
	m.Admitted(ctx, a)
	m.Admitted(ctx, b)

	// a asks for 700m: 700+400 > 1000, deferred; b keeps its 400m.
	a2 := a.DeepCopy()
	a2.Generation = 2
	a2.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = q("700m")
	n.pods = []*v1.Pod{a2, b}
	m.Sync(ctx, a2)
	if got := m.Allocated(a2).Spec.Containers[0].Resources.Requests.Cpu().MilliValue(); got != 400 {
		t.Fatalf("allocated %dm after a deferred resize, want 400m", got)
	}
	if p := m.Conditions().Pending("a"); p == nil || p.Reason != v1.PodReasonDeferred || p.ObservedGeneration != 2 {
		t.Fatalf("pending %+v", p)
	}
	// b goes: a's resize is allocated on the retry.
	n.pods = []*v1.Pod{a2}
	m.Forget(ctx, "b")
	waitUntil(t, func() bool { return m.Allocated(a2) == a2 && strings.Contains(n.eventList(), "ResizeStarted") })
	if m.Conditions().Pending("a") != nil {
		t.Error("pending condition left after the allocation")
	}
	conds := m.Conditions().List("a")
	if len(conds) != 1 || conds[0].Type != v1.PodResizeInProgress || conds[0].ObservedGeneration != 2 {
		t.Fatalf("conditions %+v: want PodResizeInProgress at generation 2", conds)
	}
	m.Actuated(a2, false, "")
	if len(m.Conditions().List("a")) != 0 {
		t.Error("in progress left after actuation")
	}
	if got := n.eventList(); got != "ResizeDeferred ResizeStarted ResizeCompleted" {
		t.Errorf("events %s", got)
	}
	// A pod-level resize is allocated like any other (the pod-level cpu
	// request replaces the containers' sum): 500m fits beside b's 400m,
	// 700m does not and is deferred.
	a3 := a2.DeepCopy()
	a3.Generation = 3
	a3.Spec.Resources = &v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: q("500m")}}
	n.pods = []*v1.Pod{a3, b}
	m.Sync(ctx, a3)
	if got := m.Allocated(a3); got != a3 {
		t.Fatalf("pod-level resize not allocated: %+v, pending %+v", got.Spec.Resources, m.Conditions().Pending("a"))
	}
	if r, _ := m.cfg.Allocated.Get("a"); r.Pod == nil || r.Pod.Requests.Cpu().MilliValue() != 500 {
		t.Fatalf("checkpointed pod-level resources %+v, want cpu 500m", r.Pod)
	}
	m.Actuated(a3, false, "")
	a4 := a3.DeepCopy()
	a4.Generation = 4
	a4.Spec.Resources.Requests[v1.ResourceCPU] = q("700m")
	n.pods = []*v1.Pod{a4, b}
	m.Sync(ctx, a4)
	if p := m.Conditions().Pending("a"); p == nil || p.Reason != v1.PodReasonDeferred || p.Message != "no room" {
		t.Fatalf("pod-level resize beyond the node: %+v", p)
	}
	if got := m.Allocated(a4).Spec.Resources.Requests.Cpu().MilliValue(); got != 500 {
		t.Fatalf("allocated pod-level cpu %dm after a deferred resize, want 500m", got)
	}
	a2 = a3
	// Taken back: the pending condition clears.
	n.pods = []*v1.Pod{a2}
	m.Sync(ctx, a2)
	if m.Conditions().Pending("a") != nil {
		t.Error("a reverted resize left its pending condition")
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestMetrics(t *testing.T) {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	met := NewMetrics()
	n := &fakeNode{capacity: 500}
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	var m *Manager
	if err := met.Register(reg, func() *Conditions { return m.Conditions() }); err != nil {
		t.Fatal(err)
	}
	m = NewManager(Config{Allocated: NewMemoryStore(), Admit: n.admit, Metrics: met, Clock: clk,
		ActivePods: func() []*v1.Pod { return n.pods }})
	a := testPod("a", "400m", "64Mi")
	n.pods = []*v1.Pod{a}
	m.Admitted(ctx, a)
	m.Sync(ctx, a)
	up := a.DeepCopy()
	up.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = q("600m")
	n.pods = []*v1.Pod{up}
	m.Sync(ctx, up)
	want := `
# HELP kubelet_pod_pending_resizes Number of pending resizes for pods. Label 'priority_bucket' classifies the pod priority (system-critical: >=2000000000, high: 100000..1999999999, medium: 1..99999, normal: 0/default, low: -999..-1, very-low: <=-1000, unknown: nil pod). Label 'reason' describes the state (deferred, infeasible).
# TYPE kubelet_pod_pending_resizes gauge
kubelet_pod_pending_resizes{priority_bucket="normal",reason="deferred"} 1
# HELP kubelet_container_requested_resizes_total Number of requested resizes, counted at the container level. Different resources on the same container are counted separately. The 'requirement' label refers to 'memory' or 'limits'; the 'operation' label can be one of 'add', 'remove', 'increase' or 'decrease'.
# TYPE kubelet_container_requested_resizes_total counter
kubelet_container_requested_resizes_total{operation="increase",requirement="requests",resource="cpu"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "kubelet_pod_pending_resizes", "kubelet_container_requested_resizes_total"); err != nil {
		t.Error(err)
	}
	// Taken back after 30 s: the deferral is resolved as reverted.
	clk.Step(30 * time.Second)
	n.pods = []*v1.Pod{a}
	m.Sync(ctx, a)
	if got := testutil.CollectAndCount(met.deferredDuration); got != 1 {
		t.Errorf("deferred duration series %d, want 1", got)
	}
}

func TestInfeasibleSwap(t *testing.T) {
	swaps := func(*v1.Pod, *v1.Container) string { return "LimitedSwap" }
	a := testPod("a", "100m", "64Mi")
	a.Spec.Containers[0].Resources.Requests[v1.ResourceMemory] = q("32Mi")
	d := a.DeepCopy()
	d.Spec.Containers[0].Resources.Requests[v1.ResourceMemory] = q("48Mi")
	if msg, detail := Infeasible(d, a, swaps); msg != MessageSwapResize || detail != "swap_limitation" {
		t.Errorf("memory request of a swapping container: %q %q", msg, detail)
	}
	if msg, _ := Infeasible(d, a, func(*v1.Pod, *v1.Container) string { return "NoSwap" }); msg != "" {
		t.Errorf("without swap: %q", msg)
	}
	a.Spec.Containers[0].ResizePolicy = []v1.ContainerResizePolicy{{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}}
	if msg, _ := Infeasible(d, a, swaps); msg != "" {
		t.Errorf("restarted for memory: %q", msg)
	}
	cpu := a.DeepCopy()
	cpu.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = q("200m")
	a.Spec.Containers[0].ResizePolicy = nil
	if msg, _ := Infeasible(cpu, a, swaps); msg != "" {
		t.Errorf("a cpu resize of a swapping container: %q", msg)
	}
}

// TestStoreWrites: the file is what json.Marshal of the checkpoint gives
// (the format before the pods' encodings were kept), concurrent changes
// are all in the file when they return, a change that changes nothing
// does not write, and a forgotten pod leaves the file with the next
// change or Flush.
func TestStoreWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), ActuatedStateFile)
	s, err := OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			pod := testPod(fmt.Sprintf("p%02d", i), "100m", "64Mi")
			if err := s.Set(pod.UID, Of(pod)); err != nil {
				t.Error(err)
			}
			if err := s.SetContainer(pod.UID, "c", pod.Spec.Containers[0].Resources); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	again, err := OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(again.UIDs()); got != 20 {
		t.Fatalf("the file holds %d pods after 20 concurrent Sets returned, want 20", got)
	}
	b, _ := os.ReadFile(path)
	pods := map[types.UID]Resources{}
	for _, uid := range again.UIDs() {
		pods[uid], _ = again.Get(uid)
	}
	sum, _ := json.Marshal(pods)
	want, _ := json.Marshal(checkpoint{Pods: pods, Checksum: crc32.ChecksumIEEE(sum)})
	if string(b) != string(want) {
		t.Fatalf("file:\n%s\nwant json.Marshal's:\n%s", b, want)
	}

	stat := func() os.FileInfo {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi
	}
	before := stat()
	pod := testPod("p00", "0.1", "64Mi") // 0.1 is 100m: the same
	if err := s.Set(pod.UID, Of(pod)); err != nil {
		t.Fatal(err)
	}
	if err := s.SetContainer(pod.UID, "c", pod.Spec.Containers[0].Resources); err != nil {
		t.Fatal(err)
	}
	if err := s.SetPodLevel("new", nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove("absent"); err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(stat(), before) {
		t.Error("changes that change nothing rewrote the file")
	}

	if err := s.Remove("p01"); err != nil {
		t.Fatal(err)
	}
	if err := s.Keep(func(uid types.UID) bool { return uid != "p02" }); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Get("p01"); ok {
		t.Fatal("Remove left the pod in memory")
	}
	if err := s.SetPodLevel("p03", &v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: q("1")}}); err != nil {
		t.Fatal(err)
	}
	if again, err = OpenStore(path); err != nil {
		t.Fatal(err)
	}
	if _, ok := again.Get("p01"); ok || len(again.UIDs()) != 18 {
		t.Fatalf("after Remove, Keep and a change the file holds %d pods (p01 too: %v), want 18", len(again.UIDs()), ok)
	}
	if err := s.Remove("p04"); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if again, err = OpenStore(path); err != nil {
		t.Fatal(err)
	}
	if len(again.UIDs()) != 17 {
		t.Fatalf("after Flush the file holds %d pods, want 17", len(again.UIDs()))
	}
}

// Retry calls ActivePods and Wake, which take the pod workers' lock, and a
// pod worker calls RetrySoon while it holds that lock (a pod that
// finished): the two must not wait for each other. The kit's [Slow] run of
// 2026-11-29 hung the agent this way (a resize allocated by a pod's sync
// while another pod terminated).
func TestRetryAndRetrySoonDoNotDeadlock(t *testing.T) {
	ctx := context.Background()
	n := &fakeNode{capacity: 1000}
	var workers sync.Mutex // the pod workers' lock, guarding woken
	woken := 0
	a, b := testPod("a", "400m", "64Mi"), testPod("b", "400m", "64Mi")
	n.pods = []*v1.Pod{a, b}
	var m *Manager
	finished := make(chan struct{})
	m = NewManager(Config{Allocated: NewMemoryStore(), Admit: n.admit,
		ActivePods: func() []*v1.Pod { workers.Lock(); defer workers.Unlock(); return n.pods },
		Wake: func(types.UID) {
			// Another pod worker, holding the lock, sees a pod finish
			// while this Retry wakes the resized pod.
			held := make(chan struct{})
			go func() {
				workers.Lock()
				close(held)
				m.RetrySoon(ctx, "pod_terminated")
				workers.Unlock()
				close(finished)
			}()
			<-held
			workers.Lock() // Wake takes the pod workers' lock
			woken++
			workers.Unlock()
		},
		Clock: clocktesting.NewFakeClock(time.Unix(1000, 0)),
	})
	m.Admitted(ctx, a)
	m.Admitted(ctx, b)
	a2 := a.DeepCopy()
	a2.Generation = 2
	a2.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = q("500m") // fits: allocated, woken
	n.pods = []*v1.Pod{a2, b}
	synced := make(chan struct{})
	go func() { m.Sync(ctx, a2); close(synced) }()
	for _, ch := range []chan struct{}{synced, finished} {
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			t.Fatal("Retry and RetrySoon wait for each other (a lock held across a call to the pod workers)")
		}
	}
	workers.Lock()
	defer workers.Unlock()
	if m.Allocated(a2) != a2 || woken != 1 {
		t.Errorf("the resize allocated: %v, the pod woken %d times; want allocated, woken once", m.Allocated(a2) == a2, woken)
	}
}

// Store.Keep asks its callback (the pod workers' Known, under their lock)
// without holding the store's lock: a pod worker holding that lock records
// an admitted pod's allocation meanwhile. The kit's [Slow] re-run of
// 2026-11-29 hung the agent on this cycle.
func TestStoreKeepDoesNotHoldItsLockAcrossKeep(t *testing.T) {
	s, err := OpenStore(filepath.Join(t.TempDir(), "allocated_pods_state"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Set("gone", Of(testPod("gone", "100m", "16Mi"))); err != nil {
		t.Fatal(err)
	}
	var workers sync.Mutex // the pod workers' lock
	set := make(chan error, 1)
	err = s.Keep(func(types.UID) bool {
		// A pod worker holds the lock and admits a pod while Keep asks.
		held := make(chan struct{})
		go func() {
			workers.Lock()
			close(held)
			set <- s.Set("new", Of(testPod("new", "100m", "16Mi")))
			workers.Unlock()
		}()
		<-held
		select {
		case err := <-set:
			if err != nil {
				t.Error(err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Set waits for Keep: the store's lock is held across the keep callback")
		}
		workers.Lock() // Known takes the pod workers' lock
		defer workers.Unlock()
		return false
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.UIDs(); len(got) != 1 || got[0] != "new" {
		t.Errorf("the store holds %v, want only the pod admitted meanwhile", got)
	}
}

// InPlacePodLevelResourcesVerticalScaling off: a resize of spec.resources
// is Infeasible with the gate named and the pod keeps its allocated
// pod-level resources; a container resize is allocated as before; no
// pod-level status is reported.
func TestPodLevelResizeOff(t *testing.T) {
	ctx := context.Background()
	n := &fakeNode{capacity: 2000}
	m := NewManager(Config{Allocated: NewMemoryStore(), Admit: n.admit, NoPodLevelResize: true,
		ActivePods: func() []*v1.Pod { return n.pods }, Wake: n.wake, Record: n.record,
		Clock: clocktesting.NewFakeClock(time.Unix(1000, 0))})
	if m.PodLevelStatus() {
		t.Error("pod-level status reported with the gate off")
	}
	a := testPod("a", "400m", "64Mi")
	a.Spec.Resources = &v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: q("500m")}}
	n.pods = []*v1.Pod{a}
	m.Admitted(ctx, a)
	a2 := a.DeepCopy()
	a2.Generation = 2
	a2.Spec.Resources.Requests[v1.ResourceCPU] = q("700m")
	n.pods = []*v1.Pod{a2}
	m.Sync(ctx, a2)
	if p := m.Conditions().Pending("a"); p == nil || p.Reason != v1.PodReasonInfeasible || p.Message != MessagePodLevelResizeOff {
		t.Fatalf("pending %+v, want Infeasible %q", p, MessagePodLevelResizeOff)
	}
	if got := m.Allocated(a2).Spec.Resources.Requests.Cpu().MilliValue(); got != 500 {
		t.Errorf("allocated pod-level cpu %dm, want 500m", got)
	}
	a3 := a.DeepCopy()
	a3.Generation = 3
	a3.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = q("300m")
	n.pods = []*v1.Pod{a3}
	m.Sync(ctx, a3)
	if got := m.Allocated(a3); got != a3 {
		t.Errorf("container resize not allocated: pending %+v", m.Conditions().Pending("a"))
	}
}

// TestStorePodGeneration: a pod's generation is 0 without a record, and
// changes with each change of its record only (a Set of the same
// requirements is none); loaded records have one too.
func TestStorePodGeneration(t *testing.T) {
	path := filepath.Join(t.TempDir(), ActuatedStateFile)
	s, err := OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	a, b := testPod("a", "100m", "64Mi"), testPod("b", "200m", "64Mi")
	if g := s.PodGeneration("a"); g != 0 {
		t.Fatalf("no record: generation %d, want 0", g)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Set(a.UID, Of(a)))
	must(s.Set(b.UID, Of(b)))
	ga, gb := s.PodGeneration("a"), s.PodGeneration("b")
	if ga == 0 || gb == 0 || ga == gb {
		t.Fatalf("generations a %d, b %d: want two distinct non-zero", ga, gb)
	}
	must(s.Set(a.UID, Of(a)))
	if g := s.PodGeneration("a"); g != ga {
		t.Errorf("the same requirements again: generation %d, want %d", g, ga)
	}
	bigger := testPod("b", "300m", "64Mi")
	must(s.Set(b.UID, Of(bigger)))
	if g := s.PodGeneration("b"); g == gb || s.PodGeneration("a") != ga {
		t.Errorf("b changed: b %d (was %d), a %d (was %d); want b's only to change", g, gb, s.PodGeneration("a"), ga)
	}
	must(s.Remove("a"))
	if g := s.PodGeneration("a"); g != 0 {
		t.Errorf("removed: generation %d, want 0", g)
	}
	must(s.Flush())
	again, err := OpenStore(path)
	must(err)
	if g := again.PodGeneration("b"); g == 0 {
		t.Error("a loaded record has generation 0")
	}
}
