package runtime

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/agent/qos"
)

// Actuated keeps, per pod and container, the requirements the runtime was
// last given for a running container, and the pod-level requirements the
// pod cgroup was last given (allocation.Store over actuated_pods_state
// implements it): what an in-place resize compares the allocated
// requirements with.
type Actuated interface {
	Container(uid types.UID, name string) (v1.ResourceRequirements, bool)
	SetContainer(uid types.UID, name string, r v1.ResourceRequirements) error
	// PodLevel is the pod-level record; found is false for none (a pod
	// without pod-level resources, or a record never made).
	PodLevel(uid types.UID) (r *v1.ResourceRequirements, found bool)
	SetPodLevel(uid types.UID, r *v1.ResourceRequirements) error
}

// ActuatedRequirements are the requirements a container is created or
// updated with, as the actuated record keeps them: its own, limits
// completed by the pod-level limits (qos.EffectiveLimits).
func ActuatedRequirements(pod *v1.Pod, c *v1.Container) v1.ResourceRequirements {
	r := *c.Resources.DeepCopy()
	if lim := qos.EffectiveLimits(pod, c); len(lim) > 0 {
		r.Limits = lim
	}
	return r
}

// ResizeValues are the four resizable amounts of a container: cpu in
// milliCPU, memory in bytes, 0 where unset.
type ResizeValues struct {
	CPURequest, CPULimit, MemoryRequest, MemoryLimit int64
}

// valuesOf reads r as ResizeValues (requests as given, no defaulting:
// kubelet compares what the spec and the record say).
func valuesOf(r v1.ResourceRequirements) ResizeValues {
	return ResizeValues{
		CPURequest: r.Requests.Cpu().MilliValue(), CPULimit: r.Limits.Cpu().MilliValue(),
		MemoryRequest: r.Requests.Memory().Value(), MemoryLimit: r.Limits.Memory().Value(),
	}
}

// Requirements turns v back into requirements (units as kubelet writes
// them), for the container config of an update.
func (v ResizeValues) Requirements() v1.ResourceRequirements {
	r := v1.ResourceRequirements{Requests: v1.ResourceList{}, Limits: v1.ResourceList{}}
	put := func(l v1.ResourceList, name v1.ResourceName, val int64) {
		switch {
		case val == 0:
		case name == v1.ResourceCPU:
			l[name] = *resource.NewMilliQuantity(val, resource.DecimalSI)
		default:
			l[name] = *resource.NewQuantity(val, resource.BinarySI)
		}
	}
	put(r.Requests, v1.ResourceCPU, v.CPURequest)
	put(r.Requests, v1.ResourceMemory, v.MemoryRequest)
	put(r.Limits, v1.ResourceCPU, v.CPULimit)
	put(r.Limits, v1.ResourceMemory, v.MemoryLimit)
	return r
}

// ContainerResize is one running container updated in place.
type ContainerResize struct {
	Name string
	ID   string
	// Container is the spec (at the allocated requirements).
	Container *v1.Container
	// Current is what the container was given; Desired what it is
	// allocated. An update changes one resource and keeps the other's
	// current values.
	Current, Desired ResizeValues
}

// ResizePlan is the in-place part of a sync: the running containers to
// update, per resource, decreases first (kubelet's order), and whether the
// pod cgroup must follow.
type ResizePlan struct {
	Memory, CPU []ContainerResize
	// Pod is true when the pod cgroup must be resized: a container is
	// updated in place or restarted for its resize policy, or the
	// pod-level resources changed (PodLevel).
	Pod bool
	// PodLevel is true when the allocated pod-level requirements differ
	// from those the pod cgroup was given (PodLevelResize).
	PodLevel bool
}

// Empty tells whether the plan does nothing.
func (p ResizePlan) Empty() bool { return len(p.Memory) == 0 && len(p.CPU) == 0 && !p.Pod }

