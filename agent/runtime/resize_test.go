package runtime

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func resizePod() *v1.Pod {
	q := resource.MustParse
	pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{
		{Name: "up", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: q("200m")},
			Limits: v1.ResourceList{v1.ResourceCPU: q("400m"), v1.ResourceMemory: q("128Mi")}}},
		{Name: "down", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: q("100m")},
			Limits: v1.ResourceList{v1.ResourceCPU: q("100m"), v1.ResourceMemory: q("32Mi")}}},
		{Name: "restart", Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: q("64Mi")}},
			ResizePolicy: []v1.ContainerResizePolicy{{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}}},
		{Name: "same", Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: q("16Mi")}}},
	}}}
	pod.UID = "p"
	return pod
}

func TestComputeResize(t *testing.T) {
	q := resource.MustParse
	pod := resizePod()
	given := map[string]v1.ResourceRequirements{
		"up": {Requests: v1.ResourceList{v1.ResourceCPU: q("100m")},
			Limits: v1.ResourceList{v1.ResourceCPU: q("200m"), v1.ResourceMemory: q("64Mi")}},
		"down": {Requests: v1.ResourceList{v1.ResourceCPU: q("100m")},
			Limits: v1.ResourceList{v1.ResourceCPU: q("300m"), v1.ResourceMemory: q("64Mi")}},
		"restart": {Limits: v1.ResourceList{v1.ResourceMemory: q("32Mi")}},
		"same":    {Limits: v1.ResourceList{v1.ResourceMemory: q("16Mi")}},
	}
	st := &PodStatus{Sandboxes: []*SandboxStatus{{ID: "sb", Ready: true}}}
	for _, n := range []string{"up", "down", "restart", "same"} {
		st.Containers = append(st.Containers, &ContainerStatus{ID: "id-" + n, SandboxID: "sb", Name: n, State: ContainerRunning})
	}
	look := func(n string) (v1.ResourceRequirements, bool) { r, ok := given[n]; return r, ok }
	a := PodActions{ContainersToKill: map[string]KillInfo{}}
	plan := ComputeResize(pod, st, look, &a)
	names := func(us []ContainerResize) (out []string) {
		for _, u := range us {
			out = append(out, u.Name)
		}
		return out
	}
	if got := names(plan.Memory); len(got) != 2 || got[0] != "down" || got[1] != "up" {
		t.Errorf("memory updates %v: want the decrease (down) before the increase (up)", got)
	}
	if got := names(plan.CPU); len(got) != 2 || got[0] != "down" || got[1] != "up" {
		t.Errorf("cpu updates %v: want down then up", got)
	}
	if k, ok := a.ContainersToKill["id-restart"]; !ok || k.Reason != KillReasonResize || k.Message != "Container restart resize requires restart" {
		t.Errorf("restart container: %+v", a.ContainersToKill)
	}
	if len(a.ContainersToStart) != 1 || a.ContainersToStart[0] != 2 || !plan.Pod {
		t.Errorf("start %v pod %v", a.ContainersToStart, plan.Pod)
	}
	if !ResizeInProgress(pod, st, look) {
		t.Error("not in progress before actuation")
	}
	for n := range given {
		c := pod.Spec.Containers[map[string]int{"up": 0, "down": 1, "restart": 2, "same": 3}[n]]
		given[n] = ActuatedRequirements(pod, &c)
	}
	if ResizeInProgress(pod, st, look) {
		t.Error("in progress once every container has its allocation")
	}
	a = PodActions{ContainersToKill: map[string]KillInfo{}}
	if plan := ComputeResize(pod, st, look, &a); !plan.Empty() || len(a.ContainersToKill) > 0 {
		t.Errorf("plan %+v after actuation", plan)
	}
}

func TestStatusResources(t *testing.T) {
	pod := resizePod()
	c := &pod.Spec.Containers[0]
	none := func(string) (v1.ResourceRequirements, bool) { return v1.ResourceRequirements{}, false }
	if got := statusResources(c, &ContainerStatus{State: ContainerExited}, none); got.Limits.Cpu().MilliValue() != 400 {
		t.Errorf("exited container: %v, want the allocated limits", got)
	}
	// The runtime's values win for a running container: shares 205 →
	// 201m (kubelet's rounding up), quota 30000/100000 → 300m.
	cur := &ContainerStatus{State: ContainerRunning, Resources: &runtimeapi.LinuxContainerResources{
		CpuShares: 205, CpuQuota: 30000, CpuPeriod: 100000, MemoryLimitInBytes: 64 << 20}}
	got := statusResources(c, cur, none)
	if got.Requests.Cpu().MilliValue() != 201 || got.Limits.Cpu().MilliValue() != 300 || got.Limits.Memory().Value() != 64<<20 {
		t.Errorf("running container: %v", got)
	}
}

func TestComputeResizeWithoutRecord(t *testing.T) {
	pod := resizePod()
	st := &PodStatus{Sandboxes: []*SandboxStatus{{ID: "sb", Ready: true}},
		Containers: []*ContainerStatus{{ID: "id-restart", SandboxID: "sb", Name: "restart", State: ContainerRunning}}}
	a := PodActions{ContainersToKill: map[string]KillInfo{}}
	plan := ComputeResize(pod, st, func(string) (v1.ResourceRequirements, bool) { return v1.ResourceRequirements{}, false }, &a)
	if len(a.ContainersToKill) != 0 || len(plan.Memory) != 1 || plan.Memory[0].Name != "restart" {
		t.Errorf("no record: kills %v, memory updates %+v; want one in-place update", a.ContainersToKill, plan.Memory)
	}
}
