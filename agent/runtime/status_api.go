package runtime

import (
	"fmt"
	"math"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/kernelet/kernelet/agent/qos"
	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/internal/podutil"
)

// StatusInputs are what ToAPIStatus needs besides the pod and its runtime
// status.
type StatusInputs struct {
	// Waiting holds why containers that should run do not (SyncResult's
	// Waiting), by container name.
	Waiting map[string]Waiting
	// Ready tells the readiness of running containers; nil: ready =
	// running.
	Ready ReadyFunc
	// Started tells whether running containers passed their startup
	// probe; nil: started = running. A container not started is not
	// ready.
	Started ReadyFunc
	// HostIPs are the node's addresses; hostNetwork pods get them as pod
	// IPs too.
	HostIPs []string
	// RuntimeName is the container ID scheme; "" means containerd.
	RuntimeName string
	// Actuated gives what each running container was given (the
	// Manager's record, for containerStatuses[].resources when the runtime
	// does not report them); nil: no resources and allocatedResources are
	// reported (a node that does not resize in place).
	Actuated func(name string) (v1.ResourceRequirements, bool)
	// ResourcesStatus gives the health of the devices a regular container
	// holds (its allocatedResourcesStatus, ResourceHealthStatus); nil:
	// none reported.
	ResourcesStatus func(container string) []v1.ResourceStatus
	// PodCgroup gives the settings the pod cgroup was given (the
	// Manager's PodCgroupSettings), for the pod-level status.resources and
	// status.allocatedResources (InPlacePodLevelResourcesVerticalScaling);
	// nil: neither is reported.
	PodCgroup func() cgroups.CgroupSettings
	// VolumeHealth gives the pod's status.volumeHealth (the CSI drivers'
	// NodeGetVolumeHealth; the CSIVolumeHealth gate); nil: none.
	VolumeHealth func() []v1.PodVolumeHealth
	// Rejected tells whether the node rejected the pod after admission
	// (kubelet's rejectPod: VolumeAttachmentLimitExceeded) and why: the
	// pod is then Failed with that reason and "Pod was rejected: " and
	// the message; nil: never.
	Rejected func() (reason, message string, rejected bool)
}