// KillReasonResize is the kill reason of a container whose resize policy
// asks for a restart.
const KillReasonResize = "Resize"

// ComputeResize adds the in-place resize of pod (at its allocated
// requirements) to the actions a of a sync from its runtime status st:
// each running app or sidecar container of the current sandbox, and the
// running regular init container of a pod not yet initialized, that a
// does not already kill is compared with what it was given (actuated; a
// container without a record counts as given nothing, so it is updated in
// place, never restarted);
// a resource whose resizePolicy is RestartContainer restarts it (killed
// and started again: "Container <name> resize requires restart"), other
// changes become in-place updates, ordered decreases first. Pure.
func ComputeResize(pod *v1.Pod, st *PodStatus, actuated func(name string) (v1.ResourceRequirements, bool), a *PodActions) ResizePlan {
	var plan ResizePlan
	if a.KillPod || a.CreateSandbox {
		return plan
	}
	sb := st.Sandbox()
	if sb == nil {
		return plan
	}
	consider := func(c *v1.Container, idx int, init bool) {
		cs := st.FindContainer(c.Name)
		if cs == nil || cs.State != ContainerRunning || cs.SandboxID != sb.ID {
			return
		}
		if _, killed := a.ContainersToKill[cs.ID]; killed {
			return
		}
		cur, recorded := actuated(c.Name)
		current, desired := valuesOf(cur), valuesOf(ActuatedRequirements(pod, c))
		if current == desired {
			return
		}
		// Without a record (a container started before records were kept)
		// the update is in place: it only restates what the container has.
		if recorded && resizeRestarts(c, current, desired) {
			a.ContainersToKill[cs.ID] = KillInfo{Name: c.Name, Reason: KillReasonResize,
				Message: fmt.Sprintf("Container %s resize requires restart", c.Name), Container: cs}
			if init {
				a.InitContainersToStart = append(a.InitContainersToStart, idx)
			} else {
				a.ContainersToStart = append(a.ContainersToStart, idx)
			}
			plan.Pod = true
			return
		}
		u := ContainerResize{Name: c.Name, ID: cs.ID, Container: c, Current: current, Desired: desired}
		if cur, want := memoryKey(current), memoryKey(desired); cur != want {
			plan.Memory = insertOrdered(plan.Memory, u, cur, want)
		}
		if cur, want := cpuKey(current), cpuKey(desired); cur != want {
			plan.CPU = insertOrdered(plan.CPU, u, cur, want)
		}
		plan.Pod = true
	}
	initialized := appCreated(pod, st, sb.ID)
	for i := range pod.Spec.InitContainers {
		if resizableInit(&pod.Spec.InitContainers[i], initialized) {
			consider(&pod.Spec.InitContainers[i], i, true)
		}
	}
	for i := range pod.Spec.Containers {
		consider(&pod.Spec.Containers[i], i, false)
	}
	return plan
}

// resizableInit tells whether a running init container c is resized in
// place (InPlacePodVerticalScalingInitContainers, GA and locked on in
// v1.37): a sidecar always, a regular init container while it holds the
// pod's initialization — kubelet leaves a regular init container alone
// once an app container of the pod exists (initialized).
func resizableInit(c *v1.Container, initialized bool) bool {
	return qos.IsRestartableInit(c) || !initialized
}

// appCreated tells whether an app container of pod exists in sandbox
// sandboxID: the pod was initialized there.
func appCreated(pod *v1.Pod, st *PodStatus, sandboxID string) bool {
	for i := range pod.Spec.Containers {
		for _, cs := range st.containersOf(pod.Spec.Containers[i].Name) {
			if cs.SandboxID == sandboxID {
				return true
			}
		}
	}
	return false
}

// podLevelValues are the pod-level cpu and memory requests and limits of
// r (zero for nil), as kubelet compares them.
func podLevelValues(r *v1.ResourceRequirements) ResizeValues {
	if r == nil {
		return ResizeValues{}
	}
	return valuesOf(*r)
}

