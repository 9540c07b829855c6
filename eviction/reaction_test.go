package eviction

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestCrossingsReact(t *testing.T) {
	t0 := time.Unix(1000, 0)
	h := hard(SignalMemoryAvailable, "100Mi")
	soft := hard(SignalAllocatableMemoryAvailable, "200Mi")
	soft.GracePeriod = 10 * time.Second

	c := UpdateCrossings([]Threshold{h, soft}, nil, t0)
	// Still met later: the first crossing is kept.
	c = UpdateCrossings([]Threshold{h, soft}, c, t0.Add(time.Second))
	for name, tc := range map[string]struct {
		th     Threshold
		at     time.Time
		want   time.Duration
		wantOK bool
	}{
		"hard: from the crossing":      {h, t0.Add(40 * time.Millisecond), 40 * time.Millisecond, true},
		"soft: minus its grace period": {soft, t0.Add(10*time.Second + 5*time.Millisecond), 5 * time.Millisecond, true},
		"not met: no crossing":         {hard(SignalNodeFsAvailable, "1Gi"), t0, 0, false},
	} {
		t.Run(name, func(t *testing.T) {
			got, ok := c.React(tc.th, tc.at)
			if got != tc.want || ok != tc.wantOK {
				t.Fatalf("React = %v, %v; want %v, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
	if _, ok := c.React(h, t0.Add(time.Minute)); ok {
		t.Fatal("a second eviction for the same crossing was observed")
	}
	// Not met any more, then met again: a new crossing.
	c = UpdateCrossings(nil, c, t0.Add(2*time.Minute))
	c = UpdateCrossings([]Threshold{h}, c, t0.Add(3*time.Minute))
	if got, ok := c.React(h, t0.Add(3*time.Minute+time.Millisecond)); !ok || got != time.Millisecond {
		t.Fatalf("new crossing: React = %v, %v", got, ok)
	}
}

func TestDecisionSeen(t *testing.T) {
	woke, read, now := time.Unix(10, 0), time.Unix(11, 0), time.Unix(12, 0)
	for name, tc := range map[string]struct{ woke, read, want time.Time }{
		"woken: the wake":           {woke, read, woke},
		"tick: the read":            {time.Time{}, read, read},
		"no read time: now":         {time.Time{}, time.Time{}, now},
		"wake after the read: read": {now, read, read},
	} {
		t.Run(name, func(t *testing.T) {
			if got := decisionSeen(tc.woke, tc.read, now); !got.Equal(tc.want) {
				t.Fatalf("decisionSeen = %v, want %v", got, tc.want)
			}
		})
	}
}

// A kernel notification (Wake) starts the decision that evicts: the
// reaction latency runs from the Wake to the Evict call, observed once
// for the crossing.
func TestManagerReactionLatency(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Unix(5000, 0))
	be := mkPod("besteffort")
	n := &fakeNode{capacity: 1024 * mi, pods: []*v1.Pod{be}, usage: map[types.UID]int64{}}
	n.set(be, 1000, true)
	metrics := NewMetrics()
	m, err := NewManager(ManagerConfig{Thresholds: []Threshold{hard(SignalAllocatableMemoryAvailable, "100Mi")},
		PressureTransitionPeriod: time.Minute, Clock: clk, ActivePods: n.active, Metrics: metrics,
		Stats: func(ctx context.Context, pods []*v1.Pod) (Stats, error) {
			s, err := n.stats(ctx, pods)
			s.Time = clk.Now()
			clk.Step(20 * time.Millisecond) // the read takes 20 ms
			return s, err
		},
		Evict: n.evict})
	if err != nil {
		t.Fatal(err)
	}
	m.Wake()
	clk.Step(30 * time.Millisecond) // the decision starts 30 ms after the notification
	if err := m.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	if len(n.evicted) != 1 {
		t.Fatalf("evicted %v", n.evicted)
	}
	clk.Step(time.Second)
	if err := m.Synchronize(ctx); err != nil { // still met: no second observation
		t.Fatal(err)
	}
	var dm dto.Metric
	if err := metrics.reactionH.WithLabelValues(string(SignalAllocatableMemoryAvailable)).(prometheus.Histogram).Write(&dm); err != nil {
		t.Fatal(err)
	}
	if got := dm.GetHistogram().GetSampleCount(); got != 1 {
		t.Fatalf("%d observations, want 1", got)
	}
	if got := dm.GetHistogram().GetSampleSum(); got != 0.05 {
		t.Fatalf("latency %v s, want 0.05 (30 ms to the decision + 20 ms read)", got)
	}
}
