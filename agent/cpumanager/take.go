package cpumanager

import (
	"fmt"
	"sort"

	"k8s.io/utils/cpuset"
)

// take chooses n CPUs of available, packing them as kubelet's static
// policy does: whole free sockets while n is at least a socket; with
// uncore (prefer-align-cpus-by-uncorecache) then whole free uncore caches
// while n is at least an uncore cache and the rest in one uncore cache
// when it fits (takeUncore); then whole free cores while n is at least a
// core (on the socket with the fewest free CPUs first, so that whole
// sockets stay free), then single CPUs, those whose core is already
// partly taken first. Ties go to the lowest ids. Fewer than n available
// CPUs is kubelet's error.
func take(t Topology, available cpuset.CPUSet, n int, uncore bool) (cpuset.CPUSet, error) {
	if n > available.Size() {
		return cpuset.New(), fmt.Errorf("not enough cpus available to satisfy request: requested=%d, available=%d", n, available.Size())
	}
	a := &acc{t: t, all: t.All(), avail: available, n: n, result: cpuset.New()}
	if n == 0 {
		return a.result, nil
	}
	for _, s := range t.keys(available, socketOf) {
		a.takeWhole(socketOf, s)
	}
	if uncore {
		a.takeUncore()
	}
	a.takeCores()
	if a.n > 0 {
		a.takeCPUs()
	}
	return a.result, nil
}

// acc accumulates the CPUs take chooses.
type acc struct {
	t          Topology
	all, avail cpuset.CPUSet
	result     cpuset.CPUSet
	n          int
}

func (a *acc) grab(s cpuset.CPUSet) {
	a.result = a.result.Union(s)
	a.avail = a.avail.Difference(s)
	a.n -= s.Size()
}

// takeWhole takes the group of key k when all of it is free and still
// needed whole.
func (a *acc) takeWhole(key func(CPUInfo) int, k int) {
	full := a.t.where(a.all, key, k)
	if a.n > 0 && a.n >= full.Size() && full.IsSubsetOf(a.avail) {
		a.grab(full)
	}
}

func (a *acc) freeIn(key func(CPUInfo) int, id int) int {
	return a.t.where(a.avail, key, key(a.t.CPUs[id])).Size()
}

func (a *acc) takeCores() {
	cores := a.t.keys(a.avail, coreOf)
	sort.SliceStable(cores, func(i, j int) bool {
		x, y := a.t.where(a.all, coreOf, cores[i]).List()[0], a.t.where(a.all, coreOf, cores[j]).List()[0]
		return a.freeIn(socketOf, x) < a.freeIn(socketOf, y)
	})
	for _, c := range cores {
		a.takeWhole(coreOf, c)
	}
}

func (a *acc) takeCPUs() {
	cpus := a.avail.List()
	partial := func(id int) bool { return !a.t.where(a.all, coreOf, a.t.CPUs[id].Core).IsSubsetOf(a.avail) }
	sort.SliceStable(cpus, func(i, j int) bool {
		x, y := cpus[i], cpus[j]
		if px, py := partial(x), partial(y); px != py {
			return px
		}
		if fx, fy := a.freeIn(socketOf, x), a.freeIn(socketOf, y); fx != fy {
			return fx < fy
		}
		return a.t.CPUs[x].Core < a.t.CPUs[y].Core
	})
	a.grab(cpuset.New(cpus[:a.n]...))
}

// takeUncore is kubelet's uncore-cache step. In kubelet's order of the
// uncore caches with a free CPU (uncoreOrder), for each: while n is at
// least the CPUs per uncore cache (all CPUs over the number of caches),
// take every whole free cache n still covers; then take the rest from
// this cache alone when it fits exactly in its first cores (the lowest
// ids) with a free CPU, as many as the rest needs whole cores; an odd
// rest with SMT leaves the highest-numbered CPU of them out.
func (a *acc) takeUncore() {
	per := a.all.Size() / len(a.t.keys(a.all, uncoreOf))
	for _, u := range a.uncoreOrder() {
		if a.n >= per {
			for _, f := range a.uncoreOrder() {
				a.takeWhole(uncoreOf, f)
			}
		}
		if a.n == 0 {
			return
		}
		a.takePartialUncore(u)
		if a.n == 0 {
			return
		}
	}
}

func (a *acc) takePartialUncore(u int) {
	perCore := a.t.CPUsPerCore()
	cores := a.t.keys(a.t.where(a.avail, uncoreOf, u), coreOf)
	cores = cores[:min(len(cores), (a.n+perCore-1)/perCore)]
	var ids []int
	for _, c := range cores {
		ids = append(ids, a.t.where(a.avail, coreOf, c).List()...)
	}
	sort.Ints(ids)
	if a.n%2 != 0 && perCore > 1 && len(ids) > a.n {
		ids = ids[:len(ids)-1]
	}
	if len(ids) == a.n {
		a.grab(cpuset.New(ids...))
	}
}

// uncoreOrder is kubelet's order of the uncore caches with a free CPU:
// NUMA node by NUMA node (numaOrder), and within one by ascending free
// CPUs, then id.
func (a *acc) uncoreOrder() []int {
	var out []int
	for _, node := range a.numaOrder() {
		us := a.t.keys(a.t.where(a.avail, numaOf, node), uncoreOf)
		a.byFree(us, uncoreOf)
		out = append(out, us...)
	}
	return out
}

// numaOrder is kubelet's order of the NUMA nodes with a free CPU: by
// ascending free CPUs (then id) when there are at least as many sockets
// as nodes; else socket by socket (ascending free CPUs, then id), and the
// socket's nodes likewise.
func (a *acc) numaOrder() []int {
	if len(a.t.keys(a.all, socketOf)) >= len(a.t.keys(a.all, numaOf)) {
		nodes := a.t.keys(a.avail, numaOf)
		a.byFree(nodes, numaOf)
		return nodes
	}
	sockets := a.t.keys(a.avail, socketOf)
	a.byFree(sockets, socketOf)
	var out []int
	for _, s := range sockets {
		nodes := a.t.keys(a.t.where(a.avail, socketOf, s), numaOf)
		a.byFree(nodes, numaOf)
		out = append(out, nodes...)
	}
	return out
}

// byFree sorts ids (values of key) by ascending free CPUs, then id.
func (a *acc) byFree(ids []int, key func(CPUInfo) int) {
	sort.Slice(ids, func(i, j int) bool {
		x, y := a.t.where(a.avail, key, ids[i]).Size(), a.t.where(a.avail, key, ids[j]).Size()
		if x != y {
			return x < y
		}
		return ids[i] < ids[j]
	})
}
