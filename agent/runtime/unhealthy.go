package runtime

import (
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kernelet/kernelet/internal/podutil"
)

// Unhealthy is a running container that failed its liveness or startup
// probe (agent/prober says which).
type Unhealthy struct {
	// Probe is "liveness" or "startup".
	Probe string
	// Grace is the probe's terminationGracePeriodSeconds; nil: the pod's
	// grace applies.
	Grace *int64
}

// Kill reasons of containers that failed a probe (kubelet's).
const (
	KillReasonLivenessProbe = "LivenessProbe"
	KillReasonStartupProbe  = "StartupProbe"
)

// ProbeKillMessage is the Killing event of a container that failed its
// probe ("liveness" or "startup"), kubelet's text; restart says whether
// it will be started again.
func ProbeKillMessage(probe, container string, restart bool) string {
	msg := fmt.Sprintf("Container %s failed %s probe", container, probe)
	if restart {
		msg += ", will be restarted"
	}
	return msg
}

// KillUnhealthy adds to a the kills of the running containers of the
// current sandbox that failed a probe (unhealthy, by container ID), with
// the probe's grace, and their restart unless the restart policy that
// applies is Never: the container's own restartPolicy, else the pod's
// (podutil.EffectiveRestartPolicy; as kubelet's, its restartPolicyRules
// are not consulted, there is no exit code to match; sidecars always
// restart). As kubelet's, the restart waits while the
// previous exited instance of the container is still in CrashLoopBackOff
// (backoff at now; nil: no back-off): then the container is only killed
// and a.BackOff says until when. It is pure (backoff is only read); a is
// returned changed.
func KillUnhealthy(pod *v1.Pod, st *PodStatus, a PodActions, unhealthy map[string]Unhealthy, now time.Time, backoff BackoffChecker) PodActions {
	if len(unhealthy) == 0 || a.KillPod || a.SandboxID == "" {
		return a
	}
	for _, c := range st.Containers {
		u, ok := unhealthy[c.ID]
		if !ok || c.SandboxID != a.SandboxID || c.State != ContainerRunning || st.FindContainer(c.Name) != c {
			continue
		}
		if _, killed := a.ContainersToKill[c.ID]; killed {
			continue
		}
		idx, sidecar := -1, false
		var spec *v1.Container
		for i := range pod.Spec.Containers {
			if pod.Spec.Containers[i].Name == c.Name {
				idx, spec = i, &pod.Spec.Containers[i]
			}
		}
		if idx < 0 {
			for i := range pod.Spec.InitContainers {
				ic := &pod.Spec.InitContainers[i]
				if ic.Name == c.Name && ic.RestartPolicy != nil && *ic.RestartPolicy == v1.ContainerRestartPolicyAlways {
					idx, sidecar, spec = i, true, ic
				}
			}
		}
		if idx < 0 {
			continue
		}
		restart := sidecar || podutil.EffectiveRestartPolicy(spec, &pod.Spec) != v1.ContainerRestartPolicyNever
		reason := KillReasonLivenessProbe
		if u.Probe == "startup" {
			reason = KillReasonStartupProbe
		}
		k := KillInfo{Name: c.Name, Reason: reason, Message: ProbeKillMessage(u.Probe, c.Name, restart), Container: c}
		if u.Grace != nil {
			g := time.Duration(max(*u.Grace, 0)) * time.Second
			k.Grace = &g
		}
		if a.ContainersToKill == nil {
			a.ContainersToKill = map[string]KillInfo{}
		}
		a.ContainersToKill[c.ID] = k
		if !restart || heldBack(pod, st, spec, backoff, &a) {
			continue
		}
		if sidecar {
			a.InitContainersToStart = appendOnce(a.InitContainersToStart, idx)
		} else {
			a.ContainersToStart = appendOnce(a.ContainersToStart, idx)
		}
	}
	return a
}

// heldBack tells whether the restart of the container named name waits
// for the back-off of its newest exited instance, recording the hold in a.
func heldBack(pod *v1.Pod, st *PodStatus, spec *v1.Container, backoff BackoffChecker, a *PodActions) bool {
	name := spec.Name
	prev := newestExited(st, name)
	if prev == nil || backoff == nil {
		return false
	}
	held, d := backoff.Held(ContainerBackoffKey(pod, spec), prev.FinishedAt)
	if !held {
		return false
	}
	if a.BackOff == nil {
		a.BackOff = map[string]Waiting{}
	}
	a.BackOff[name] = Waiting{Reason: ReasonCrashLoopBackOff, Message: CrashLoopMessage(d, name, pod.Name, pod.Namespace, pod.UID)}
	if until := prev.FinishedAt.Add(d); a.RetryAt.IsZero() || until.Before(a.RetryAt) {
		a.RetryAt = until
	}
	return true
}

// newestExited is the newest exited container named name, nil when none.
func newestExited(st *PodStatus, name string) *ContainerStatus {
	for _, c := range st.containersOf(name) {
		if c.State == ContainerExited {
			return c
		}
	}
	return nil
}

func appendOnce(list []int, i int) []int {
	for _, v := range list {
		if v == i {
			return list
		}
	}
	return append(list, i)
}

// HoldForStartup keeps a pod that is initializing from going past a
// sidecar (restartPolicy Always init container) with a startup probe that
// is started by this sync or runs and has not passed its probe yet
// (notStarted, by container ID): the init containers after it and the app
// containers wait, as kubelet's. Once an app container ran in the current
// sandbox it changes nothing. It is pure; a is returned changed.
func HoldForStartup(pod *v1.Pod, st *PodStatus, a PodActions, notStarted map[string]bool) PodActions {
	if a.KillPod && !a.CreateSandbox {
		return a
	}
	var current []*ContainerStatus
	if st != nil && a.SandboxID != "" {
		for _, c := range st.Containers {
			if c.SandboxID == a.SandboxID {
				current = append(current, c)
			}
		}
	}
	for i := range pod.Spec.Containers {
		if newest(current, pod.Spec.Containers[i].Name) != nil {
			return a // initialized
		}
	}
	for i := range pod.Spec.InitContainers {
		ic := &pod.Spec.InitContainers[i]
		if ic.StartupProbe == nil || ic.RestartPolicy == nil || *ic.RestartPolicy != v1.ContainerRestartPolicyAlways {
			continue
		}
		s := newest(current, ic.Name)
		starting := slices.Contains(a.InitContainersToStart, i)
		if !starting && (s == nil || s.State != ContainerRunning || !notStarted[s.ID]) {
			continue
		}
		var keep []int
		for _, j := range a.InitContainersToStart {
			if j <= i {
				keep = append(keep, j)
			}
		}
		a.InitContainersToStart, a.ContainersToStart = keep, nil
		return a
	}
	return a
}
