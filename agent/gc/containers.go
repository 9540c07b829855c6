package gc

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Container is one container the runtime holds, as container GC sees it.
type Container struct {
	ID        string
	SandboxID string
	PodUID    types.UID
	// Name is the container's name in its pod.
	Name    string
	Running bool
	// Created: created but never started (a start may be under way).
	Created   bool
	CreatedAt time.Time
}

// StartingGrace is how long a container that was created but not started
// counts as starting: container GC leaves it alone for that long, so that
// a sync between CreateContainer and StartContainer does not see the
// previous dead container (which the pod's lastState needs) collected in
// favour of the new one. Kubelet has no such guard.
const StartingGrace = time.Minute

// Sandbox is one pod sandbox the runtime holds.
type Sandbox struct {
	ID        string
	PodUID    types.UID
	Ready     bool
	CreatedAt time.Time
}

// ContainerSelection is what one container GC pass removes: containers
// first, then sandboxes.
type ContainerSelection struct {
	Containers []Container
	Sandboxes  []Sandbox
}

// unitKey is kubelet's "evict unit": the dead containers of one container
// of one pod.
type unitKey struct {
	uid  types.UID
	name string
}

// unit is one evict unit's evictable containers, newest first, and
// whether its newest one must stay (the pod still exists).
type unit struct {
	key       unitKey
	ctrs      []Container
	keepFloor int
}

// SelectContainers decides what container GC removes, kubelet's way:
//
//   - evictable containers are those not running and created at least
//     MinAge before now (never started ones: also StartingGrace), grouped
//     by pod UID and container name;
//   - every evictable container of a removed pod goes (and, when reclaim
//     is set — disk pressure — those of finished pods too);
//   - other groups keep their MaxPerPodContainer newest (at least one);
//   - when more than MaxContainers remain node-wide, each group is cut to
//     MaxContainers / groups (at least one), then the oldest go first,
//     still never the newest one of a pod that exists;
//   - a sandbox that is not ready and has no container left is removed,
//     except the newest sandbox of a pod that exists.
func SelectContainers(ctrs []Container, sbs []Sandbox, pol ContainerPolicy, state PodStateFunc, now time.Time, reclaim bool) ContainerSelection {
	var sel ContainerSelection
	states := map[types.UID]PodState{}
	stateOf := func(uid types.UID) PodState {
		s, ok := states[uid]
		if !ok {
			s = state(uid)
			states[uid] = s
		}
		return s
	}
	gone := func(uid types.UID) bool {
		s := stateOf(uid)
		return s == PodRemoved || (reclaim && s == PodFinished)
	}

	units := evictUnits(ctrs, now.Add(-pol.MinAge), now.Add(-StartingGrace))
	kept := units[:0]
	for _, u := range units {
		if gone(u.key.uid) {
			sel.Containers = append(sel.Containers, u.ctrs...)
			continue
		}
		u.keepFloor = 1
		keep := len(u.ctrs)
		if pol.MaxPerPodContainer >= 0 {
			keep = max(pol.MaxPerPodContainer, u.keepFloor)
		}
		sel.Containers = append(sel.Containers, u.trim(keep)...)
		kept = append(kept, u)
	}
	sel.Containers = append(sel.Containers, enforceMaxContainers(kept, pol.MaxContainers)...)

	removed := map[string]bool{}
	for _, c := range sel.Containers {
		removed[c.ID] = true
	}
	hasContainers := map[string]bool{}
	for _, c := range ctrs {
		if !removed[c.ID] {
			hasContainers[c.SandboxID] = true
		}
	}
	byPod := map[types.UID][]Sandbox{}
	for _, sb := range sbs {
		byPod[sb.PodUID] = append(byPod[sb.PodUID], sb)
	}
	for uid, list := range byPod {
		slices.SortStableFunc(list, func(a, b Sandbox) int { return b.CreatedAt.Compare(a.CreatedAt) })
		start := 1 // the newest sandbox of a pod that exists stays
		if gone(uid) {
			start = 0
		}
		for _, sb := range list[start:] {
			if !sb.Ready && !hasContainers[sb.ID] {
				sel.Sandboxes = append(sel.Sandboxes, sb)
			}
		}
	}
	slices.SortFunc(sel.Sandboxes, func(a, b Sandbox) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return sel
}

// evictUnits groups the containers that are not running and were created
// no later than newest (created but never started ones: no later than
// newestStarting), newest first in each unit; units in a stable order.
func evictUnits(ctrs []Container, newest, newestStarting time.Time) []unit {
	idx := map[unitKey]int{}
	var units []unit
	for _, c := range ctrs {
		if c.Running || c.CreatedAt.After(newest) || (c.Created && c.CreatedAt.After(newestStarting)) {
			continue
		}
		k := unitKey{uid: c.PodUID, name: c.Name}
		i, ok := idx[k]
		if !ok {
			i = len(units)
			idx[k] = i
			units = append(units, unit{key: k})
		}
		units[i].ctrs = append(units[i].ctrs, c)
	}
	for i := range units {
		slices.SortStableFunc(units[i].ctrs, func(a, b Container) int { return b.CreatedAt.Compare(a.CreatedAt) })
	}
	slices.SortFunc(units, func(a, b unit) int {
		if a.key.uid != b.key.uid {
			if a.key.uid < b.key.uid {
				return -1
			}
			return 1
		}
		if a.key.name < b.key.name {
			return -1
		}
		if a.key.name > b.key.name {
			return 1
		}
		return 0
	})
	return units
}

// trim keeps the keep newest containers of u and returns the others.
func (u *unit) trim(keep int) []Container {
	if keep < 0 || len(u.ctrs) <= keep {
		return nil
	}
	out := u.ctrs[keep:]
	u.ctrs = u.ctrs[:keep]
	return out
}

// enforceMaxContainers cuts the units down to limit containers in all
// (limit < 0: no limit) and returns what goes.
func enforceMaxContainers(units []unit, limit int) []Container {
	if limit < 0 {
		return nil
	}
	total := 0
	for _, u := range units {
		total += len(u.ctrs)
	}
	if total <= limit || len(units) == 0 {
		return nil
	}
	var out []Container
	per := max(limit/len(units), 1)
	for i := range units {
		out = append(out, units[i].trim(max(per, units[i].keepFloor))...)
	}
	total = 0
	var rest []Container
	for _, u := range units {
		total += len(u.ctrs)
		// The newest of each unit (index 0) stays when the pod exists.
		rest = append(rest, u.ctrs[min(u.keepFloor, len(u.ctrs)):]...)
	}
	slices.SortStableFunc(rest, func(a, b Container) int { return a.CreatedAt.Compare(b.CreatedAt) })
	for _, c := range rest {
		if total <= limit {
			break
		}
		out = append(out, c)
		total--
	}
	return out
}
