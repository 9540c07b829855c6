package agent

import (
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	internalapi "k8s.io/cri-api/pkg/apis"

	"github.com/kernelet/kernelet/agent/prober"
	"github.com/kernelet/kernelet/agent/runtime"
	"github.com/kernelet/kernelet/status/events"
	"github.com/kernelet/kernelet/status/node"
)

// startProbes makes the prober: exec probes through rs, events through
// the pod recorder, results waking the pod's worker; its metrics go to
// reg.
func (p *pods) startProbes(rs internalapi.RuntimeService, reg prometheus.Registerer) error {
	p.probes = prober.New(prober.Config{
		Exec: rs.ExecSync,
		Event: func(pod *v1.Pod, container, typ, reason, msg string) {
			p.recorder.Event(events.PodRef(pod, container), typ, reason, msg)
		},
		OnChange:  func(uid types.UID) { p.workers.Wake(uid) },
		UserAgent: probeUserAgent(node.KubernetesVersion()),
	})
	if err := reg.Register(p.probes.Metrics()); err != nil {
		p.probes.Stop()
		return fmt.Errorf("prober metrics: %w", err)
	}
	return nil
}

// probeUserAgent is kubelet's probe User-Agent for a Kubernetes version
// ("v1.37.2" → "kube-probe/1.37").
func probeUserAgent(kubeVersion string) string {
	v := strings.TrimPrefix(kubeVersion, "v")
	if parts := strings.SplitN(v, ".", 3); len(parts) >= 2 {
		v = parts[0] + "." + parts[1]
	}
	return "kube-probe/" + v
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
