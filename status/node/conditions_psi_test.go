package node

import (
	"slices"
	"testing"

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
