package runtime

import (
	"fmt"
	"slices"
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
// keeps them: the reset is a point in time, the exit of the container
// that triggered it (RestartAllAt), and the instances created before it
// are out of the pod's plan (SinceRestartAll) while they stay in its
// history — restart counts go on from them, and they are the last state
// of the new instances. Everything is read back from the runtime, so an
// agent restart in the middle of a reset picks it up where it was.

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

// RestartAllAt is the time of pod's latest RestartAllContainers reset in
// its runtime status st, and the container that triggered it; zero when
// none. A trigger is an exited container instance (regular or init, any
// sandbox) whose exit code makes it restart all (podutil.RestartsAll).
// Taken in the order they exited, an instance created before the reset
// in force is not a trigger: it ran when that reset began, and stopped
// for it or with it — a container the reset kills never triggers another
// reset, whatever its rules say of the code it was killed with.
func RestartAllAt(pod *v1.Pod, st *PodStatus) (time.Time, string) {
	if st == nil || !podutil.MayRestartAll(&pod.Spec) {
		return time.Time{}, ""
	}
	var cands []*ContainerStatus
	for _, c := range st.Containers {
		if c.State != ContainerExited || c.FinishedAt.IsZero() {
			continue
		}
		if spec := specContainer(pod, c.Name); spec != nil && podutil.RestartsAll(spec, c.ExitCode) {
			cands = append(cands, c)
		}
	}
	slices.SortStableFunc(cands, func(a, b *ContainerStatus) int { return a.FinishedAt.Compare(b.FinishedAt) })
	var at time.Time
	var by string
	for _, c := range cands {
		if at.IsZero() || c.CreatedAt.After(at) {
			at, by = c.FinishedAt, c.Name
		}
	}
	return at, by
}

// SinceRestartAll is st as pod's plan sees it: without the container
// instances created before its latest RestartAllContainers reset
// (RestartAllAt), as if the reset had removed them. It is st itself when
// there was no reset.
func SinceRestartAll(pod *v1.Pod, st *PodStatus) *PodStatus {
	at, _ := RestartAllAt(pod, st)
	if at.IsZero() {
		return st
	}
	out := *st
	out.Containers = nil
	for _, c := range st.Containers {
		if c.CreatedAt.After(at) {
			out.Containers = append(out.Containers, c)
		}
	}
	return &out
}

// restartAllKills adds to a the kills of pod's reset: every instance from
// before the reset that has not exited stops at once (grace 0).
func restartAllKills(pod *v1.Pod, st *PodStatus, a *PodActions) {
	at, by := RestartAllAt(pod, st)
	if at.IsZero() {
		return
	}
	zero := time.Duration(0)
	for _, c := range st.Containers {
		if c.CreatedAt.After(at) || c.State == ContainerExited {
			continue
		}
		a.ContainersToKill[c.ID] = KillInfo{Name: c.Name, Reason: KillReasonRestartAll, Container: c, Grace: &zero,
			Message: fmt.Sprintf("Container %s exited with a RestartAllContainers rule: all containers restart", by)}
	}
}

// restartingAll lists the containers of pod whose newest instance in st
// is from before its latest reset and exited: they wait for the reset to
// start them again (nil when there is no reset).
func restartingAll(pod *v1.Pod, st *PodStatus) map[string]bool {
	at, _ := RestartAllAt(pod, st)
	if at.IsZero() {
		return nil
	}
	out := map[string]bool{}
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if c := st.FindContainer(list[i].Name); c != nil && !c.CreatedAt.After(at) && c.State == ContainerExited {
				out[list[i].Name] = true
			}
		}
	}
	return out
}

// allContainersRestarting is pod's AllContainersRestarting condition at
// now, for a pod in phase: True from the reset until every instance from
// before it has stopped (kubelet: until they are removed); False once the
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
	at, _ := RestartAllAt(pod, st)
	if at.IsZero() {
		return c
	}
	for _, ctr := range st.Containers {
		if !ctr.CreatedAt.After(at) && ctr.State != ContainerExited {
			c.Status, c.Reason, c.Message = v1.ConditionTrue, ReasonRestartAllContainersStarted, MessageRestartAllContainersStarted
			break
		}
	}
	return c
}
