package agent

import (
	"context"
	"reflect"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/agent/qos"
	"github.com/kernelet/kernelet/cgroups"
)

// qosRefresh is how often the QoS cgroups are written even when nothing
// changed (kubelet's periodic QoS cgroup update).
const qosRefresh = time.Minute

// qosCgroups keeps kubepods, burstable and besteffort sized for the pods
// that run (burstable's cpu shares are the sum of its pods' cpu requests,
// and Memory QoS's reservations the sums of the requests), as kubelet's
// QoS container manager does: written when the sums change — a pod
// admitted, resized or gone — and every minute.
type qosCgroups struct {
	cm  *cgroups.Manager
	cfg cgroups.QoSConfig

	mu      sync.Mutex
	last    cgroups.QoSSettings
	written time.Time
}

// update writes the QoS cgroups for the pods p runs at their allocated
// requirements, when the settings changed or force.
func (q *qosCgroups) update(ctx context.Context, p *pods, force bool) {
	if q == nil {
		return
	}
	var prs []cgroups.PodResources
	for _, pod := range p.admittedPods() {
		prs = append(prs, qos.PodResources(p.allocated(pod)))
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	s := cgroups.ComputeQoSSettings(q.cfg, prs)
	if reflect.DeepEqual(s, q.last) && !force && time.Since(q.written) < qosRefresh {
		return
	}
	if _, err := q.cm.EnsureQoS(ctx, q.cfg, prs); err != nil {
		klog.FromContext(ctx).Error(err, "Updating the QoS cgroups")
		return
	}
	q.last, q.written = s, time.Now()
}
