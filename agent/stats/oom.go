package stats

import "k8s.io/apimachinery/pkg/types"

// oomTracker remembers the OOM kills of every container instance seen,
// per pod and container name, until the pod goes: the count survives the
// re-creation of a container (a new instance, a new cgroup).
type oomTracker struct {
	pods map[types.UID]map[string]map[string]uint64 // pod → container name → instance ID → kills
}

func newOOMTracker() *oomTracker {
	return &oomTracker{pods: map[types.UID]map[string]map[string]uint64{}}
}

// observe records kills for an instance; the count of an instance never
// goes down (its cgroup may be gone by the next read).
func (t *oomTracker) observe(pod types.UID, name, id string, kills uint64) {
	byName := t.pods[pod]
	if byName == nil {
		byName = map[string]map[string]uint64{}
		t.pods[pod] = byName
	}
	inst := byName[name]
	if inst == nil {
		inst = map[string]uint64{}
		byName[name] = inst
	}
	inst[id] = max(inst[id], kills)
}

// total is the kills of every instance of the container.
func (t *oomTracker) total(pod types.UID, name string) uint64 {
	var n uint64
	for _, k := range t.pods[pod][name] {
		n += k
	}
	return n
}

// retain forgets the pods not in live.
func (t *oomTracker) retain(live map[types.UID]bool) {
	for uid := range t.pods {
		if !live[uid] {
			delete(t.pods, uid)
		}
	}
}
