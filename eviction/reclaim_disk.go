package eviction

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// DefaultNodeReclaimInterval is the least time between two node-level
// reclaims (container and image GC) for one signal: while pressure
// lasts, the manager evicts rather than asking the runtime again on
// every decision.
const DefaultNodeReclaimInterval = 10 * time.Second

// endedReclaimInterval is the least time between two node-level reclaims
// while a pod evicted for the signal has ended and the threshold is still
// met: its dead containers may become removable only once its worker has
// recorded its end, a moment after its cgroup went.
const endedReclaimInterval = time.Second

// reclaimNode runs the node-level reclaims of disk signal s (container
// GC, then image GC; NodeReclaimFor) unless they ran less than
// NodeReclaimInterval ago (endedReclaimInterval while a pod evicted for s
// has ended: its dead containers' writable layers and logs can go now),
// then reads the stats again: done is true when no threshold is met any
// more, minimum reclaim included (no pod needs to go). It returns the
// stats to go on with (the fresh ones when read).
func (m *Manager) reclaimNode(ctx context.Context, s Signal, stats Stats, active []*v1.Pod, now time.Time) (_ Stats, done bool) {
	log := klog.FromContext(ctx)
	var run []func(context.Context) error
	var names []NodeReclaim
	for _, r := range NodeReclaimFor(s, stats.DedicatedImageFs) {
		f := m.cfg.DeleteAllUnusedContainers
		if r == ReclaimImages {
			f = m.cfg.DeleteUnusedImages
		}
		if f != nil {
			run, names = append(run, f), append(names, r)
		}
	}
	m.mu.Lock()
	last, ran := m.lastNodeReclaim[s]
	recent := ran && now.Sub(last) < m.cfg.NodeReclaimInterval && !m.endedDue(s, now)
	if len(run) > 0 && !recent {
		m.lastNodeReclaim[s] = now
		for uid, p := range m.pending[s] {
			if p.ended {
				p.reclaimedAt = now
				m.pending[s][uid] = p
			}
		}
	}
	m.mu.Unlock()
	if len(run) == 0 || recent {
		return stats, false
	}
	log.Info("Eviction manager: attempting to reclaim node-level resources", "signal", s, "reclaims", names)
	if m.cfg.ThresholdMet != nil {
		// kubelet records the node event before its node-level reclaim,
		// whether or not pods are evicted afterwards.
		m.cfg.ThresholdMet(ResourceOf(s))
	}
	for i, f := range run {
		if err := f(ctx); err != nil {
			log.Info("Eviction manager: unexpected error when attempting to reduce resource pressure",
				"resourceName", ResourceOf(s), "reclaim", names[i], "err", err)
		}
	}
	m.noteReleased()
	fresh, err := m.cfg.Stats(ctx, append(slices.Clone(active), m.pendingPods()...))
	if err != nil {
		log.Error(err, "Eviction manager: failed to read stats after node-level reclaim")
		return stats, false
	}
	obs := Observe(fresh)
	m.noteFreed(obs)
	if len(ThresholdsMet(m.cfg.Thresholds, obs, true)) == 0 {
		log.Info("Eviction manager: able to reduce resource pressure without evicting pods", "resourceName", ResourceOf(s))
		return fresh, true
	}
	log.Info("Eviction manager: must evict pod(s) to reclaim", "resourceName", ResourceOf(s))
	return fresh, false
}

// endedDue reports whether a pod evicted for s has ended (freeing saw it
// without stats) and no node-level reclaim ran in the last
// endedReclaimInterval. m.mu is held.
func (m *Manager) endedDue(s Signal, now time.Time) bool {
	for _, p := range m.pending[s] {
		if p.ended && now.Sub(p.reclaimedAt) >= endedReclaimInterval {
			return true
		}
	}
	return false
}

// noteReleased marks the pods evicted for a disk signal whose containers
// and volumes DiskReleased says are gone (noteFreed then looks for the
// space in the stats read next). Called before every stats read.
func (m *Manager) noteReleased() {
	if m.cfg.DiskReleased == nil {
		return
	}
	type key struct {
		s   Signal
		uid types.UID
	}
	m.mu.Lock()
	check := map[key]*v1.Pod{}
	for s, ps := range m.pending {
		for uid, p := range ps {
			if IsDiskSignal(s) && !p.gone {
				check[key{s, uid}] = p.pod
			}
		}
	}
	m.mu.Unlock()
	for k, pod := range check {
		if !m.cfg.DiskReleased(pod) {
			continue
		}
		m.mu.Lock()
		if p, ok := m.pending[k.s][k.uid]; ok {
			p.gone = true
			m.pending[k.s][k.uid] = p
		}
		m.mu.Unlock()
	}
}

// noteFreed marks freed the pods evicted for a disk signal whose disk
// shows as free in obs: gone from the runtime (noteReleased) and the
// signal's available risen by at least half their usage since they were
// evicted — a removed container's writable layer may be deleted later
// than the container (containerd's snapshot removal), a deleted file's
// blocks only once no process holds it. Pods evicted by one decision
// share the rise, in the order they were evicted: one freed raises the
// others' bar by its usage. Called after every stats read.
func (m *Manager) noteFreed(obs Observations) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for s, ps := range m.pending {
		o, ok := obs[s]
		if !ok || !IsDiskSignal(s) {
			continue
		}
		order := slices.SortedFunc(maps.Keys(ps), func(a, b types.UID) int { return cmp.Compare(ps[a].seq, ps[b].seq) })
		for _, uid := range order {
			p := ps[uid]
			if !p.gone || p.freed || o.Available-p.availableAt-p.credited < p.usage/2 {
				continue
			}
			p.freed = true
			ps[uid] = p
			for other, q := range ps {
				if other != uid && !q.freed && q.availableAt == p.availableAt {
					q.credited += p.usage
					ps[other] = q
				}
			}
		}
	}
}
