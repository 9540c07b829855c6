package runtime

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func withDebug(pod *v1.Pod, target string) *v1.Pod {
	p := pod.DeepCopy()
	p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, v1.EphemeralContainer{
		EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug", Image: "img:1"},
		TargetContainerName:      target})
	return p
}

func TestComputePodActionsEphemeral(t *testing.T) {
	pod := withDebug(testPod(v1.RestartPolicyAlways, []string{"init1"}, nil, "app"), "app")
	st := func(cs ...*ContainerStatus) *PodStatus {
		return &PodStatus{UID: pod.UID, Sandboxes: []*SandboxStatus{readySandbox()}, Containers: cs}
	}
	tests := []struct {
		name string
		st   *PodStatus
		want []int
	}{
		{"new pod: not before the sandbox runs", nil, nil},
		{"while initializing", st(ctr(pod, "i1", "init1", ContainerRunning, 0, t0)), []int{0}},
		{"running pod", st(ctr(pod, "a1", "app", ContainerRunning, 0, t0), ctr(pod, "i1", "init1", ContainerExited, 0, t0)), []int{0}},
		{"already running", st(ctr(pod, "d1", "debug", ContainerRunning, 0, t0), ctr(pod, "a1", "app", ContainerRunning, 0, t0)), nil},
		{"exited: never restarted", st(ctr(pod, "d1", "debug", ContainerExited, 1, t0), ctr(pod, "a1", "app", ContainerRunning, 0, t0)), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := ComputePodActions(pod, tt.st, t0, nil)
			if !reflect.DeepEqual(a.EphemeralContainersToStart, tt.want) {
				t.Errorf("EphemeralContainersToStart = %v, want %v", a.EphemeralContainersToStart, tt.want)
			}
			for id, k := range a.ContainersToKill {
				if k.Name == "debug" {
					t.Errorf("ephemeral container %s killed: %+v", id, k)
				}
			}
		})
	}
}

func TestEphemeralDoesNotKeepPodRunning(t *testing.T) {
	pod := withDebug(testPod(v1.RestartPolicyNever, nil, nil, "app"), "")
	st := &PodStatus{UID: pod.UID, Sandboxes: []*SandboxStatus{readySandbox()},
		Containers: []*ContainerStatus{ctr(pod, "d1", "debug", ContainerRunning, 0, t0), ctr(pod, "a1", "app", ContainerExited, 0, t0)}}
	a := ComputePodActions(pod, st, t0, nil)
	if !a.KillPod || len(a.EphemeralContainersToStart) != 0 {
		t.Errorf("actions = %+v, want the pod stopped", a)
	}
	s := ToAPIStatus(pod, st, t0, StatusInputs{})
	if s.Phase != v1.PodSucceeded {
		t.Errorf("phase = %s, want Succeeded (the ephemeral container does not count)", s.Phase)
	}
	if len(s.EphemeralContainerStatuses) != 1 || s.EphemeralContainerStatuses[0].State.Running == nil || s.EphemeralContainerStatuses[0].Ready {
		t.Errorf("ephemeral statuses = %+v, want one running, not ready", s.EphemeralContainerStatuses)
	}
}