// PodLevelResize tells whether a sync of pod (at its allocated
// requirements) with actions a must resize the pod cgroup for its
// pod-level resources (InPlacePodLevelResourcesVerticalScaling): its
// sandbox stays, and the allocated pod-level cpu or memory requests or
// limits differ from actuated, what the pod cgroup was given (nil: none,
// or no record — then a pod with pod-level resources is resized, which
// restates them). Pure.
func PodLevelResize(pod *v1.Pod, st *PodStatus, a *PodActions, actuated *v1.ResourceRequirements) bool {
	if a.KillPod || a.CreateSandbox || st.Sandbox() == nil {
		return false
	}
	return podLevelValues(pod.Spec.Resources) != podLevelValues(actuated)
}

// PodLevelResizeInProgress tells whether the pod cgroup has not yet been
// given the allocated pod-level requirements of pod: kubelet's rule, a pod
// without pod-level resources or without a record of them is not in
// progress.
func PodLevelResizeInProgress(pod *v1.Pod, actuated *v1.ResourceRequirements, found bool) bool {
	if pod.Spec.Resources == nil || !found || actuated == nil {
		return false
	}
	return podLevelValues(pod.Spec.Resources) != podLevelValues(actuated)
}

// resizeRestarts tells whether a resource that changes has the
// RestartContainer resize policy (the default is NotRequired).
func resizeRestarts(c *v1.Container, current, desired ResizeValues) bool {
	changed := map[v1.ResourceName]bool{
		v1.ResourceCPU:    current.CPURequest != desired.CPURequest || current.CPULimit != desired.CPULimit,
		v1.ResourceMemory: current.MemoryRequest != desired.MemoryRequest || current.MemoryLimit != desired.MemoryLimit,
	}
	for _, p := range c.ResizePolicy {
		if changed[p.ResourceName] && p.RestartPolicy == v1.RestartContainer {
			return true
		}
	}
	return false
}

// memoryKey and cpuKey are the value that orders an update: the limit
// when it changes, else the request (kubelet's).
func memoryKey(v ResizeValues) [2]int64 { return [2]int64{v.MemoryLimit, v.MemoryRequest} }
func cpuKey(v ResizeValues) [2]int64    { return [2]int64{v.CPULimit, v.CPURequest} }

// insertOrdered appends an increase and prepends a decrease.
func insertOrdered(list []ContainerResize, u ContainerResize, cur, want [2]int64) []ContainerResize {
	d, c := want[0], cur[0]
	if d == c {
		d, c = want[1], cur[1]
	}
	if d > c {
		return append(list, u)
	}
	return append([]ContainerResize{u}, list...)
}

// ResizeInProgress tells whether a running container of pod (at its
// allocated requirements) that ComputeResize resizes (an app or sidecar
// container, a regular init container before the pod was initialized) was
// not given what it is allocated:
// the PodResizeInProgress condition stays until it was.
func ResizeInProgress(pod *v1.Pod, st *PodStatus, actuated func(name string) (v1.ResourceRequirements, bool)) bool {
	check := func(c *v1.Container) bool {
		cs := st.FindContainer(c.Name)
		if cs == nil || cs.State != ContainerRunning {
			return false
		}
		cur, _ := actuated(c.Name)
		return valuesOf(cur) != valuesOf(ActuatedRequirements(pod, c))
	}
	initialized := true
	if sb := st.Sandbox(); sb != nil {
		initialized = appCreated(pod, st, sb.ID)
	}
	for i := range pod.Spec.InitContainers {
		if resizableInit(&pod.Spec.InitContainers[i], initialized) && check(&pod.Spec.InitContainers[i]) {
			return true
		}
	}
	for i := range pod.Spec.Containers {
		if check(&pod.Spec.Containers[i]) {
			return true
		}
	}
	return false
}
