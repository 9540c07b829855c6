package agent

import (
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	internalapi "k8s.io/cri-api/pkg/apis"

	"github.com/kernelet/kernelet/agent/prober"
	"github.com/kernelet/kernelet/agent/runtime"
	"github.com/kernelet/kernelet/internal/podutil"
	"github.com/kernelet/kernelet/status/events"
)

// startProbes makes the prober: exec probes through rs, events through
// the pod recorder, results waking the pod's worker; its metrics are m.
func (p *pods) startProbes(rs internalapi.RuntimeService, m *prober.Metrics) error {
	p.probes = prober.New(prober.Config{Metrics: m,
		Exec: rs.ExecSync,
		Event: func(pod *v1.Pod, container, typ, reason, msg string) {
			p.recorder.Event(events.PodRef(pod, container), typ, reason, msg)
		},
		OnChange: func(uid types.UID) {
			p.workers.Wake(uid)
			p.terminatingReadiness(uid)
		},
	})
	return nil
}

// unhealthy is what the prober says of pod's containers, for the sync:
// those that failed their liveness or startup probe.
func (p *pods) unhealthy(pod *v1.Pod) map[string]runtime.Unhealthy {
	failed := p.probes.Unhealthy(pod)
	if len(failed) == 0 {
		return nil
	}
	out := make(map[string]runtime.Unhealthy, len(failed))
	for id, u := range failed {
		out[id] = runtime.Unhealthy{Probe: strings.ToLower(string(u.Kind)), Grace: u.Grace}
	}
	return out
}

// statusInputs are the inputs of pod's API status: started and ready as
// the probes say.
func (p *pods) statusInputs(pod *v1.Pod, waiting map[string]runtime.Waiting) runtime.StatusInputs {
	return runtime.StatusInputs{Waiting: waiting, HostIPs: p.hostIPs,
		Started: func(_ types.UID, name, id string) bool { return p.probes.Started(pod, name, id) },
		Ready:   func(_ types.UID, name, id string) bool { return p.probes.Ready(pod, name, id) },
	}
}

// terminatingReadiness reports the readiness the probes now say of a pod
// that is terminating (its worker no longer syncs it): as kubelet, a
// readiness probe that fails during the grace period makes the pod not
// Ready.
func (p *pods) terminatingReadiness(uid types.UID) {
	if p.status == nil {
		return
	}
	for _, r := range p.workers.Pods() {
		if r.Pod.UID != uid || !r.Terminating {
			continue
		}
		pod := r.Pod
		st, changed := WithReadiness(pod, r.Status, p.now(), func(name, id string) bool { return p.probes.Ready(pod, name, id) })
		if changed {
			p.status.SetStatus(pod, st)
		}
	}
}

// WithReadiness returns st with the ready field of pod's running
// containers as ready says (by name and runtime container ID) and the
// ContainersReady and Ready conditions that follow (runtime.Readiness, as
// the status is made); changed tells whether anything differs.
func WithReadiness(pod *v1.Pod, st v1.PodStatus, now time.Time, ready func(name, id string) bool) (v1.PodStatus, bool) {
	if podutil.IsTerminal(st.Phase) {
		// A terminal pod (finished, evicted, past its deadline) keeps the
		// conditions its end gave it, whatever a probe says meanwhile.
		return st, false
	}
	out := *st.DeepCopy()
	changed := false
	for _, list := range [][]v1.ContainerStatus{out.InitContainerStatuses, out.ContainerStatuses} {
		for i := range list {
			cs := &list[i]
			if cs.State.Running == nil {
				continue
			}
			id := cs.ContainerID
			if j := strings.Index(id, "://"); j >= 0 {
				id = id[j+3:]
			}
			if r := ready(cs.Name, id); r != cs.Ready {
				cs.Ready, changed = r, true
			}
		}
	}
	if !changed {
		return st, false
	}
	ok, reason, msg := runtime.Readiness(out.Phase, runtime.UnreadyContainers(pod, &out))
	for i := range out.Conditions {
		c := &out.Conditions[i]
		if c.Type != v1.ContainersReady && c.Type != v1.PodReady {
			continue
		}
		was := c.Status
		c.Status, c.Reason, c.Message = v1.ConditionTrue, "", ""
		if !ok {
			c.Status, c.Reason, c.Message = v1.ConditionFalse, reason, msg
		}
		if c.Status != was {
			c.LastTransitionTime = metav1.NewTime(now)
		}
	}
	return out, true
}
