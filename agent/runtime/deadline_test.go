package runtime

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestWithFailed(t *testing.T) {
	pod := testPod(v1.RestartPolicyAlways, nil, nil, "app")
	st := &PodStatus{UID: pod.UID, Sandboxes: []*SandboxStatus{readySandbox()},
		Containers: []*ContainerStatus{ctr(pod, "a1", "app", ContainerRunning, 0, t0)}}
	out := WithFailed(ToAPIStatus(pod, st, t0, StatusInputs{}), ReasonDeadlineExceeded, MessageDeadlineExceeded, t0)
	if out.Phase != v1.PodFailed || out.Reason != "DeadlineExceeded" || out.Message != "Pod was active on the node longer than the specified deadline" {
		t.Errorf("status = %s %q %q", out.Phase, out.Reason, out.Message)
	}
	for _, c := range out.Conditions {
		if (c.Type == v1.PodReady || c.Type == v1.ContainersReady) && (c.Status != v1.ConditionFalse || c.Reason != "PodFailed") {
			t.Errorf("condition %s = %s %s, want False PodFailed", c.Type, c.Status, c.Reason)
		}
	}
}
