package devicemanager

import (
	"fmt"
	"slices"

	tm "github.com/kernelet/kernelet/agent/topologymanager"
)

// NUMA maps each device of a resource to the NUMA nodes it reported (none:
// no topology).
type NUMA map[string][]int64

// aligned tells whether any device of the resource reported a NUMA node:
// kubelet's sign that the resource cares about alignment.
func (n NUMA) aligned() bool {
	for _, nodes := range n {
		if len(nodes) > 0 {
			return true
		}
	}
	return false
}

// in tells whether device id reported a node of mask.
func (n NUMA) in(id string, mask tm.Mask) bool {
	for _, node := range n[id] {
		if mask.Has(int(node)) {
			return true
		}
	}
	return false
}

// Hints are kubelet's NUMA hints for need devices of a resource whose
// devices are all (every device the plugin listed): one hint per
// combination of nodes holding every reusable device that has a topology
// and, with them, need devices among reusable and available; preferred when
// it has as few nodes as the smallest combination whose devices (used or
// not) could ever hold need. nil when no device reported a node (no
// preference).
func Hints(nodes []int, all NUMA, available, reusable []string, need int) []tm.Hint {
	if !all.aligned() {
		return nil
	}
	minSize := len(nodes)
	hints := []tm.Hint{}
	for _, mask := range masks(nodes) {
		inMask := 0
		for id := range all {
			if all.in(id, mask) {
				inMask++
			}
		}
		if inMask >= need && mask.Count() < minSize {
			minSize = mask.Count()
		}
		matching, fits := 0, true
		for _, id := range reusable {
			if len(all[id]) == 0 {
				continue
			}
			if !all.in(id, mask) {
				fits = false
				break
			}
			matching++
		}
		if !fits {
			continue
		}
		for _, id := range available {
			if all.in(id, mask) {
				matching++
			}
		}
		if matching >= need {
			hints = append(hints, tm.Hint{NUMA: mask})
		}
	}
	for i := range hints {
		hints[i].Preferred = hints[i].NUMA.Count() == minSize
	}
	return hints
}

// masks are the non-empty combinations of nodes, fewest nodes first.
func masks(nodes []int) []tm.Mask {
	var out []tm.Mask
	for size := 1; size <= len(nodes); size++ {
		var pick func(start int, m tm.Mask, left int)
		pick = func(start int, m tm.Mask, left int) {
			if left == 0 {
				out = append(out, m)
				return
			}
			for i := start; i <= len(nodes)-left; i++ {
				pick(i+1, m|tm.NewMask(nodes[i]), left-1)
			}
		}
		pick(0, 0, size)
	}
	return out
}

// Split is the available devices of a resource by a container's NUMA
// affinity: on its nodes, on others only, without topology. Each is sorted.
type Split struct {
	Aligned, Unaligned, NoAffinity []string
}

// SplitByAffinity splits available by affinity; without an affinity (0) or
// when no device reported a node, every device is NoAffinity.
func SplitByAffinity(available []string, all NUMA, affinity tm.Mask) Split {
	var s Split
	for _, id := range slices.Sorted(slices.Values(available)) {
		switch {
		case affinity == 0 || !all.aligned() || len(all[id]) == 0:
			s.NoAffinity = append(s.NoAffinity, id)
		case all.in(id, affinity):
			s.Aligned = append(s.Aligned, id)
		default:
			s.Unaligned = append(s.Unaligned, id)
		}
	}
	return s
}

// available is every device of s, sorted.
func (s Split) available() []string {
	return slices.Sorted(slices.Values(slices.Concat(s.Aligned, s.Unaligned, s.NoAffinity)))
}

// Candidates are the devices to offer the plugin's GetPreferredAllocation
// when rest more devices are needed: the aligned ones when they are more
// than enough, else all (kubelet's).
func (s Split) Candidates(rest int) []string {
	if rest < len(s.Aligned) {
		return s.Aligned
	}
	return s.available()
}

// Choose picks need devices of resource for a container (kubelet's order):
// first the reusable ones (FromReusable); then, when the aligned devices
// are more than enough, the plugin's preferred ones among them and the
// rest of them; else every aligned device, the preferred ones among the
// available, the unaligned, and those without topology. Too few available
// is kubelet's error.
func Choose(resource string, need int, reusable []string, s Split, preferred []string) ([]string, error) {
	picked := FromReusable(need, reusable)
	if len(picked) == need {
		return picked, nil
	}
	rest := need - len(picked)
	available := s.available()
	if len(available) < rest {
		return nil, fmt.Errorf(errUnavailable, resource, rest, len(available))
	}
	taken := map[string]bool{}
	for _, id := range picked {
		taken[id] = true
	}
	add := func(ids []string, among []string) {
		for _, id := range ids {
			if len(picked) < need && !taken[id] && slices.Contains(among, id) {
				taken[id] = true
				picked = append(picked, id)
			}
		}
	}
	if rest < len(s.Aligned) {
		add(preferred, s.Aligned)
		add(s.Aligned, s.Aligned)
	} else {
		add(s.Aligned, s.Aligned)
		add(preferred, available)
		add(s.Unaligned, s.Unaligned)
		add(s.NoAffinity, s.NoAffinity)
	}
	if len(picked) < need {
		return nil, fmt.Errorf(errLessAllocated, need, len(picked))
	}
	return picked, nil
}
