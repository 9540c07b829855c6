package eviction

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// pressureNode is a node whose kubepods memory is 64 MiB short of a
// 100Mi threshold with min-reclaim 200Mi (deficit 236 MiB), with three
// BestEffort pods of 100 MiB each.
func pressureNode() (*fakeNode, Threshold) {
	n := &fakeNode{capacity: 1024 * mi, usage: map[types.UID]int64{}}
	for _, name := range []string{"a", "b", "c"} {
		p := mkPod(name)
		n.pods = append(n.pods, p)
		n.set(p, 100, true)
	}
	other := mkPod("guaranteed", memLimit("700Mi"))
	n.pods = append(n.pods, other)
	n.set(other, 660, true) // 960 MiB used: 64 MiB available
	th := hard(SignalAllocatableMemoryAvailable, "100Mi")
	th.MinReclaim = &Value{Quantity: qty("200Mi")}
	return n, th
}

func TestKubeletModeEvictsOnePodPerDecision(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(5000, 0))
	n, th := pressureNode()
	m, err := NewManager(ManagerConfig{Thresholds: []Threshold{th}, Clock: clk, Mode: ModeKubelet,
		Stats: n.stats, ActivePods: n.active, Evict: n.evict})
	if err != nil {
		t.Fatal(err)
	}
	if m.cfg.Tick != KubeletModeTick {
		t.Errorf("kubelet mode tick %v, want %v", m.cfg.Tick, KubeletModeTick)
	}
	if err := m.Synchronize(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(n.evicted) != 1 {
		t.Fatalf("kubelet mode evicted %v in one decision, want one pod", n.evicted)
	}
	if c := m.takeCleanup(); len(c) != 1 || c[0].Name != n.evicted[0] {
		t.Errorf("kubelet mode waits for %v", names(c))
	}
	if len(m.pending[th.Signal]) != 0 {
		t.Errorf("kubelet mode keeps no pending accounting: %v", m.pending)
	}
	m.Wake()
	select {
	case <-m.wake:
		t.Error("kubelet mode took a kernel wake-up")
	default:
	}
	// The same node in kernelet mode: the deficit (236 MiB) takes three.
	n2, th2 := pressureNode()
	m2, _ := NewManager(ManagerConfig{Thresholds: []Threshold{th2}, Clock: clk, Stats: n2.stats, ActivePods: n2.active, Evict: n2.evict})
	if err := m2.Synchronize(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(n2.evicted) != 3 {
		t.Errorf("kernelet mode evicted %v, want 3 pods", n2.evicted)
	}
}

func TestKubeletModeWaitsForCleanup(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(5000, 0))
	n, th := pressureNode()
	m, _ := NewManager(ManagerConfig{Thresholds: []Threshold{th}, Clock: clk, Mode: ModeKubelet,
		Stats: n.stats, ActivePods: n.active, Evict: n.evict})
	victim := n.pods[0]
	done := make(chan struct{})
	go func() {
		m.waitForCleanup(context.Background(), []*v1.Pod{victim})
		close(done)
	}()
	// Still there: the wait polls; once the cgroup is gone it ends.
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	n.set(victim, 0, false)
	clk.Step(KubeletCleanupPoll)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("waitForCleanup did not end once the pod was gone")
	}
}

func TestDryRunNeverEvicts(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(5000, 0))
	n, th := pressureNode()
	metrics := NewMetrics()
	var events []v1.ResourceName
	m, _ := NewManager(ManagerConfig{Thresholds: []Threshold{th}, Clock: clk, DryRun: true, Metrics: metrics, PressureTransitionPeriod: time.Minute,
		Stats: n.stats, ActivePods: n.active, Evict: func(context.Context, *v1.Pod, Eviction) error {
			t.Fatal("Evict called in dry-run mode")
			return nil
		}, ThresholdMet: func(r v1.ResourceName) { events = append(events, r) }})
	for range 2 {
		if err := m.Synchronize(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	st := m.Status()
	if !st.DryRun || len(st.WouldEvict) != 3 {
		t.Fatalf("dry run lists %+v, want the 3 pods of the deficit (each decision anew)", st.WouldEvict)
	}
	if !strings.HasPrefix(st.WouldEvict[0].Message, "The node was low on resource: memory. Threshold quantity: 100Mi, available: 64Mi. ") {
		t.Errorf("message %q", st.WouldEvict[0].Message)
	}
	if len(events) != 0 || len(st.Evictions) != 0 {
		t.Errorf("dry run recorded events %v / evictions %v", events, st.Evictions)
	}
	if len(st.Conditions) != 1 || st.Conditions[0] != v1.NodeMemoryPressure {
		t.Errorf("dry run still reports the condition: %v", st.Conditions)
	}
	// Pressure gone: the list empties.
	n.set(n.pods[3], 100, true)
	if err := m.Synchronize(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := m.Status(); len(st.WouldEvict) != 0 {
		t.Errorf("no pressure, still would evict %+v", st.WouldEvict)
	}
}

func TestPodStatsReadOnlyWhenMet(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(5000, 0))
	n, th := pressureNode()
	var podReads int
	var nodeReadPods []int
	m, _ := NewManager(ManagerConfig{Thresholds: []Threshold{th}, Clock: clk,
		Stats: func(ctx context.Context, pods []*v1.Pod) (Stats, error) {
			nodeReadPods = append(nodeReadPods, len(pods))
			return n.stats(ctx, pods)
		},
		PodStats: func(ctx context.Context, pods []*v1.Pod) (map[types.UID]PodStats, error) {
			podReads++
			st, err := n.stats(ctx, pods)
			return st.Pods, err
		},
		ActivePods: n.active, Evict: n.evict})
	other := n.pods[3]
	n.set(other, 100, true) // no pressure
	if err := m.Synchronize(context.Background()); err != nil {
		t.Fatal(err)
	}
	if podReads != 0 || nodeReadPods[0] != 0 {
		t.Fatalf("no threshold met: pod stats read %d times, node read with %v pods", podReads, nodeReadPods)
	}
	n.set(other, 660, true)
	if err := m.Synchronize(context.Background()); err != nil {
		t.Fatal(err)
	}
	if podReads != 1 || len(n.evicted) == 0 {
		t.Fatalf("threshold met: pod stats read %d times, evicted %v", podReads, n.evicted)
	}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"": ModeKernelet, "kernelet": ModeKernelet, "kubelet": ModeKubelet} {
		if got, err := ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseMode("Kubelet"); err == nil {
		t.Error("ParseMode accepts a wrong case")
	}
}
