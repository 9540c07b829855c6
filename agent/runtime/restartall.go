package runtime

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kernelet/kernelet/internal/podutil"
)

// RestartAllContainers (kubelet's RestartAllContainersOnContainerExits,
// beta and on by default since v1.36): a container that exits with a code
// matching one of its restartPolicyRules with action RestartAllContainers
// restarts the whole pod in place — every container of the pod is
// stopped (grace 0: no preStop hook, kubelet's 2 s minimum) and the pod
// starts again from its first init container, in the same sandbox, with
// the same volumes.
//
// Kubelet removes the pod's containers from the runtime and carries their
// restart counts and last states over in its status manager. kernelet
// keeps them and counts resets: every container it creates carries the
// pod's reset count then, its epoch (podconfig.AnnotationRestartAllEpoch).
// A trigger — an exited instance whose code makes it restart all
// (podutil.RestartsAll) — opens the epoch after its own; the pod is in
// the highest epoch its instances have or open (RestartAllEpoch). The
// instances of older epochs are out of its plan (SinceRestartAll) while
// they stay in its history: restart counts go on from them, and they are
// the last state of the new instances. A container the reset kills only
// reopens the epoch it is stopped for, so it never triggers another
// reset, whatever its rules say of the code it was killed with; and a
// container created after the trigger's exit but before the reset is
// still of the old epoch, so the reset restarts it too. Everything is
// read back from the runtime, so an agent restart in the middle of a
// reset picks it up where it was.

// Reasons and messages of a pod restarting all its containers, as kubelet
// reports them.
const (
	// ReasonRestartingAllContainers is the Waiting reason of a container
	// stopped by its pod's reset until it runs again.
	ReasonRestartingAllContainers = "RestartingAllContainers"
	// MessageRestartingAllContainers goes with it.
	MessageRestartingAllContainers = "The container is removed because RestartAllContainers in place"
	// ReasonRestartAllContainersStarted is the reason of the
	// AllContainersRestarting condition while it is True.
	ReasonRestartAllContainersStarted = "RestartAllContainersStarted"
	// MessageRestartAllContainersStarted goes with it.
	MessageRestartAllContainersStarted = "container exited with restart policy rule"
	// KillReasonRestartAll is why the reset stops a container.
	KillReasonRestartAll = "RestartAllContainers"
)

// RestartAllEpoch is pod's RestartAllContainers epoch in its runtime
// status st — the number of resets it went through, as the epochs its
// container instances were created in and the triggers among them say —
// and the container whose exit opened it ("" at epoch 0, or when that
// instance is gone).
func RestartAllEpoch(pod *v1.Pod, st *PodStatus) (int, string) {
	if st == nil || !podutil.MayRestartAll(&pod.Spec) {
		return 0, ""
	}
	epoch, by := 0, ""
	for _, c := range st.Containers {
		epoch = max(epoch, c.RestartAllEpoch)
	}
	for _, c := range st.Containers {
		if c.State != ContainerExited {
			continue
		}
		if spec := specContainer(pod, c.Name); spec != nil && podutil.RestartsAll(spec, c.ExitCode) && c.RestartAllEpoch+1 >= epoch {
			epoch, by = c.RestartAllEpoch+1, c.Name
		}
	}
	return epoch, by
}

// SinceRestartAll is st as pod's plan sees it: only the container
// instances of its current RestartAllContainers epoch (RestartAllEpoch),
// as if the resets had removed the older ones. It is st itself when
// there was no reset.
func SinceRestartAll(pod *v1.Pod, st *PodStatus) *PodStatus {
	epoch, _ := RestartAllEpoch(pod, st)
	if epoch == 0 {
		return st
	}
	out := *st
	out.Containers = nil
	for _, c := range st.Containers {
		if c.RestartAllEpoch == epoch {
			out.Containers = append(out.Containers, c)
		}
	}
	return &out
}

// restartAllKills adds to a the kills of pod's reset: every instance of
// an older epoch that has not exited stops at once (grace 0).
func restartAllKills(pod *v1.Pod, st *PodStatus, a *PodActions) {
	epoch, by := RestartAllEpoch(pod, st)
	if epoch == 0 {
		return
	}
	zero := time.Duration(0)
	for _, c := range st.Containers {
		if c.RestartAllEpoch == epoch || c.State == ContainerExited {
			continue
		}
		a.ContainersToKill[c.ID] = KillInfo{Name: c.Name, Reason: KillReasonRestartAll, Container: c, Grace: &zero,
			Message: fmt.Sprintf("Container %s exited with a RestartAllContainers rule: all containers restart", by)}
	}
}

// restartingAll lists the containers of pod whose newest instance in st
// is of an older epoch and exited: they wait for the reset to start them
// again (nil when there is no reset).
func restartingAll(pod *v1.Pod, st *PodStatus) map[string]bool {
	epoch, _ := RestartAllEpoch(pod, st)
	if epoch == 0 {
		return nil
	}
	out := map[string]bool{}
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if c := st.FindContainer(list[i].Name); c != nil && c.RestartAllEpoch < epoch && c.State == ContainerExited {
				out[list[i].Name] = true
			}
		}
	}
	return out
}

// allContainersRestarting is pod's AllContainersRestarting condition at
// now, for a pod in phase: True from the reset until every instance of an
// older epoch has stopped (kubelet: until they are removed); False once the
// pod is done (reason PodCompleted or PodFailed) or otherwise.
func allContainersRestarting(pod *v1.Pod, st *PodStatus, phase v1.PodPhase, now time.Time) v1.PodCondition {
	c := v1.PodCondition{Type: v1.AllContainersRestarting, Status: v1.ConditionFalse, LastTransitionTime: metav1.NewTime(now)}
	switch phase {
	case v1.PodSucceeded:
		c.Reason = "PodCompleted"
		return c
	case v1.PodFailed:
		c.Reason = "PodFailed"
		return c
	}
	epoch, _ := RestartAllEpoch(pod, st)
	for _, ctr := range st.Containers {
		if ctr.RestartAllEpoch < epoch && ctr.State != ContainerExited {
			c.Status, c.Reason, c.Message = v1.ConditionTrue, ReasonRestartAllContainersStarted, MessageRestartAllContainersStarted
			break
		}
	}
	return c
}
