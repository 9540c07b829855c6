package runtime

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// Reaper removes, in the housekeeping, what no source wants: the runtime's
// pods (orphans: removed while the agent was down) and what a kill
// interrupted by the agent's death left (Leftovers). A pod is killed by one
// goroutine at a time, and what it is killing is left alone meanwhile.
type Reaper struct {
	m *Manager
	// known tells whether a pod worker runs the pod (it kills it itself).
	known func(types.UID) bool

	mu      sync.Mutex
	killing map[types.UID]bool
}

// NewReaper returns the reaper of m's pods; known tells which pods a
// worker runs.
func NewReaper(m *Manager, known func(types.UID) bool) *Reaper {
	return &Reaper{m: m, known: known, killing: map[types.UID]bool{}}
}

// Reap kills, each in its own goroutine, the listed pods no source wants
// and no worker runs (each read afresh first: listed may be a relist's
// view, and a pod the runtime no longer holds is left to the leftovers),
// then removes the leftovers of pods neither wanted, listed, being killed
// nor run by a worker.
func (r *Reaper) Reap(ctx context.Context, listed []*PodStatus, wanted map[types.UID]bool) {
	r.removeLeftovers(ctx, wanted, listed)
	log := klog.FromContext(ctx)
	for _, st := range Orphans(listed, wanted) {
		if r.known(st.UID) || !r.claim(st.UID) {
			continue
		}
		go func() {
			defer r.release(st.UID)
			full, err := r.m.GetPodStatus(ctx, st.UID, st.Name, st.Namespace)
			if err != nil {
				full = st
			} else if len(full.Sandboxes) == 0 && len(full.Containers) == 0 {
				return // gone since it was listed: what is left is a leftover
			}
			log.Info("Killing orphaned pod", "pod", klog.KRef(st.Namespace, st.Name), "podUID", st.UID)
			if err := r.m.KillPod(ctx, nil, full, nil).Err(); err != nil {
				log.Error(err, "Kill orphaned pod", "podUID", st.UID)
			}
		}()
	}
}

// claim marks uid as being killed; false when it already is.
func (r *Reaper) claim(uid types.UID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.killing[uid] {
		return false
	}
	r.killing[uid] = true
	return true
}

func (r *Reaper) release(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.killing, uid)
}

func (r *Reaper) busy(uid types.UID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.killing[uid]
}

// removeLeftovers removes what remains of pods that no source wants, no
// worker runs and the runtime does not hold: the cgroup, volumes, log and
// pod directories an agent that died in the middle of a kill left.
func (r *Reaper) removeLeftovers(ctx context.Context, wanted map[types.UID]bool, listed []*PodStatus) {
	inRuntime := map[types.UID]bool{}
	for _, st := range listed {
		inRuntime[st.UID] = true
	}
	left, err := r.m.Leftovers(func(uid types.UID) bool {
		return wanted[uid] || inRuntime[uid] || r.busy(uid) || r.known(uid)
	})
	log := klog.FromContext(ctx)
	if err != nil {
		log.Error(err, "Listing what is left of removed pods")
	}
	for _, st := range left {
		log.Info("Removing what is left of a removed pod", "pod", klog.KRef(st.Namespace, st.Name), "podUID", st.UID)
		if err := r.m.KillPod(ctx, nil, st, nil).Err(); err != nil {
			log.Error(err, "Removing what is left of a removed pod", "podUID", st.UID)
		}
	}
}
