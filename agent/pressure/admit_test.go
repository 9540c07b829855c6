package pressure

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kernelet/kernelet/agent/podworkers"
	"github.com/kernelet/kernelet/eviction"
)

// Under kernelet's PSI pressure a BestEffort pod is rejected with reason
// Evicted only when the PSI condition is a node condition
// (psiNodeCondition); otherwise it is admitted.
func TestAdmitPSICondition(t *testing.T) {
	th, errs := eviction.ParseThresholds(eviction.Config{PSI: true, Hard: map[string]string{"memory.pressure.some.avg10": "10%"}})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	m, err := eviction.NewManager(eviction.ManagerConfig{Thresholds: th, Tick: time.Millisecond, PressureTransitionPeriod: time.Minute,
		Stats: func(context.Context, []*v1.Pod) (eviction.Stats, error) {
			return eviction.Stats{Time: time.Now(), NodePressure: &eviction.PSIStats{MemorySome: eviction.PSIValue{Known: true, Avg10: 50}}}, nil
		},
		ActivePods: func() []*v1.Pod { return nil },
		Evict:      func(context.Context, *v1.Pod, eviction.Eviction) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	go m.Run(ctx)
	for !slices.Contains(m.Conditions(), eviction.ConditionPSIPressure) {
		select {
		case <-ctx.Done():
			t.Fatalf("no PSI condition: %+v", m.Status())
		case <-time.After(time.Millisecond):
		}
	}
	s := &Signals{manager: m}
	be := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "be"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}}}
	if r := s.Admit(false).Admit(podworkers.AdmitAttributes{Pod: be}); !r.Admit {
		t.Errorf("PSI condition off: %+v, want admitted", r)
	}
	if r := s.Admit(true).Admit(podworkers.AdmitAttributes{Pod: be}); r.Admit || r.Reason != eviction.Reason {
		t.Errorf("PSI condition on: %+v, want rejected with reason %s", r, eviction.Reason)
	}
}
