package volumemanager

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestExtraGroups(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{SecurityContext: &v1.PodSecurityContext{SupplementalGroups: []int64{7}}}}
	if got := extraGroups(pod, []string{"9", "7", "10", "x", "4294967296"}); len(got) != 2 || got[0] != 10 || got[1] != 9 {
		t.Errorf("extra groups %v, want [10 9] (sorted as strings, the pod's own and non-32-bit values left out)", got)
	}
	if got := extraGroups(&v1.Pod{}, nil); got != nil {
		t.Errorf("no volumes: %v", got)
	}
}
