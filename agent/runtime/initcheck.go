package runtime

import (
	"time"

	v1 "k8s.io/api/core/v1"
)

// initCheckFirst is the first look at a regular init container after it
// started; each later look waits as long as the container has run.
const initCheckFirst = 50 * time.Millisecond

// NextInitCheck is when to look at pod again for the exit of a regular
// (not sidecar) init container that runs in its newest sandbox and started
// less than relist ago: the pod's next container starts on that exit,
// which a relist every relist would see up to a period late. The looks
// come at about 50, 100, 200, 400 and 800 ms of the container's run
// (each waits as long as it has run), then the relist takes over: at most
// a handful of status reads per init container, in its first period only.
// 0: no look (none runs, or it has run a period already).
func NextInitCheck(pod *v1.Pod, st *PodStatus, now time.Time, relist time.Duration) time.Duration {
	sb := st.Sandbox()
	if sb == nil {
		return 0
	}
	for i := range pod.Spec.InitContainers {
		ic := &pod.Spec.InitContainers[i]
		if ic.RestartPolicy != nil && *ic.RestartPolicy == v1.ContainerRestartPolicyAlways {
			continue // a sidecar keeps running
		}
		c := st.FindContainer(ic.Name)
		if c == nil || c.State != ContainerRunning || c.SandboxID != sb.ID || c.StartedAt.IsZero() {
			continue
		}
		ran := max(now.Sub(c.StartedAt), 0)
		wait := max(ran, initCheckFirst)
		if ran+wait > relist {
			return 0
		}
		return wait
	}
	return 0
}
