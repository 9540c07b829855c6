package cpumanager

import (
	"fmt"
	"sort"

	"k8s.io/utils/cpuset"
)

// take chooses n CPUs of available, packing them as kubelet's static
// policy does: whole free sockets while n is at least a socket, then
// whole free cores while n is at least a core (on the socket with the
// fewest free CPUs first, so that whole sockets stay free), then single
// CPUs, those whose core is already partly taken first. Ties go to the
// lowest ids. Fewer than n available CPUs is kubelet's error.
func take(t Topology, available cpuset.CPUSet, n int) (cpuset.CPUSet, error) {
	if n > available.Size() {
		return cpuset.New(), fmt.Errorf("not enough cpus available to satisfy request: requested=%d, available=%d", n, available.Size())
	}
	result := cpuset.New()
	if n == 0 {
		return result, nil
	}
	all := t.All()
	grab := func(s cpuset.CPUSet) {
		result = result.Union(s)
		available = available.Difference(s)
		n -= s.Size()
	}
	for _, s := range t.keys(available, socketOf) {
		full := t.where(all, socketOf, s)
		if n >= full.Size() && full.IsSubsetOf(available) {
			grab(full)
		}
	}
	freeInSocket := func(id int) int { return t.where(available, socketOf, t.CPUs[id].Socket).Size() }
	cores := t.keys(available, coreOf)
	sort.SliceStable(cores, func(i, j int) bool {
		a, b := t.where(all, coreOf, cores[i]).List()[0], t.where(all, coreOf, cores[j]).List()[0]
		return freeInSocket(a) < freeInSocket(b)
	})
	for _, c := range cores {
		full := t.where(all, coreOf, c)
		if n > 0 && n >= full.Size() && full.IsSubsetOf(available) {
			grab(full)
		}
	}
	if n == 0 {
		return result, nil
	}
	cpus := available.List()
	partial := func(id int) bool { return !t.where(all, coreOf, t.CPUs[id].Core).IsSubsetOf(available) }
	sort.SliceStable(cpus, func(i, j int) bool {
		a, b := cpus[i], cpus[j]
		if pa, pb := partial(a), partial(b); pa != pb {
			return pa
		}
		if fa, fb := freeInSocket(a), freeInSocket(b); fa != fb {
			return fa < fb
		}
		return t.CPUs[a].Core < t.CPUs[b].Core
	})
	grab(cpuset.New(cpus[:n]...))
	return result, nil
}