// ToAPIStatus converts the runtime's view of pod into its API status at
// now: phase, conditions, container, init and ephemeral container
// statuses, IPs.
// Condition transition times are now; the caller keeps the old ones when a
// condition did not change.
func ToAPIStatus(pod *v1.Pod, st *PodStatus, now time.Time, in StatusInputs) v1.PodStatus {
	if in.RuntimeName == "" {
		in.RuntimeName = "containerd"
	}
	t := metav1.NewTime(now)
	out := v1.PodStatus{QOSClass: qos.ToAPI(qos.Class(pod)), StartTime: pod.Status.StartTime}
	if out.StartTime == nil && len(st.Sandboxes) > 0 {
		oldest := metav1.NewTime(st.Sandboxes[len(st.Sandboxes)-1].CreatedAt)
		out.StartTime = &oldest
	}
	sb := st.Sandbox()
	setIPs(&out, pod, sb, in.HostIPs)

	// Containers stopped by a RestartAllContainers reset wait for it.
	reset := restartingAll(pod, st)
	initDone := true
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		cs := containerStatus(pod, c, st, in, ReasonPodInitializing, reset[c.Name])
		sidecar := qos.IsRestartableInit(c)
		if !sidecar && cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0 {
			cs.Ready = true // a regular init container that completed is ready, as kubelet reports it
		}
		out.InitContainerStatuses = append(out.InitContainerStatuses, cs)
		if !initContainerDone(cs, sidecar) {
			initDone = false
		}
	}
	pending := ReasonContainerCreating
	if !initDone {
		pending = ReasonPodInitializing
	}
	for i := range pod.Spec.Containers {
		cs := containerStatus(pod, &pod.Spec.Containers[i], st, in, pending, reset[pod.Spec.Containers[i].Name])
		if in.ResourcesStatus != nil {
			cs.AllocatedResourcesStatus = in.ResourcesStatus(cs.Name)
		}
		out.ContainerStatuses = append(out.ContainerStatuses, cs)
	}
	// Ephemeral containers: reported, never ready, no part of the phase
	// or of the conditions.
	for i := range pod.Spec.EphemeralContainers {
		c := (*v1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		cs := containerStatus(pod, c, st, in, ReasonContainerCreating, false)
		cs.Ready = false
		out.EphemeralContainerStatuses = append(out.EphemeralContainerStatuses, cs)
	}
	// App containers that ran prove that init finished, even when the init
	// containers are gone.
	for _, cs := range out.ContainerStatuses {
		if cs.State.Running != nil || cs.State.Terminated != nil || cs.LastTerminationState.Terminated != nil {
			initDone = true
		}
	}
	out.Phase = podPhase(pod, out.InitContainerStatuses, out.ContainerStatuses, initDone, reset)
	if in.VolumeHealth != nil {
		out.VolumeHealth = in.VolumeHealth()
	}

	cond := func(typ v1.PodConditionType, ok bool, reason, msg string) v1.PodCondition {
		c := v1.PodCondition{Type: typ, Status: v1.ConditionTrue, LastTransitionTime: t}
		if !ok {
			c.Status, c.Reason, c.Message = v1.ConditionFalse, reason, msg
		}
		return c
	}
	sandboxReady := sb != nil && sb.Ready
	out.Conditions = append(out.Conditions, cond(v1.PodReadyToStartContainers, sandboxReady, "", ""))
	var notInit []string
	for i, cs := range out.InitContainerStatuses {
		if !initDone && !initContainerDone(cs, qos.IsRestartableInit(&pod.Spec.InitContainers[i])) {
			notInit = append(notInit, cs.Name)
		}
	}
	initialized := cond(v1.PodInitialized, initDone, "ContainersNotInitialized",
		fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(notInit, " ")))
	if out.Phase == v1.PodSucceeded {
		initialized = v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionTrue, Reason: "PodCompleted", LastTransitionTime: t}
	}
	out.Conditions = append(out.Conditions, initialized)
	ready, reason, msg := Readiness(out.Phase, UnreadyContainers(pod, &out))
	out.Conditions = append(out.Conditions,
		cond(v1.ContainersReady, ready, reason, msg),
		cond(v1.PodReady, ready, reason, msg),
		v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: t})
	if podutil.MayRestartAll(&pod.Spec) {
		out.Conditions = append(out.Conditions, allContainersRestarting(pod, st, out.Phase, now))
	}
	if in.PodCgroup != nil {
		out.Resources = PodStatusResources(pod, in.PodCgroup())
		out.AllocatedResources = resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	}
	if in.Rejected != nil {
		if reason, msg, ok := in.Rejected(); ok {
			out = WithFailed(out, reason, "Pod was rejected: "+msg, now)
		}
	}
	return out
}

