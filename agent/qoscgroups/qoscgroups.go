package qoscgroups

import (
	"context"
	"reflect"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/agent/qos"
	"github.com/kernelet/kernelet/cgroups"
)

// Refresh is how often the QoS cgroups are written even when nothing
// changed (kubelet's periodic QoS cgroup update).
const Refresh = time.Minute

// Config is what an Updater needs.
type Config struct {
	Cgroups *cgroups.Manager
	QoS     cgroups.QoSConfig
	// Pods are the admitted pods that still run (not terminating, not
	// finished).
	Pods func() []*v1.Pod
	// Allocated is a pod at its allocated requirements (nil: as it is);
	// PodGeneration(uid) changes whenever Allocated may return other
	// requirements for the same pod object of that UID (nil: never).
	Allocated     func(*v1.Pod) *v1.Pod
	PodGeneration func(types.UID) uint64
}

// Updater writes the QoS cgroups.
type Updater struct {
	cfg Config

	mu      sync.Mutex
	last    cgroups.QoSSettings
	written time.Time
	// memo is each admitted pod's requirements as last computed, by UID,
	// with the pod object and the allocation's generation they came from.
	memo map[types.UID]memo
}

type memo struct {
	pod *v1.Pod
	gen uint64
	res cgroups.PodResources
}

// New returns an Updater for cfg.
func New(cfg Config) *Updater {
	if cfg.Allocated == nil {
		cfg.Allocated = func(p *v1.Pod) *v1.Pod { return p }
	}
	if cfg.PodGeneration == nil {
		cfg.PodGeneration = func(types.UID) uint64 { return 0 }
	}
	return &Updater{cfg: cfg}
}

// Update writes the QoS cgroups for the pods that run at their allocated
// requirements, when the settings changed or Refresh passed since the
// last write. A nil Updater does nothing.
func (u *Updater) Update(ctx context.Context) {
	if u == nil {
		return
	}
	prs := u.podResources()
	u.mu.Lock()
	defer u.mu.Unlock()
	s := cgroups.ComputeQoSSettings(u.cfg.QoS, prs)
	if reflect.DeepEqual(s, u.last) && time.Since(u.written) < Refresh {
		return
	}
	if _, err := u.cfg.Cgroups.EnsureQoS(ctx, u.cfg.QoS, prs); err != nil {
		klog.FromContext(ctx).Error(err, "Updating the QoS cgroups")
		return
	}
	u.last, u.written = s, time.Now()
}

// podResources are the running pods' requirements at their allocation,
// from the memo where the pod object and its allocation's generation are
// unchanged: a pod admitted or resized recomputes its own entry only.
func (u *Updater) podResources() []cgroups.PodResources {
	u.mu.Lock()
	old := u.memo
	u.mu.Unlock()
	pods := u.cfg.Pods()
	next := make(map[types.UID]memo, len(pods))
	prs := make([]cgroups.PodResources, 0, len(pods))
	for _, pod := range pods {
		gen := u.cfg.PodGeneration(pod.UID) // read first: a change after it recomputes next time
		m, ok := old[pod.UID]
		if !ok || m.pod != pod || m.gen != gen {
			m = memo{pod: pod, gen: gen, res: qos.PodResources(u.cfg.Allocated(pod))}
		}
		next[pod.UID] = m
		prs = append(prs, m.res)
	}
	u.mu.Lock()
	u.memo = next
	u.mu.Unlock()
	return prs
}
