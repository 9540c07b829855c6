package node

import (
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kernelet/kernelet/eviction"
)

func TestPSICondition(t *testing.T) {
	st := &v1.NodeStatus{Capacity: fullCapacity()}
	Conditions(st, Inputs{Runtime: readyRuntime(t0)}, t0)
	for _, c := range st.Conditions {
		if c.Type == eviction.ConditionPSIPressure {
			t.Fatal("PSI condition without the switch")
		}
	}
	on := true
	events := Conditions(st, Inputs{Runtime: readyRuntime(t0), PSIPressure: &on}, t0)
	if !slices.Contains(events, eviction.ReasonPSIPressure) {
		t.Errorf("events %v", events)
	}
	var types []v1.NodeConditionType
	for _, c := range st.Conditions {
		types = append(types, c.Type)
		if c.Type == eviction.ConditionPSIPressure && (c.Status != v1.ConditionTrue || c.Reason != eviction.ReasonPSIPressure || c.Message != eviction.MessagePSIPressure) {
			t.Errorf("PSI condition %+v", c)
		}
	}
	if !slices.Contains(types, eviction.ConditionPSIPressure) {
		t.Fatalf("no PSI condition in %v", types)
	}
	off := false
	Conditions(st, Inputs{Runtime: readyRuntime(t0), PSIPressure: &off}, t0)
	for _, c := range st.Conditions {
		if c.Type == eviction.ConditionPSIPressure && (c.Status != v1.ConditionFalse || c.Reason != eviction.ReasonNoPSIPressure) {
			t.Errorf("PSI condition off %+v", c)
		}
	}
}

func TestContentionConditions(t *testing.T) {
	st := &v1.NodeStatus{Capacity: fullCapacity()}
	cond := func(typ v1.NodeConditionType) *v1.NodeCondition {
		for i := range st.Conditions {
			if st.Conditions[i].Type == typ {
				return &st.Conditions[i]
			}
		}
		return nil
	}
	in := func(mem10, mem60 float64) Inputs {
		return Inputs{Runtime: readyRuntime(t0), Contention: []eviction.ContentionSample{
			{Type: eviction.ConditionSystemMemoryContentionPressure, Threshold: 10, Known: true, Avg10: mem10, Avg60: mem60},
			{Type: eviction.ConditionKubepodsDiskContentionPressure, Threshold: 5, Known: true},
		}}
	}
	Conditions(st, Inputs{Runtime: readyRuntime(t0)}, t0)
	if cond(eviction.ConditionSystemMemoryContentionPressure) != nil {
		t.Fatal("contention condition without a threshold")
	}
	events := Conditions(st, in(1, 1), t0)
	if c := cond(eviction.ConditionSystemMemoryContentionPressure); c == nil || c.Status != v1.ConditionFalse ||
		c.Reason != "KubeletHasNoSystemMemoryContentionPressure" || c.Message != "kubelet has no SystemMemoryContentionPressure" {
		t.Fatalf("first report %+v", c)
	}
	if !slices.Contains(events, "KubeletHasNoKubepodsDiskContentionPressure") {
		t.Errorf("events %v", events)
	}
	if cond(eviction.ConditionSystemDiskContentionPressure) != nil {
		t.Error("a condition without a threshold is reported")
	}
	events = Conditions(st, in(20, 12), t0.Add(time.Second))
	c := cond(eviction.ConditionSystemMemoryContentionPressure)
	if c.Status != v1.ConditionTrue || c.Reason != "KubeletHasSystemMemoryContentionPressure" || c.Message != "kubelet has SystemMemoryContentionPressure" ||
		!c.LastTransitionTime.Time.Equal(t0.Add(time.Second)) {
		t.Errorf("rising %+v", c)
	}
	if !slices.Equal(events, []string{"KubeletHasSystemMemoryContentionPressure"}) {
		t.Errorf("events %v", events)
	}
	if events = Conditions(st, in(2, 11), t0.Add(2*time.Second)); len(events) != 0 || cond(eviction.ConditionSystemMemoryContentionPressure).Status != v1.ConditionTrue {
		t.Errorf("trending lower: events %v, %+v", events, cond(eviction.ConditionSystemMemoryContentionPressure))
	}
	Conditions(st, in(2, 9), t0.Add(3*time.Second))
	if c := cond(eviction.ConditionSystemMemoryContentionPressure); c.Status != v1.ConditionFalse {
		t.Errorf("cleared %+v", c)
	}
	Conditions(st, Inputs{Runtime: readyRuntime(t0)}, t0.Add(4*time.Second))
	if cond(eviction.ConditionSystemMemoryContentionPressure) != nil || cond(eviction.ConditionKubepodsDiskContentionPressure) != nil {
		t.Error("conditions whose thresholds were removed stay")
	}
	if cond(v1.NodeReady) == nil {
		t.Error("Ready lost")
	}
}
