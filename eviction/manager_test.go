package eviction

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// node is a fake node for the manager: its kubepods memory and pods.
type fakeNode struct {
	mu       sync.Mutex
	capacity int64
	pods     []*v1.Pod
	usage    map[types.UID]int64 // MiB; a pod without an entry has no cgroup
	evicted  []string
	grace    []*int64
	messages []string
	events   []v1.ResourceName
}

func (n *fakeNode) stats(_ context.Context, pods []*v1.Pod) (Stats, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	s := Stats{Time: time.Unix(0, 0), Pods: map[types.UID]PodStats{}}
	var total int64
	for uid, u := range n.usage {
		total += u * mi
		s.Pods[uid] = ws(u)
	}
	s.Allocatable = &MemoryStats{Capacity: n.capacity, WorkingSet: total, Available: MemoryAvailable(n.capacity, total, 0)}
	return s, nil
}

func (n *fakeNode) active() []*v1.Pod {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []*v1.Pod
	for _, p := range n.pods {
		if !contains(n.evicted, p.Name) {
			out = append(out, p)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (n *fakeNode) evict(_ context.Context, pod *v1.Pod, e Eviction) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.evicted = append(n.evicted, pod.Name)
	n.grace = append(n.grace, e.GracePeriod)
	n.messages = append(n.messages, e.Message)
	return nil
}

func (n *fakeNode) set(p *v1.Pod, mib int64, present bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if present {
		n.usage[p.UID] = mib
	} else {
		delete(n.usage, p.UID)
	}
}

func newTestManager(t *testing.T, n *fakeNode, clk *clocktesting.FakeClock, ths ...Threshold) *Manager {
	t.Helper()
	m, err := NewManager(ManagerConfig{Thresholds: ths, PressureTransitionPeriod: time.Minute, Clock: clk,
		Stats: n.stats, ActivePods: n.active, Evict: n.evict, Metrics: NewMetrics(),
		ThresholdMet: func(r v1.ResourceName) { n.events = append(n.events, r) }})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestManagerEvictsTheDeficit(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Unix(5000, 0))
	be, be2 := mkPod("besteffort"), mkPod("besteffort-small")
	burst := mkPod("burstable", memRequest("100Mi"))
	guar := mkPod("guaranteed", memLimit("200Mi"))
	st := mkPod("static", static)
	n := &fakeNode{capacity: 1024 * mi, pods: []*v1.Pod{guar, burst, be, be2, st}, usage: map[types.UID]int64{}}
	n.set(guar, 150, true)
	n.set(burst, 300, true)
	n.set(be, 300, true)
	n.set(be2, 10, true)
	n.set(st, 200, true) // total 960 MiB: 64 MiB available
	th := hard(SignalAllocatableMemoryAvailable, "100Mi")
	th.MinReclaim = &Value{Quantity: qty("200Mi")}
	m := newTestManager(t, n, clk, th)

	if err := m.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	// Deficit 100+200−64 = 236 MiB: the largest BestEffort (300) covers it.
	if len(n.evicted) != 1 || n.evicted[0] != "besteffort" {
		t.Fatalf("evicted %v", n.evicted)
	}
	if *n.grace[0] != 1 {
		t.Fatalf("hard eviction grace %d", *n.grace[0])
	}
	if c := m.Conditions(); len(c) != 1 || c[0] != v1.NodeMemoryPressure {
		t.Fatalf("conditions %v", c)
	}
	want := "The node was low on resource: memory. Threshold quantity: 100Mi, available: 64Mi. " +
		"Container app was using 300Mi, request is 0, has larger consumption of memory. "
	if n.messages[0] != want {
		t.Fatalf("message %q", n.messages[0])
	}

	// The evicted pod's memory is not freed yet: no further eviction.
	clk.Step(100 * time.Millisecond)
	if err := m.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	if len(n.evicted) != 1 {
		t.Fatalf("evicted again while the first pod's memory is being freed: %v", n.evicted)
	}

	// Freed, but the others grew: 1014 MiB used, deficit 290 MiB: the
	// Burstable pod over its request (500 MiB) covers it alone.
	n.set(be, 0, false)
	n.set(burst, 500, true)
	n.set(guar, 199, true)
	n.set(be2, 115, true)
	clk.Step(100 * time.Millisecond)
	if err := m.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	if len(n.evicted) != 2 || n.evicted[1] != "burstable" {
		t.Fatalf("evicted %v", n.evicted)
	}
	n.set(burst, 0, false)
	n.set(be2, 0, false)
	clk.Step(100 * time.Millisecond)
	if err := m.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	// 399 MiB used: recovered past threshold + min-reclaim; the static
	// pod was never a candidate; pressure stays for the transition period.
	if len(n.evicted) != 2 {
		t.Fatalf("evicted %v", n.evicted)
	}
	if c := m.Conditions(); len(c) != 1 {
		t.Fatalf("MemoryPressure left before the transition period: %v", c)
	}
	clk.Step(time.Minute)
	if err := m.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	if c := m.Conditions(); len(c) != 0 {
		t.Fatalf("conditions after the transition period: %v", c)
	}
}

func TestManagerNeverEvictsCritical(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(5000, 0))
	st := mkPod("static", static)
	hi := mkPod("system", prio(2000000000))
	n := &fakeNode{capacity: 100 * mi, pods: []*v1.Pod{st, hi}, usage: map[types.UID]int64{}}
	n.set(st, 60, true)
	n.set(hi, 39, true)
	m := newTestManager(t, n, clk, hard(SignalAllocatableMemoryAvailable, "10Mi"))
	if err := m.Synchronize(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(n.evicted) != 0 {
		t.Fatalf("evicted critical pods %v", n.evicted)
	}
	if len(m.Conditions()) != 1 {
		t.Fatalf("no MemoryPressure")
	}
}

func TestManagerSoftThreshold(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(5000, 0))
	p := mkPod("p")
	n := &fakeNode{capacity: 100 * mi, pods: []*v1.Pod{p}, usage: map[types.UID]int64{}}
	n.set(p, 95, true)
	soft := hard(SignalAllocatableMemoryAvailable, "10Mi")
	soft.GracePeriod = 10 * time.Second
	m := newTestManager(t, n, clk, soft)
	m.cfg.MaxPodGracePeriod = 7
	for range 4 { // at 0, 4, 8 and 12 s
		if err := m.Synchronize(context.Background()); err != nil {
			t.Fatal(err)
		}
		clk.Step(4 * time.Second)
	}
	if len(n.evicted) != 1 || *n.grace[0] != 7 {
		t.Fatalf("evicted %v (grace %v) after the soft grace period", n.evicted, n.grace)
	}
}

func TestManagerWake(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(5000, 0))
	p := mkPod("p")
	n := &fakeNode{capacity: 100 * mi, pods: []*v1.Pod{p}, usage: map[types.UID]int64{}}
	n.set(p, 10, true)
	m := newTestManager(t, n, clk, hard(SignalAllocatableMemoryAvailable, "10Mi"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	n.set(p, 95, true)
	deadline := time.Now().Add(10 * time.Second)
	for {
		m.Wake()
		n.mu.Lock()
		got := len(n.evicted)
		n.mu.Unlock()
		if got == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("a wake-up did not lead to a decision")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestManagerStatus(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(5000, 0))
	p := mkPod("p")
	n := &fakeNode{capacity: 100 * mi, pods: []*v1.Pod{p}, usage: map[types.UID]int64{}}
	n.set(p, 95, true)
	m := newTestManager(t, n, clk, hard(SignalAllocatableMemoryAvailable, "10Mi"), hard(SignalPIDAvailable, "100"))
	if err := m.Synchronize(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := m.Status()
	if len(st.Conditions) != 1 || len(st.Evictions) != 1 || st.Evictions[0].Pod.Name != "p" || !st.LastDecision.Equal(clk.Now()) {
		t.Fatalf("status %+v", st)
	}
	if a := st.Thresholds[0]; !a.Observed || !a.Met || a.Available != 5*mi || a.Quantity != 10*mi {
		t.Fatalf("allocatable threshold %+v", a)
	}
	if pid := st.Thresholds[1]; pid.Observed || pid.Met {
		t.Fatalf("pid threshold without observation %+v", pid)
	}
}

func TestDeficit(t *testing.T) {
	th := hard(SignalMemoryAvailable, "100Mi")
	th.MinReclaim = &Value{Percentage: 0.05}
	pct := float32(0.05)
	want := 20*mi + int64(float64(1000*mi)*float64(pct))
	if got := Deficit(th, Observation{Available: 80 * mi, Capacity: 1000 * mi}); got != want {
		t.Fatalf("deficit %d", got)
	}
	if got := Deficit(hard(SignalMemoryAvailable, "100Mi"), Observation{Available: 200 * mi}); got != 1 {
		t.Fatalf("deficit of a threshold no longer met %d", got)
	}
}

func TestManagerNear(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(5000, 0))
	p := mkPod("p")
	n := &fakeNode{capacity: 100 * mi, pods: []*v1.Pod{p}, usage: map[types.UID]int64{}}
	m := newTestManager(t, n, clk, hard(SignalAllocatableMemoryAvailable, "10Mi"))
	for _, tc := range []struct {
		usage int64
		near  bool
	}{{50, false}, {79, false}, {81, true}, {95, true}} {
		n.set(p, tc.usage, true)
		if err := m.Synchronize(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := m.near(); got != tc.near {
			t.Fatalf("usage %d MiB of 100: near %v, want %v", tc.usage, got, tc.near)
		}
		n.evicted = nil
	}
}

// Pods without stats rank first but free an unknown amount: one decision
// evicts one of them, not all (review finding; kubelet evicts one a loop).
func TestManagerOneStatlessPodPerDecision(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Unix(5000, 0))
	a, b, c := mkPod("no-stats-a"), mkPod("no-stats-b"), mkPod("no-stats-c")
	big := mkPod("big")
	n := &fakeNode{capacity: 1024 * mi, pods: []*v1.Pod{a, b, c, big}, usage: map[types.UID]int64{}}
	n.set(big, 1000, true) // 24 MiB available; a, b, c have no cgroup stats
	m := newTestManager(t, n, clk, hard(SignalAllocatableMemoryAvailable, "100Mi"))
	if err := m.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	if len(n.evicted) != 1 {
		t.Fatalf("one decision evicted %v, want one pod", n.evicted)
	}
}

func TestUncovered(t *testing.T) {
	for name, tc := range map[string]struct{ need, freeing, covered, slack, want int64 }{
		"nothing pending":                   {need: 50, want: 50},
		"covered by the pods being evicted": {need: 40, freeing: 300, covered: 30, slack: 16, want: -260},
		"grown within the slack":            {need: 45, freeing: 300, covered: 30, slack: 16, want: -255},
		"grown past the slack":              {need: 64, freeing: 300, covered: 10, slack: 16, want: 54},
		"freeing covers less than growth":   {need: 64, freeing: 20, covered: 10, slack: 16, want: 54},
		"freeing covers less, no growth":    {need: 64, freeing: 20, covered: 60, slack: 16, want: 44},
	} {
		if got := Uncovered(tc.need, tc.freeing, tc.covered, tc.slack); got != tc.want {
			t.Errorf("%s: Uncovered(%d, %d, %d, %d) = %d, want %d", name, tc.need, tc.freeing, tc.covered, tc.slack, got, tc.want)
		}
	}
}

// A large pod evicted for a small deficit and still being stopped (a slow
// runtime) does not cover another pod's growth: once the deficit grew
// past what it was evicted for (and its own growth since), the grower is
// evicted too; a deficit that stays within the slack evicts nothing more.
func TestManagerEvictsGrowthWhileStopping(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Unix(5000, 0))
	be := mkPod("besteffort")
	burst := mkPod("burstable", memRequest("500Mi"))
	guar := mkPod("guaranteed", memLimit("200Mi"))
	n := &fakeNode{capacity: 1024 * mi, pods: []*v1.Pod{guar, burst, be}, usage: map[types.UID]int64{}}
	n.set(guar, 150, true)
	n.set(be, 300, true)
	n.set(burst, 510, true) // 960 MiB: 64 MiB available, deficit 36 MiB
	m := newTestManager(t, n, clk, hard(SignalAllocatableMemoryAvailable, "100Mi"))
	if err := m.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	if len(n.evicted) != 1 || n.evicted[0] != "besteffort" {
		t.Fatalf("evicted %v, want the BestEffort pod", n.evicted)
	}
	// The BestEffort pod, held, still creeps up by 20 MiB: its own growth,
	// covered by its eviction.
	n.set(be, 320, true)
	clk.Step(100 * time.Millisecond)
	if err := m.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	if len(n.evicted) != 1 {
		t.Fatalf("evicted %v for the evicted pod's own growth", n.evicted)
	}
	// The Burstable one grows by 20 MiB: deficit 76 MiB, 20 past the 56
	// covered (slack 25).
	n.set(burst, 530, true)
	clk.Step(100 * time.Millisecond)
	if err := m.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	if len(n.evicted) != 1 {
		t.Fatalf("evicted %v within the slack", n.evicted)
	}
	// 30 MiB more: nothing available, deficit at least 100 MiB.
	n.set(burst, 560, true)
	clk.Step(100 * time.Millisecond)
	if err := m.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	if len(n.evicted) != 2 || n.evicted[1] != "burstable" {
		t.Fatalf("evicted %v, want the growing Burstable pod next", n.evicted)
	}
	// Both still stopping, nothing grows: the Guaranteed pod stays.
	clk.Step(100 * time.Millisecond)
	if err := m.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	if len(n.evicted) != 2 {
		t.Fatalf("evicted %v while both pods are being stopped", n.evicted)
	}
}

// An evicted pod whose kill takes longer than 10 s (containerd took 30 s
// to stop a tmpfs writer under TCG) keeps counting as freeing while its
// cgroup exists, up to DefaultCooldown (30 s, kubelet's wait for an
// evicted pod's cleanup): the bystander is not evicted meanwhile; a pod
// stuck past it no longer holds back.
func TestManagerSlowKillHoldsBack(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Unix(5000, 0))
	writer, by := mkPod("writer"), mkPod("bystander")
	n := &fakeNode{capacity: 512 * mi, pods: []*v1.Pod{by, writer}, usage: map[types.UID]int64{}}
	n.set(by, 40, true)
	n.set(writer, 420, true) // 52 MiB available, 64Mi threshold
	m := newTestManager(t, n, clk, hard(SignalAllocatableMemoryAvailable, "64Mi"))
	for i := range 29 {
		if err := m.Synchronize(ctx); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(n.evicted, []string{"writer"}) {
			t.Fatalf("%d s after the writer's eviction, its cgroup still there: evicted %v", i, n.evicted)
		}
		clk.Step(time.Second)
	}
	clk.Step(time.Second)
	if err := m.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(n.evicted, []string{"writer", "bystander"}) {
		t.Fatalf("past DefaultCooldown: evicted %v", n.evicted)
	}
}