// PodStatusResources are the pod-level status.resources kubelet v1.37
// reports for pod (at its allocated requirements), given the settings s
// its pod cgroup was given: for a pod that is not Running (its status so
// far), the allocated pod-level requirements with the pod's effective
// requests and limits; for a Running pod, the allocated pod-level
// requirements with the cgroup's values in place — cpu request from the
// shares (unless both it and the allocation are at or below the 2-share
// floor), cpu limit from the quota (unless both are at or below 10m),
// memory limit — and, without a pod-level memory request, the pod's
// effective memory request. A value the cgroup does not set (no quota, no
// memory limit) keeps the one already reported. kernelet reports the
// settings it wrote, not a read-back (kubelet reads the files; an
// unlimited memory.limit_in_bytes there shows as a limit of 2^63 − 4096
// bytes on cgroup v1, which kernelet does not report).
func PodStatusResources(pod *v1.Pod, s cgroups.CgroupSettings) *v1.ResourceRequirements {
	opts := resourcehelper.PodResourcesOptions{}
	if pod.Status.Phase != v1.PodRunning {
		out := &v1.ResourceRequirements{}
		if pod.Spec.Resources != nil {
			out = pod.Spec.Resources.DeepCopy()
		}
		out.Requests = resourcehelper.PodRequests(pod, opts)
		out.Limits = resourcehelper.PodLimits(pod, opts)
		return out
	}
	out := &v1.ResourceRequirements{}
	if pod.Spec.Resources != nil {
		out = pod.Spec.Resources.DeepCopy()
	}
	if out.Requests == nil {
		out.Requests = v1.ResourceList{}
	}
	if out.Limits == nil {
		out.Limits = v1.ResourceList{}
	}
	var old v1.ResourceRequirements
	if pod.Status.Resources != nil {
		old = *pod.Status.Resources
	}
	keep := func(into, from v1.ResourceList, name v1.ResourceName) {
		if q, ok := from[name]; ok {
			into[name] = q.DeepCopy()
		}
	}
	if s.CPUShares >= minShares {
		milli := int64(math.Ceil(float64(s.CPUShares*1000) / 1024))
		if milli > minShares || out.Requests.Cpu().MilliValue() > minShares {
			if milli != out.Requests.Cpu().MilliValue() {
				out.Requests[v1.ResourceCPU] = *resource.NewMilliQuantity(milli, resource.DecimalSI)
			}
		}
	} else {
		keep(out.Requests, old.Requests, v1.ResourceCPU)
	}
	if _, ok := out.Requests[v1.ResourceMemory]; !ok {
		keep(out.Requests, resourcehelper.PodRequests(pod, opts), v1.ResourceMemory)
	}
	if s.CPUQuota != cgroups.NoLimit && s.CPUQuota > 0 && s.CPUPeriod > 0 {
		lim := resource.NewMilliQuantity(s.CPUQuota*1000/int64(s.CPUPeriod), resource.DecimalSI)
		if lim.MilliValue() > minMilliCPULimit || out.Limits.Cpu().MilliValue() > minMilliCPULimit {
			out.Limits[v1.ResourceCPU] = *lim
		}
	} else {
		keep(out.Limits, old.Limits, v1.ResourceCPU)
	}
	if s.MemoryLimit != cgroups.NoLimit && s.MemoryLimit > 0 {
		out.Limits[v1.ResourceMemory] = *resource.NewQuantity(s.MemoryLimit, resource.BinarySI)
	} else {
		keep(out.Limits, old.Limits, v1.ResourceMemory)
	}
	return out
}

// setIPs sets the host and pod IPs of out, the status of pod whose
// newest sandbox is sb: a hostNetwork pod has the node's.
func setIPs(out *v1.PodStatus, pod *v1.Pod, sb *SandboxStatus, hostIPs []string) {
	for _, ip := range hostIPs {
		out.HostIPs = append(out.HostIPs, v1.HostIP{IP: ip})
	}
	if len(hostIPs) > 0 {
		out.HostIP = hostIPs[0]
	}
	var podIPs []string
	switch {
	case pod.Spec.HostNetwork:
		podIPs = hostIPs
	case sb != nil:
		podIPs = sb.IPs
	}
	for _, ip := range podIPs {
		out.PodIPs = append(out.PodIPs, v1.PodIP{IP: ip})
	}
	if len(podIPs) > 0 {
		out.PodIP = podIPs[0]
	}
}

// UnreadyContainers are the containers that keep a pod from being ready,
// as kubelet counts them: its sidecars (restartable init containers) and
// its containers whose status is not ready, in that order.
func UnreadyContainers(pod *v1.Pod, st *v1.PodStatus) []string {
	sidecar := map[string]bool{}
	for i := range pod.Spec.InitContainers {
		if qos.IsRestartableInit(&pod.Spec.InitContainers[i]) {
			sidecar[pod.Spec.InitContainers[i].Name] = true
		}
	}
	var unready []string
	for _, cs := range st.InitContainerStatuses {
		if sidecar[cs.Name] && !cs.Ready {
			unready = append(unready, cs.Name)
		}
	}
	for _, cs := range st.ContainerStatuses {
		if !cs.Ready {
			unready = append(unready, cs.Name)
		}
	}
	return unready
}

