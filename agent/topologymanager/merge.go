package topologymanager

import "sort"

// Merge is the best affinity over the NUMA nodes in all given each
// provider's hints per resource (kernelet's reading of kubelet's merge):
// every combination of one hint per resource is intersected (a hint of
// "any" node counts as all); a combination is preferred when all its
// hints are preferred and name the same nodes. The best is a preferred
// one with the fewest nodes; failing that, a non-preferred one with the
// fewest nodes that is still as wide as the widest of the narrowest hints
// of each resource (no resource can fit in fewer); ties go to the lower
// nodes. With singleNUMA (the single-numa-node policy) only hints of one
// node, or of any, count. Nothing possible: all nodes, not preferred.
func Merge(all Mask, providers []map[string][]Hint, singleNUMA bool) Hint {
	lists := hintLists(providers, singleNUMA)
	floor := 0
	for _, l := range lists {
		narrowest := 0
		for _, h := range l {
			if h.NUMA != 0 && (narrowest == 0 || h.NUMA.Count() < narrowest) {
				narrowest = h.NUMA.Count()
			}
		}
		floor = max(floor, narrowest)
	}
	var best *Hint
	combine(lists, func(chosen []Hint) {
		merged, preferred, first := all, true, Mask(0)
		for _, h := range chosen {
			if h.NUMA != 0 {
				merged &= h.NUMA
				if first == 0 {
					first = h.NUMA
				} else if h.NUMA != first {
					preferred = false
				}
			}
			if !h.Preferred {
				preferred = false
			}
		}
		if merged == 0 {
			return
		}
		cand := Hint{NUMA: merged, Preferred: preferred}
		if best == nil || better(cand, *best, floor) {
			best = &cand
		}
	})
	if best == nil {
		return Hint{NUMA: all}
	}
	return *best
}

// better tells whether a beats b.
func better(a, b Hint, floor int) bool {
	if a.Preferred != b.Preferred {
		return a.Preferred
	}
	ac, bc := a.NUMA.Count(), b.NUMA.Count()
	if !a.Preferred && ac != bc {
		aOK, bOK := ac >= floor, bc >= floor
		if aOK != bOK {
			return aOK
		}
		if !aOK {
			return ac > bc // below what fits: the closer to it the better
		}
	}
	if ac != bc {
		return ac < bc
	}
	return a.NUMA < b.NUMA
}

// hintLists is one list of hints per (provider, resource): no preference
// becomes one preferred hint of any node, an impossible resource one
// non-preferred hint of any node.
func hintLists(providers []map[string][]Hint, singleNUMA bool) [][]Hint {
	var lists [][]Hint
	for _, p := range providers {
		if len(p) == 0 {
			lists = append(lists, []Hint{{Preferred: true}})
			continue
		}
		names := make([]string, 0, len(p))
		for name := range p {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			l := p[name]
			if l == nil {
				lists = append(lists, []Hint{{Preferred: true}})
				continue
			}
			if singleNUMA {
				var kept []Hint
				for _, h := range l {
					if h.Preferred && h.NUMA.Count() <= 1 {
						kept = append(kept, h)
					}
				}
				l = kept
			}
			if len(l) == 0 {
				lists = append(lists, []Hint{{}})
				continue
			}
			lists = append(lists, l)
		}
	}
	return lists
}

// combine calls f with every choice of one hint per list.
func combine(lists [][]Hint, f func([]Hint)) {
	chosen := make([]Hint, len(lists))
	var walk func(i int)
	walk = func(i int) {
		if i == len(lists) {
			f(chosen)
			return
		}
		for _, h := range lists[i] {
			chosen[i] = h
			walk(i + 1)
		}
	}
	walk(0)
}

// Admits tells whether policy runs a pod whose best affinity is h.
func Admits(policy string, h Hint) bool {
	switch policy {
	case PolicyRestricted:
		return h.Preferred
	case PolicySingleNUMANode:
		return h.Preferred && h.NUMA.Count() == 1
	}
	return true
}
