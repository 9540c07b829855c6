package runtime

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kernelet/kernelet/cgroups"
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

// plrPod is a running pod with pod-level resources: "own" has limits of
// its own, "shared" none (it runs with the pod-level limits), "restart"
// none either and restarts for cpu.
func plrPod(cpuLimit, memLimit string) *v1.Pod {
	q := resource.MustParse
	return &v1.Pod{Spec: v1.PodSpec{
		Resources: &v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: q("100m"), v1.ResourceMemory: q("32Mi")},
			Limits:   v1.ResourceList{v1.ResourceCPU: q(cpuLimit), v1.ResourceMemory: q(memLimit)}},
		Containers: []v1.Container{
			{Name: "own", Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: q("50m"), v1.ResourceMemory: q("16Mi")}}},
			{Name: "shared"},
			{Name: "restart", ResizePolicy: []v1.ContainerResizePolicy{{ResourceName: v1.ResourceCPU, RestartPolicy: v1.RestartContainer}}},
		}}}
}

func TestComputeResizePodLevel(t *testing.T) {
	before, after := plrPod("200m", "128Mi"), plrPod("400m", "64Mi")
	st := &PodStatus{Sandboxes: []*SandboxStatus{{ID: "sb", Ready: true}}}
	given := map[string]v1.ResourceRequirements{}
	for i, c := range before.Spec.Containers {
		st.Containers = append(st.Containers, &ContainerStatus{ID: "id-" + c.Name, SandboxID: "sb", Name: c.Name, State: ContainerRunning})
		given[c.Name] = ActuatedRequirements(before, &before.Spec.Containers[i])
	}
	look := func(n string) (v1.ResourceRequirements, bool) { r, ok := given[n]; return r, ok }
	a := PodActions{ContainersToKill: map[string]KillInfo{}}
	plan := ComputeResize(after, st, look, &a)
	// "own" keeps its limits; "shared" follows the pod-level limits in
	// place (memory down, cpu up); "restart" restarts for its cpu.
	if len(plan.Memory) != 1 || plan.Memory[0].Name != "shared" || plan.Memory[0].Desired.MemoryLimit != 64<<20 {
		t.Errorf("memory updates %+v: want shared to 64Mi", plan.Memory)
	}
	if len(plan.CPU) != 1 || plan.CPU[0].Name != "shared" || plan.CPU[0].Desired.CPULimit != 400 {
		t.Errorf("cpu updates %+v: want shared to 400m", plan.CPU)
	}
	if _, ok := a.ContainersToKill["id-restart"]; !ok || len(a.ContainersToKill) != 1 {
		t.Errorf("kills %v: want restart only", a.ContainersToKill)
	}

	cases := []struct {
		name     string
		pod      *v1.Pod
		actuated *v1.ResourceRequirements
		a        PodActions
		resize   bool
	}{
		{"limits changed", after, before.Spec.Resources, PodActions{}, true},
		{"same", after, after.Spec.Resources, PodActions{}, false},
		{"no record", after, nil, PodActions{}, true},
		{"no pod-level resources", resizePod(), nil, PodActions{}, false},
		{"pod-level resources added", after, nil, PodActions{}, true},
		{"sandbox re-created", after, before.Spec.Resources, PodActions{CreateSandbox: true}, false},
		{"pod killed", after, before.Spec.Resources, PodActions{KillPod: true}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := PodLevelResize(tc.pod, st, &tc.a, tc.actuated); got != tc.resize {
				t.Errorf("PodLevelResize = %v, want %v", got, tc.resize)
			}
		})
	}
	if !PodLevelResizeInProgress(after, before.Spec.Resources, true) || PodLevelResizeInProgress(after, after.Spec.Resources, true) {
		t.Error("in progress: want true before the pod cgroup has the new limits, false after")
	}
	if PodLevelResizeInProgress(after, nil, false) {
		t.Error("in progress without a record (kubelet's rule: not in progress)")
	}
}

