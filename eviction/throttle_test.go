package eviction

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// holdAll is a Throttler that holds back every met threshold while on.
type holdAll struct {
	on   bool
	seen []ThrottleInput
}

func (h *holdAll) Decide(_ context.Context, in ThrottleInput) []Threshold {
	h.seen = append(h.seen, in)
	if h.on {
		return nil
	}
	return in.Met
}

func (h *holdAll) Status() *ThrottleStatus { return &ThrottleStatus{Deficit: 1} }

// The manager hands every decision to its Throttler and acts only on the
// thresholds it lets through; the condition is still set.
func TestManagerThrottleHook(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Unix(5000, 0))
	be := mkPod("besteffort")
	n := &fakeNode{capacity: 1024 * mi, pods: []*v1.Pod{be}, usage: map[types.UID]int64{}}
	n.set(be, 1000, true)
	h := &holdAll{on: true}
	m, err := NewManager(ManagerConfig{Thresholds: []Threshold{hard(SignalAllocatableMemoryAvailable, "100Mi")},
		PressureTransitionPeriod: time.Minute, Clock: clk, Stats: n.stats, ActivePods: n.active, Evict: n.evict, Throttle: h})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	if len(n.evicted) != 0 || len(h.seen) != 1 || len(h.seen[0].Met) != 1 || len(h.seen[0].Active) != 1 ||
		h.seen[0].Observations[SignalAllocatableMemoryAvailable].Available != 24*mi {
		t.Fatalf("evicted %v while held; throttler saw %+v", n.evicted, h.seen)
	}
	if c := m.Conditions(); len(c) != 1 || c[0] != v1.NodeMemoryPressure {
		t.Fatalf("conditions %v", c)
	}
	if st := m.Status(); st.Throttle == nil || st.Throttle.Deficit != 1 {
		t.Fatalf("status %+v", st.Throttle)
	}
	h.on = false
	clk.Step(time.Second)
	if err := m.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	if len(n.evicted) != 1 {
		t.Fatalf("evicted %v once let through", n.evicted)
	}
}