// Readiness is the status, reason and message of the ContainersReady and
// Ready conditions (before readiness gates) of a pod in phase with the
// unready containers given: kubelet's ContainersNotReady, PodCompleted and
// PodFailed.
func Readiness(phase v1.PodPhase, unready []string) (ready bool, reason, msg string) {
	switch phase {
	case v1.PodSucceeded:
		return false, "PodCompleted", ""
	case v1.PodFailed:
		return false, "PodFailed", ""
	}
	if len(unready) == 0 {
		return true, "", ""
	}
	return false, "ContainersNotReady", fmt.Sprintf("containers with unready status: [%s]", strings.Join(unready, " "))
}

// terminated converts an exited container.
func terminated(c *ContainerStatus, scheme string) *v1.ContainerStateTerminated {
	reason := c.Reason
	if reason == "" {
		reason = ReasonCompleted
		if c.ExitCode != 0 {
			reason = ReasonError
		}
	}
	return &v1.ContainerStateTerminated{
		ExitCode: c.ExitCode, Reason: reason, Message: c.Message,
		StartedAt: metav1.NewTime(c.StartedAt), FinishedAt: metav1.NewTime(c.FinishedAt),
		ContainerID: scheme + "://" + c.ID,
	}
}

// containerStatus is the API status of spec container c.
// pending is the Waiting reason of a container that never ran; resetting
// says that c's newest instance exited before its pod's RestartAllContainers
// reset (restartingAll): it waits to run again, with that exit as its last
// state and its restart count one up, as kubelet reports it.
func containerStatus(pod *v1.Pod, c *v1.Container, st *PodStatus, in StatusInputs, pending string, resetting bool) v1.ContainerStatus {
	out := containerState(pod, c, st, in, pending, resetting)
	var cur *ContainerStatus
	if hist := st.containersOf(c.Name); len(hist) > 0 {
		cur = hist[0]
	}
	out.VolumeMounts = volumeMountStatuses(pod, c, cur)
	if in.Actuated != nil {
		out.AllocatedResources = c.Resources.Requests
		out.Resources = statusResources(c, cur, in.Actuated)
	}
	return out
}

// volumeMountStatuses are c's volume mounts as kubelet reports them: name,
// path, read-only, and for read-only mounts the recursive read-only mode
// (Disabled: kernelet mounts read-only volumes non-recursively and refuses
// Enabled); an image volume's mount carries the image the runtime mounted
// (cur's CRI status mount at that path; none before the container exists).
func volumeMountStatuses(pod *v1.Pod, c *v1.Container, cur *ContainerStatus) []v1.VolumeMountStatus {
	var out []v1.VolumeMountStatus
	images := map[string]bool{}
	for _, v := range pod.Spec.Volumes {
		if v.Image != nil {
			images[v.Name] = true
		}
	}
	for _, vm := range c.VolumeMounts {
		s := v1.VolumeMountStatus{Name: vm.Name, MountPath: vm.MountPath, ReadOnly: vm.ReadOnly}
		if vm.ReadOnly {
			rro := v1.RecursiveReadOnlyDisabled
			s.RecursiveReadOnly = &rro
		}
		if ref := cur.imageMount(vm.MountPath); images[vm.Name] && ref != "" {
			s.VolumeStatus = &v1.VolumeStatus{Image: &v1.ImageVolumeStatus{ImageRef: ref}}
		}
		out = append(out, s)
	}
	return out
}

func (c *ContainerStatus) imageMount(path string) string {
	if c == nil {
		return ""
	}
	return c.ImageMounts[path]
}

