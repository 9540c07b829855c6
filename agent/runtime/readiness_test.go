package runtime

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

func TestWithReadiness(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "setup"}, {Name: "side", RestartPolicy: &always}},
		Containers:     []v1.Container{{Name: "app"}, {Name: "done"}}}}
	st := v1.PodStatus{
		InitContainerStatuses: []v1.ContainerStatus{
			{Name: "setup", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{}}},
			{Name: "side", ContainerID: "containerd://s1", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}},
		},
		ContainerStatuses: []v1.ContainerStatus{
			{Name: "app", ContainerID: "containerd://a1", Ready: true, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}},
			{Name: "done", ContainerID: "containerd://d1", Ready: false, State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{}}},
		},
		Conditions: []v1.PodCondition{{Type: v1.ContainersReady, Status: v1.ConditionTrue}, {Type: v1.PodReady, Status: v1.ConditionTrue}, {Type: v1.PodScheduled, Status: v1.ConditionTrue}},
	}
	now := time.Unix(100, 0)
	out, changed := WithReadiness(pod, st, now, func(name, id string) bool { return !(name == "app" && id == "a1") })
	if !changed || out.ContainerStatuses[0].Ready {
		t.Fatalf("changed %v, statuses %+v", changed, out.ContainerStatuses)
	}
	for _, c := range out.Conditions[:2] {
		if c.Status != v1.ConditionFalse || c.Message != "containers with unready status: [side app done]" || !c.LastTransitionTime.Time.Equal(now) {
			t.Fatalf("condition %+v", c)
		}
	}
	if !st.ContainerStatuses[0].Ready {
		t.Fatal("the input was changed")
	}
	if _, changed := WithReadiness(pod, st, now, func(string, string) bool { return true }); changed {
		t.Fatal("changed with the same readiness")
	}
	failed := *st.DeepCopy()
	failed.Phase = v1.PodFailed // evicted: its conditions were set at the kill
	if out, changed := WithReadiness(pod, failed, now, func(string, string) bool { return false }); changed || !out.ContainerStatuses[0].Ready {
		t.Fatal("a terminal pod's status was rewritten by a readiness change")
	}
}
