package podconfig

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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

// A container with CPUs of its own runs without a CFS quota (kubelet's
// DisableCPUQuotaWithExclusiveCPUs), its pod's sandbox too.
func TestExclusiveCPUsNoQuota(t *testing.T) {
	r := v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("64Mi")}
	pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: r, Limits: r}}}}}
	c := &pod.Spec.Containers[0]
	if q := ContainerResources(pod, c, ContainerOptions{}).CpuQuota; q != 100000 {
		t.Fatalf("quota %d without exclusive CPUs, want 100000", q)
	}
	if q := ContainerResources(pod, c, ContainerOptions{CPUSet: "1", ExclusiveCPUs: true}).CpuQuota; q != 0 {
		t.Fatalf("quota %d with exclusive CPUs, want none", q)
	}
	if q := sandboxResources(pod, CPUOptions{}, false).CpuQuota; q != 100000 {
		t.Fatalf("sandbox quota %d, want 100000", q)
	}
	if q := sandboxResources(pod, CPUOptions{}, true).CpuQuota; q != 0 {
		t.Fatalf("sandbox quota %d with exclusive CPUs, want none", q)
	}
}