func containerState(pod *v1.Pod, c *v1.Container, st *PodStatus, in StatusInputs, pending string, resetting bool) v1.ContainerStatus {
	out := v1.ContainerStatus{Name: c.Name, Image: c.Image}
	f := false
	out.Started = &f
	hist := st.containersOf(c.Name)
	w, waiting := in.Waiting[c.Name]
	if len(hist) == 0 {
		if waiting {
			out.State.Waiting = &v1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}
		} else {
			out.State.Waiting = &v1.ContainerStateWaiting{Reason: pending}
		}
		return out
	}
	cur := hist[0]
	scheme := in.RuntimeName
	out.ContainerID = scheme + "://" + cur.ID
	out.ImageID = cur.ImageRef
	out.RestartCount = int32(cur.RestartCount)
	if len(hist) > 1 && hist[1].State == ContainerExited {
		out.LastTerminationState.Terminated = terminated(hist[1], scheme)
	} else if len(hist) == 1 {
		out.LastTerminationState.Terminated = keptLastState(pod, c.Name, out.ContainerID)
	}
	if resetting {
		out.RestartCount++
		out.LastTerminationState = v1.ContainerState{Terminated: terminated(cur, scheme)}
		out.State.Waiting = &v1.ContainerStateWaiting{Reason: ReasonRestartingAllContainers, Message: MessageRestartingAllContainers}
		if waiting {
			out.State.Waiting = &v1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}
		}
		return out
	}
	switch cur.State {
	case ContainerRunning:
		out.State.Running = &v1.ContainerStateRunning{StartedAt: metav1.NewTime(cur.StartedAt)}
		started := in.Started == nil || in.Started(pod.UID, c.Name, cur.ID)
		out.Started = &started
		out.Ready = started && (in.Ready == nil || in.Ready(pod.UID, c.Name, cur.ID))
	case ContainerExited:
		term := terminated(cur, scheme)
		if waiting {
			// It is to be restarted: waiting, with the exit as last state.
			out.State.Waiting = &v1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}
			out.LastTerminationState = v1.ContainerState{Terminated: term}
		} else {
			out.State.Terminated = term
		}
	default:
		reason := ReasonContainerCreating
		if waiting {
			out.State.Waiting = &v1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}
		} else {
			out.State.Waiting = &v1.ContainerStateWaiting{Reason: reason}
		}
	}
	return out
}

// keptLastState is the last state pod's status already reports for its
// container name when that status is of the same instance id: the
// runtime no longer holds the instance before it (the container garbage
// collector keeps only the newest dead one, which may be id itself), and
// what was reported of it stays, as kubelet keeps it. nil otherwise.
func keptLastState(pod *v1.Pod, name, id string) *v1.ContainerStateTerminated {
	for _, list := range [][]v1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses, pod.Status.EphemeralContainerStatuses} {
		for _, cs := range list {
			if cs.Name == name && cs.ContainerID == id && cs.LastTerminationState.Terminated != nil {
				return cs.LastTerminationState.Terminated.DeepCopy()
			}
		}
	}
	return nil
}

// initContainerDone tells whether an init container no longer holds the
// pod's initialization: a regular one succeeded, a sidecar started.
func initContainerDone(cs v1.ContainerStatus, sidecar bool) bool {
	if sidecar {
		return cs.Started != nil && *cs.Started
	}
	return cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0
}

// podPhase is kubelet's phase rule over the container statuses, with the
// restart decision of each exited container (podutil.ContainerShouldRestart:
// its restartPolicyRules, its restartPolicy, the pod's; a container waiting
// for its pod's RestartAllContainers reset, named in reset, restarts):
//   - a regular init container that failed and is not to be restarted
//     fails the pod; before initialization is done the pod is Pending;
//   - then Pending while a container waits without having run, Running
//     while one runs (a running sidecar counts);
//   - all exited: Running while one of them is to be restarted,
//     Succeeded when all succeeded, else Failed.
func podPhase(pod *v1.Pod, inits, ctrs []v1.ContainerStatus, initDone bool, reset map[string]bool) v1.PodPhase {
	spec := &pod.Spec
	if !initDone {
		for i, cs := range inits {
			ic := &spec.InitContainers[i]
			if qos.IsRestartableInit(ic) {
				continue
			}
			if t := lastExit(cs); t != nil && t.ExitCode != 0 && !reset[cs.Name] && !podutil.ContainerShouldRestart(ic, spec, t.ExitCode) {
				return v1.PodFailed
			}
		}
		return v1.PodPending
	}
	var running, waiting, stopped, final, succeeded int
	// A running sidecar keeps the pod Running; exited sidecars do not
	// count.
	for i, cs := range inits {
		if qos.IsRestartableInit(&spec.InitContainers[i]) && cs.State.Running != nil {
			running++
		}
	}
	for i, cs := range ctrs {
		switch {
		case cs.State.Running != nil:
			running++
		case cs.State.Waiting != nil && cs.LastTerminationState.Terminated == nil:
			waiting++
		default:
			t := lastExit(cs)
			if t == nil {
				continue
			}
			stopped++
			if t.ExitCode == 0 && cs.State.Terminated != nil {
				succeeded++
			}
			if !reset[cs.Name] && !podutil.ContainerShouldRestart(&spec.Containers[i], spec, t.ExitCode) {
				final++
			}
		}
	}
	switch {
	case waiting > 0:
		return v1.PodPending
	case running > 0:
		return v1.PodRunning
	case stopped > 0:
		switch {
		case final < stopped:
			return v1.PodRunning // one of them restarts
		case stopped == succeeded:
			return v1.PodSucceeded
		}
		return v1.PodFailed
	}
	return v1.PodPending
}

