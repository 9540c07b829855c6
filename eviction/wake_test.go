package eviction

import (
	"context"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// The trigger of a decision is the first WakeBy's source since the last
// decision, else the timer Run waited on, else TriggerStart; each eviction
// record carries it, and each WakeBy counts in
// kernelet_eviction_wakeups_total.
func TestManagerTrigger(t *testing.T) {
	for name, tc := range map[string]struct {
		wakes []WakeSource
		timer WakeSource
		want  WakeSource
	}{
		"psi first":           {wakes: []WakeSource{WakePSI, WakeMemoryEvents}, want: WakePSI},
		"memory.events":       {wakes: []WakeSource{WakeMemoryEvents}, timer: TriggerNearTick, want: WakeMemoryEvents},
		"near tick":           {timer: TriggerNearTick, want: TriggerNearTick},
		"tick":                {timer: TriggerTick, want: TriggerTick},
		"direct Synchronize":  {want: TriggerStart},
		"Wake without source": {wakes: []WakeSource{WakeOther}, want: WakeOther},
	} {
		t.Run(name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Unix(5000, 0))
			p := mkPod("p")
			n := &fakeNode{capacity: 100 * mi, pods: []*v1.Pod{p}, usage: map[types.UID]int64{}}
			n.set(p, 95, true)
			m := newTestManager(t, n, clk, hard(SignalAllocatableMemoryAvailable, "10Mi"))
			metrics := NewMetrics()
			m.cfg.Metrics = metrics
			for _, w := range tc.wakes {
				m.WakeBy(w)
			}
			if tc.timer != "" {
				m.setTimerTrigger(tc.timer)
			}
			if err := m.Synchronize(context.Background()); err != nil {
				t.Fatal(err)
			}
			st := m.Status()
			if len(st.Evictions) != 1 || st.Evictions[0].Trigger != tc.want {
				t.Fatalf("evictions %+v, want one with trigger %s", st.Evictions, tc.want)
			}
			// The record times the decision's steps: the wake (the
			// first WakeBy's time, zero for a timer) and the stats read.
			var woke time.Time
			if len(tc.wakes) > 0 {
				woke = time.Unix(5000, 0)
			}
			if r := st.Evictions[0]; !r.Woke.Equal(woke) || !r.Read.Equal(time.Unix(0, 0)) {
				t.Fatalf("record woke %v read %v, want woke %v and the stats' time", r.Woke, r.Read, woke)
			}
			for _, w := range tc.wakes {
				var dm dto.Metric
				if err := metrics.wakeups.WithLabelValues(string(w)).Write(&dm); err != nil {
					t.Fatal(err)
				}
				if got := dm.GetCounter().GetValue(); got != 1 {
					t.Fatalf("wakeups{source=%s} = %v, want 1", w, got)
				}
			}
			// Taken by the decision: the next one is the timer's or a start.
			if err := m.Synchronize(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := m.decisionTrigger(); got != TriggerStart {
				t.Fatalf("next decision's trigger %s, want %s", got, TriggerStart)
			}
		})
	}
}

// An evicted pod that frees its memory between the node's read and the
// pods' read does not make the decision evict one pod too many: with
// pods pending, the node is read again after the pods.
func TestManagerRereadsTheNodeAfterThePods(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Unix(5000, 0))
	a, b := mkPod("a"), mkPod("b")
	n := &fakeNode{capacity: 100 * mi, pods: []*v1.Pod{a, b}, usage: map[types.UID]int64{}}
	n.set(a, 60, true)
	n.set(b, 35, true)
	var nodeReads int
	stale := false
	m, err := NewManager(ManagerConfig{Thresholds: []Threshold{hard(SignalAllocatableMemoryAvailable, "10Mi")},
		PressureTransitionPeriod: time.Minute, Clock: clk, ActivePods: n.active, Evict: n.evict, Metrics: NewMetrics(),
		Stats: func(ctx context.Context, _ []*v1.Pod) (Stats, error) {
			nodeReads++
			s, err := n.stats(ctx, nil)
			if stale && nodeReads%2 == 1 { // the first read of the decision: a still holds its 60 MiB
				s.Allocatable.WorkingSet += 60 * mi
				s.Allocatable.Available -= 60 * mi
			}
			s.Pods = nil
			return s, err
		},
		PodStats: func(ctx context.Context, pods []*v1.Pod) (map[types.UID]PodStats, error) {
			s, err := n.stats(ctx, pods)
			return s.Pods, err
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	if len(n.evicted) != 1 || n.evicted[0] != "a" {
		t.Fatalf("evicted %v, want a", n.evicted)
	}
	// a's memory goes between the node's read and the pods' read.
	n.set(a, 0, true)
	stale, nodeReads = true, 0
	clk.Step(time.Second)
	if err := m.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	if len(n.evicted) != 1 || nodeReads != 2 {
		t.Fatalf("evicted %v after a freed its memory (node read %d times), want only a (read twice)", n.evicted, nodeReads)
	}
}
