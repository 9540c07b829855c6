package runtime

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// The devices' health (allocatedResourcesStatus) is reported for the
// regular containers only, as kubelet does.
func TestToAPIStatusResourcesStatus(t *testing.T) {
	pod := testPod(v1.RestartPolicyAlways, []string{"init"}, []string{"sidecar"}, "app")
	st := &PodStatus{UID: pod.UID, Sandboxes: []*SandboxStatus{readySandbox()},
		Containers: []*ContainerStatus{ctr(pod, "a1", "app", ContainerRunning, 0, t0)}}
	asked := map[string]int{}
	health := []v1.ResourceStatus{{Name: "example.com/gpu", Resources: []v1.ResourceHealth{{ResourceID: "g0", Health: v1.ResourceHealthStatusUnhealthy}}}}
	s := ToAPIStatus(pod, st, t0, StatusInputs{ResourcesStatus: func(name string) []v1.ResourceStatus {
		asked[name]++
		return health
	}})
	if len(s.ContainerStatuses) != 1 || len(s.ContainerStatuses[0].AllocatedResourcesStatus) != 1 ||
		s.ContainerStatuses[0].AllocatedResourcesStatus[0].Resources[0].Health != v1.ResourceHealthStatusUnhealthy {
		t.Errorf("app status = %+v, want its device's health", s.ContainerStatuses)
	}
	for _, cs := range s.InitContainerStatuses {
		if cs.AllocatedResourcesStatus != nil {
			t.Errorf("init container %s reports %v", cs.Name, cs.AllocatedResourcesStatus)
		}
	}
	if len(asked) != 1 || asked["app"] != 1 {
		t.Errorf("asked for %v, want app once", asked)
	}
	if s := ToAPIStatus(pod, st, t0, StatusInputs{}); s.ContainerStatuses[0].AllocatedResourcesStatus != nil {
		t.Errorf("without the input: %v", s.ContainerStatuses[0].AllocatedResourcesStatus)
	}
}

// A pod the node rejected after admission (Rejected) is Failed with the
// reason and kubelet's "Pod was rejected: " message, and its volumes'
// health is reported.
func TestToAPIStatusRejectedAndVolumeHealth(t *testing.T) {
	pod := testPod(v1.RestartPolicyAlways, nil, nil, "app")
	st := &PodStatus{UID: pod.UID}
	health := []v1.PodVolumeHealth{{Name: "data", HealthConditions: []v1.VolumeHealthCondition{{Status: v1.VolumeHealthDegraded, Reason: "R"}}}}
	s := ToAPIStatus(pod, st, t0, StatusInputs{
		Rejected:     func() (string, string, bool) { return "VolumeAttachmentLimitExceeded", "limit", true },
		VolumeHealth: func() []v1.PodVolumeHealth { return health },
	})
	if s.Phase != v1.PodFailed || s.Reason != "VolumeAttachmentLimitExceeded" || s.Message != "Pod was rejected: limit" {
		t.Errorf("phase %s reason %q message %q", s.Phase, s.Reason, s.Message)
	}
	if len(s.VolumeHealth) != 1 || s.VolumeHealth[0].Name != "data" {
		t.Errorf("volumeHealth %+v", s.VolumeHealth)
	}
	s = ToAPIStatus(pod, st, t0, StatusInputs{Rejected: func() (string, string, bool) { return "", "", false }})
	if s.Phase == v1.PodFailed || s.VolumeHealth != nil {
		t.Errorf("not rejected: phase %s, volumeHealth %v", s.Phase, s.VolumeHealth)
	}
}
