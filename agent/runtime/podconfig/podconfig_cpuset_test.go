package podconfig

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestContainerResourcesCPUSet(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}
	c := &pod.Spec.Containers[0]
	if got := ContainerResources(pod, c, ContainerOptions{}).CpusetCpus; got != "" {
		t.Fatalf("no CPU manager: cpuset %q, want none", got)
	}
	if got := ContainerResources(pod, c, ContainerOptions{CPUSet: "1,3"}).CpusetCpus; got != "1,3" {
		t.Fatalf("cpuset %q, want 1,3", got)
	}
}