// lastExit is the termination a container status reports: its state when
// terminated, else (waiting to be restarted) its last state; nil when it
// never exited.
func lastExit(cs v1.ContainerStatus) *v1.ContainerStateTerminated {
	if t := cs.State.Terminated; t != nil {
		return t
	}
	if cs.State.Waiting != nil {
		return cs.LastTerminationState.Terminated
	}
	return nil
}

// Smallest values the kernel keeps apart (kubelet's cm.MinShares and
// cm.MinMilliCPULimit): below them the allocated value is reported.
const (
	minShares        = 2
	minMilliCPULimit = 10
)

// statusResources are a container's status.resources as kubelet reports
// them: the allocated requirements (c's), and for a running container the
// cpu and memory values it really has where its requirements set them —
// from the runtime when it reports them (shares → cpu request, quota and
// period → cpu limit, memory limit), else from what it was given.
func statusResources(c *v1.Container, cur *ContainerStatus, actuated func(string) (v1.ResourceRequirements, bool)) *v1.ResourceRequirements {
	out := c.Resources.DeepCopy()
	if cur == nil || cur.State != ContainerRunning {
		return out
	}
	var cpuReq, cpuLim, memLim, memReq *resource.Quantity
	if given, ok := actuated(c.Name); ok {
		if q, ok := given.Requests[v1.ResourceCPU]; ok {
			cpuReq = &q
		}
		if q, ok := given.Limits[v1.ResourceCPU]; ok {
			cpuLim = &q
		}
		if q, ok := given.Limits[v1.ResourceMemory]; ok {
			memLim = &q
		}
		if q, ok := given.Requests[v1.ResourceMemory]; ok {
			memReq = &q
		}
	}
	if r := cur.Resources; r != nil {
		if r.CpuPeriod > 0 && r.CpuQuota > 0 {
			cpuLim = resource.NewMilliQuantity(r.CpuQuota*1000/r.CpuPeriod, resource.DecimalSI)
		}
		if r.CpuShares >= minShares {
			cpuReq = resource.NewMilliQuantity(int64(math.Ceil(float64(r.CpuShares*1000)/1024)), resource.DecimalSI)
		}
		if r.MemoryLimitInBytes > 0 {
			memLim = resource.NewQuantity(r.MemoryLimitInBytes, resource.BinarySI)
		}
	}
	if out.Limits != nil {
		if cpuLim != nil && (cpuLim.MilliValue() > minMilliCPULimit || out.Limits.Cpu().MilliValue() > minMilliCPULimit) {
			out.Limits[v1.ResourceCPU] = cpuLim.DeepCopy()
		}
		if memLim != nil {
			out.Limits[v1.ResourceMemory] = memLim.DeepCopy()
		}
	}
	if out.Requests != nil {
		if cpuReq != nil && (cpuReq.MilliValue() > minShares || out.Requests.Cpu().MilliValue() > minShares) {
			out.Requests[v1.ResourceCPU] = cpuReq.DeepCopy()
		}
		if memReq != nil {
			out.Requests[v1.ResourceMemory] = memReq.DeepCopy()
		}
	}
	return out
}
