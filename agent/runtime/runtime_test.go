package runtime

import (
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestRuntimeReady(t *testing.T) {
	cases := map[string]struct {
		conds []*runtimeapi.RuntimeCondition
		want  string // "" = ready
	}{
		"ready": {[]*runtimeapi.RuntimeCondition{{Type: runtimeapi.RuntimeReady, Status: true}, {Type: runtimeapi.NetworkReady, Status: false}}, ""},
		"not ready": {[]*runtimeapi.RuntimeCondition{{Type: runtimeapi.RuntimeReady, Status: false, Reason: "Broken", Message: "runc missing"}},
			"container runtime not ready: Broken: runc missing"},
		"missing": {nil, "did not report RuntimeReady"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := RuntimeReady(&runtimeapi.RuntimeStatus{Conditions: tc.conds})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("want ready, got %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestConditions(t *testing.T) {
	got := Conditions(&runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true},
		{Type: runtimeapi.NetworkReady, Status: false, Reason: "NetworkPluginNotReady", Message: "cni plugin not initialized"},
	}})
	if got[runtimeapi.RuntimeReady] != "true" || got[runtimeapi.NetworkReady] != "false: NetworkPluginNotReady: cni plugin not initialized" {
		t.Errorf("conditions = %v", got)
	}
}
