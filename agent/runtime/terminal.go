package runtime

import (
	v1 "k8s.io/api/core/v1"

	"github.com/kernelet/kernelet/agent/qos"
	"github.com/kernelet/kernelet/internal/podutil"
)

// The terminated state kubelet gives a container whose end it did not see
// when the pod terminated.
const (
	ReasonContainerStatusUnknown  = "ContainerStatusUnknown"
	MessageContainerStatusUnknown = "The container could not be located when the pod was terminated"
)

// TerminalStatus is the final status of a pod the node terminated (deleted
// or evicted; st is its status once its containers stopped), as kubelet
// reports it: nothing restarts any more, so once no container runs the
// phase is Succeeded when every container exited 0 and Failed otherwise,
// whatever the restart policy; once the pod has initialized, a container
// without a terminated state is reported terminated with kubelet's
// ContainerStatusUnknown (exit 137), and so is every init container that
// started (all but the suffix that never left Waiting); a pod still
// Pending or Running ends Failed. Static pods keep their phase, as
// kubelet leaves them.
func TerminalStatus(pod *v1.Pod, st v1.PodStatus) v1.PodStatus {
	out := *st.DeepCopy()
	static := podutil.IsStatic(pod)
	if phase, ok := terminalPhase(pod, out); ok && !static {
		out.Phase = phase
	}
	if podInitialized(pod, out) {
		unknownTerminated(out.ContainerStatuses)
	}
	unknownTerminated(startedInits(out.InitContainerStatuses))
	if !static && !podutil.IsTerminal(out.Phase) {
		out.Phase = v1.PodFailed
	}
	if podutil.IsTerminal(out.Phase) {
		_, reason, _ := Readiness(out.Phase, nil)
		for i, c := range out.Conditions {
			switch {
			case c.Type == v1.ContainersReady || c.Type == v1.PodReady || c.Type == v1.AllContainersRestarting:
				out.Conditions[i].Status, out.Conditions[i].Reason, out.Conditions[i].Message = v1.ConditionFalse, reason, ""
			case c.Type == v1.PodInitialized && out.Phase == v1.PodSucceeded:
				out.Conditions[i].Status, out.Conditions[i].Reason, out.Conditions[i].Message = v1.ConditionTrue, reason, ""
			}
		}
	}
	return out
}

// terminalPhase is the phase of a terminated pod whose containers are all
// stopped (ok false while one runs or has no status): Succeeded when each
// exited 0, else Failed. Sidecars do not count.
func terminalPhase(pod *v1.Pod, st v1.PodStatus) (v1.PodPhase, bool) {
	stopped, succeeded := 0, 0
	for _, cs := range st.InitContainerStatuses {
		if cs.State.Running != nil && isSidecar(pod, cs.Name) {
			return "", false
		}
	}
	for _, cs := range st.ContainerStatuses {
		switch {
		case cs.State.Running != nil:
			return "", false
		case cs.State.Terminated != nil:
			stopped++
			if cs.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case cs.LastTerminationState.Terminated != nil:
			stopped++
		default:
			return "", false
		}
	}
	if stopped == 0 || stopped != len(pod.Spec.Containers) {
		return "", false
	}
	if stopped == succeeded {
		return v1.PodSucceeded, true
	}
	return v1.PodFailed, true
}

// podInitialized tells, as kubelet, whether pod with status st ever got
// past its init containers: it has none, an app container left Waiting or
// ran before, or the last init container completed (a sidecar: started).
func podInitialized(pod *v1.Pod, st v1.PodStatus) bool {
	if len(pod.Spec.InitContainers) == 0 {
		return true
	}
	for _, cs := range st.ContainerStatuses {
		if cs.LastTerminationState.Terminated != nil || cs.State.Waiting == nil {
			return true
		}
	}
	inits := st.InitContainerStatuses
	if len(inits) == 0 {
		return false
	}
	last := inits[len(inits)-1]
	if isSidecar(pod, last.Name) {
		return last.State.Running != nil && last.Started != nil && *last.Started
	}
	for _, t := range []*v1.ContainerStateTerminated{last.State.Terminated, last.LastTerminationState.Terminated} {
		if t != nil && t.ExitCode == 0 {
			return true
		}
	}
	return false
}

// startedInits are the init container statuses but the trailing ones that
// never left Waiting (at least the first, as kubelet).
func startedInits(inits []v1.ContainerStatus) []v1.ContainerStatus {
	for i := len(inits) - 1; i >= 0; i-- {
		if inits[i].State.Waiting == nil || inits[i].LastTerminationState.Terminated != nil {
			return inits[:i+1]
		}
	}
	if len(inits) > 0 {
		return inits[:1]
	}
	return nil
}

// unknownTerminated gives each status without a terminated state
// kubelet's ContainerStatusUnknown termination.
func unknownTerminated(list []v1.ContainerStatus) {
	for i := range list {
		if list[i].State.Terminated != nil {
			continue
		}
		list[i].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
			Reason: ReasonContainerStatusUnknown, Message: MessageContainerStatusUnknown, ExitCode: 137}}
		list[i].Ready = false
	}
}

func isSidecar(pod *v1.Pod, name string) bool {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return qos.IsRestartableInit(&pod.Spec.InitContainers[i])
		}
	}
	return false
}
