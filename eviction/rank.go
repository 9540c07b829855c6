package eviction

import (
	"cmp"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// podCmp orders two pods; negative puts a first (evicted sooner).
type podCmp func(a, b *v1.Pod) int

// rank sorts pods stably by the comparisons in order.
func rank(pods []*v1.Pod, by ...podCmp) []*v1.Pod {
	out := slices.Clone(pods)
	slices.SortStableFunc(out, func(a, b *v1.Pod) int {
		for _, c := range by {
			if r := c(a, b); r != 0 {
				return r
			}
		}
		return 0
	})
	return out
}

// trueFirst orders true before false.
func trueFirst(a, b bool) int {
	switch {
	case a && !b:
		return -1
	case b && !a:
		return 1
	}
	return 0
}

func priority(p *v1.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}

// byPriority: lower priority first.
func byPriority(a, b *v1.Pod) int { return cmp.Compare(priority(a), priority(b)) }

// RankMemory orders pods for a memory signal as kubelet does: pods without
// stats first, then pods using more memory than they request, then lower
// priority, then larger usage above the request.
func RankMemory(pods []*v1.Pod, stats map[types.UID]PodStats) []*v1.Pod {
	get := func(p *v1.Pod) (PodStats, bool) { s, ok := stats[p.UID]; return s, ok }
	exceeds := func(a, b *v1.Pod) int {
		sa, oka := get(a)
		sb, okb := get(b)
		if !oka || !okb {
			return trueFirst(!oka, !okb)
		}
		return trueFirst(sa.MemoryWorkingSet > memoryRequest(a), sb.MemoryWorkingSet > memoryRequest(b))
	}
	aboveRequest := func(a, b *v1.Pod) int {
		sa, oka := get(a)
		sb, okb := get(b)
		if !oka || !okb {
			return trueFirst(!oka, !okb)
		}
		// Larger first.
		return cmp.Compare(sb.MemoryWorkingSet-memoryRequest(b), sa.MemoryWorkingSet-memoryRequest(a))
	}
	return rank(pods, exceeds, byPriority, aboveRequest)
}

// RankPIDs orders pods for pid.available as kubelet does: lower priority
// first, then more processes (pods without stats first among equals).
func RankPIDs(pods []*v1.Pod, stats map[types.UID]PodStats) []*v1.Pod {
	procs := func(a, b *v1.Pod) int {
		sa, oka := stats[a.UID]
		sb, okb := stats[b.UID]
		if !oka || !okb {
			return trueFirst(!oka, !okb)
		}
		return cmp.Compare(sb.Processes, sa.Processes)
	}
	return rank(pods, byPriority, procs)
}

// Rank orders pods for the signal of a threshold; ok is false for signals
// kernelet cannot rank pods for.
func Rank(s Signal, pods []*v1.Pod, stats map[types.UID]PodStats) (_ []*v1.Pod, ok bool) {
	switch ResourceOf(s) {
	case v1.ResourceMemory:
		return RankMemory(pods, stats), true
	case "pids":
		return RankPIDs(pods, stats), true
	case v1.ResourceEphemeralStorage, ResourceInodes:
		return RankDisk(s, pods, stats), true
	}
	return nil, false
}