func TestPodStatusResources(t *testing.T) {
	q := resource.MustParse
	pod := plrPod("400m", "64Mi")
	pod.Status.Phase = v1.PodRunning
	// The cgroup was given 205 shares (→ 201m), a 300m quota, 48Mi.
	s := cgroups.CgroupSettings{CPUShares: 205, CPUQuota: 30000, CPUPeriod: 100000, MemoryLimit: 48 << 20}
	got := PodStatusResources(pod, s)
	if got.Requests.Cpu().MilliValue() != 201 || got.Limits.Cpu().MilliValue() != 300 || got.Limits.Memory().Value() != 48<<20 {
		t.Errorf("running: %v", got)
	}
	if got.Requests.Memory().Value() != 32<<20 {
		t.Errorf("running: memory request %v, want the allocated 32Mi", got.Requests.Memory())
	}
	// Shares that round back to the allocated request keep it as written.
	s = cgroups.CgroupSettings{CPUShares: cgroups.CPUShares(100), CPUQuota: cgroups.NoLimit, CPUPeriod: 100000, MemoryLimit: cgroups.NoLimit}
	pod.Status.Resources = &v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: q("250m")}}
	got = PodStatusResources(pod, s)
	if c := got.Requests[v1.ResourceCPU]; c.String() != "100m" {
		t.Errorf("cpu request %s, want 100m", c.String())
	}
	if got.Limits.Cpu().MilliValue() != 250 || got.Limits.Memory().Value() != 64<<20 {
		t.Errorf("no quota, no memory limit: %v, want the reported 250m kept and the allocated 64Mi", got.Limits)
	}
	// Not running: the allocated pod-level requirements, effective.
	pod.Status.Phase = v1.PodPending
	got = PodStatusResources(pod, s)
	if got.Requests.Cpu().MilliValue() != 100 || got.Limits.Cpu().MilliValue() != 400 || got.Limits.Memory().Value() != 64<<20 {
		t.Errorf("pending: %v", got)
	}
	// A pod without pod-level resources: its containers' sums.
	plain := resizePod()
	plain.Status.Phase = v1.PodPending
	if got := PodStatusResources(plain, s); got.Requests.Cpu().MilliValue() != 300 {
		t.Errorf("containers' requests %v, want 300m", got.Requests)
	}
}

// TestComputeResizeInitContainer: a running regular init container is
// resized in place while it holds the pod's initialization
// (InPlacePodVerticalScalingInitContainers), and left alone once an app
// container of the sandbox exists; a sidecar is resized either way.
func TestComputeResizeInitContainer(t *testing.T) {
	q := resource.MustParse
	res := func(cpu, mem string) v1.ResourceRequirements {
		l := v1.ResourceList{v1.ResourceCPU: q(cpu), v1.ResourceMemory: q(mem)}
		return v1.ResourceRequirements{Requests: l, Limits: l.DeepCopy()}
	}
	always := v1.ContainerRestartPolicyAlways
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{
			{Name: "sidecar", RestartPolicy: &always, Resources: res("200m", "64Mi")},
			{Name: "init", Resources: res("200m", "64Mi")},
		},
		Containers: []v1.Container{{Name: "app", Resources: res("100m", "32Mi")}},
	}}
	given := map[string]v1.ResourceRequirements{"sidecar": res("100m", "32Mi"), "init": res("100m", "32Mi"), "app": res("100m", "32Mi")}
	look := func(n string) (v1.ResourceRequirements, bool) { r, ok := given[n]; return r, ok }
	running := func(names ...string) *PodStatus {
		st := &PodStatus{Sandboxes: []*SandboxStatus{{ID: "sb", Ready: true}}}
		for _, n := range names {
			st.Containers = append(st.Containers, &ContainerStatus{ID: "id-" + n, SandboxID: "sb", Name: n, State: ContainerRunning})
		}
		return st
	}
	names := func(us []ContainerResize) (out []string) {
		for _, u := range us {
			out = append(out, u.Name)
		}
		return out
	}
	for name, tc := range map[string]struct {
		st   *PodStatus
		want []string
	}{
		"initializing: the regular init container and the sidecar": {running("sidecar", "init"), []string{"sidecar", "init"}},
		"initialized: the sidecar only":                            {running("sidecar", "init", "app"), []string{"sidecar"}},
	} {
		t.Run(name, func(t *testing.T) {
			a := PodActions{ContainersToKill: map[string]KillInfo{}}
			plan := ComputeResize(pod, tc.st, look, &a)
			if got := names(plan.Memory); !slices.Equal(got, tc.want) {
				t.Errorf("memory updates %v, want %v", got, tc.want)
			}
			if got := names(plan.CPU); !slices.Equal(got, tc.want) {
				t.Errorf("cpu updates %v, want %v", got, tc.want)
			}
			if !plan.Pod || len(a.ContainersToKill) > 0 || len(a.InitContainersToStart) > 0 {
				t.Errorf("plan %+v, actions %+v: want in place, the pod cgroup resized", plan, a)
			}
		})
	}
	// Only the regular init container is behind its allocation: in progress
	// while the pod initializes, not once it is initialized.
	given["sidecar"] = res("200m", "64Mi")
	if !ResizeInProgress(pod, running("sidecar", "init"), look) {
		t.Error("an initializing pod's init container behind its allocation: not in progress")
	}
	if ResizeInProgress(pod, running("sidecar", "init", "app"), look) {
		t.Error("an initialized pod: in progress for its regular init container")
	}
	given["init"] = res("200m", "64Mi")
	if ResizeInProgress(pod, running("sidecar", "init"), look) {
		t.Error("in progress once the init container has its allocation")
	}
}
