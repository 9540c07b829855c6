package cpumanager

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"k8s.io/utils/cpuset"
)

// CPUInfo places one logical CPU.
type CPUInfo struct {
	// Socket is the physical package, Core the core within the node
	// (unique across sockets), NUMANode the NUMA node.
	Socket, Core, NUMANode int
	// Uncore is the uncore (last-level) cache the CPU shares with others:
	// as kubelet (through cAdvisor), the id of its first cache above L2
	// unless that cache is shared by exactly the CPUs of its NUMA node
	// (then it is the node's cache); a CPU without such a cache has its
	// socket's id (one uncore group per socket).
	Uncore int
}

// Topology is the node's online CPUs and where each sits.
type Topology struct {
	CPUs map[int]CPUInfo
}

// All is the set of online CPUs.
func (t Topology) All() cpuset.CPUSet {
	ids := make([]int, 0, len(t.CPUs))
	for id := range t.CPUs {
		ids = append(ids, id)
	}
	return cpuset.New(ids...)
}

// CPUsPerCore is the number of hardware threads of a core (1 without SMT).
func (t Topology) CPUsPerCore() int {
	cores := map[int]int{}
	for _, c := range t.CPUs {
		cores[c.Core]++
	}
	n := 0
	for _, k := range cores {
		n = max(n, k)
	}
	return max(n, 1)
}

// where returns the CPUs of set whose key (socket, core or NUMA node) is k.
func (t Topology) where(set cpuset.CPUSet, key func(CPUInfo) int, k int) cpuset.CPUSet {
	var ids []int
	for _, id := range set.UnsortedList() {
		if key(t.CPUs[id]) == k {
			ids = append(ids, id)
		}
	}
	return cpuset.New(ids...)
}

// keys are the distinct values of key over set, ascending.
func (t Topology) keys(set cpuset.CPUSet, key func(CPUInfo) int) []int {
	seen := map[int]bool{}
	var out []int
	for _, id := range set.UnsortedList() {
		if k := key(t.CPUs[id]); !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	sort.Ints(out)
	return out
}

func socketOf(c CPUInfo) int { return c.Socket }
func coreOf(c CPUInfo) int   { return c.Core }
func numaOf(c CPUInfo) int   { return c.NUMANode }
func uncoreOf(c CPUInfo) int { return c.Uncore }

// ReadTopology reads the online CPUs and their package, core and NUMA node
// from sysfs (fsys rooted at /sys). A core is identified by its package
// and core_id; a CPU under no NUMA node is on node 0.
func ReadTopology(fsys fs.FS) (Topology, error) {
	online, err := readCPUList(fsys, "devices/system/cpu/online")
	if err != nil {
		return Topology{}, err
	}
	numa := map[int]int{}
	nodes, _ := fs.Glob(fsys, "devices/system/node/node[0-9]*")
	for _, n := range nodes {
		id, err := strconv.Atoi(strings.TrimPrefix(path.Base(n), "node"))
		if err != nil {
			continue
		}
		cpus, err := readCPUList(fsys, n+"/cpulist")
		if err != nil {
			return Topology{}, err
		}
		for _, c := range cpus.UnsortedList() {
			numa[c] = id
		}
	}
	type coreKey struct{ socket, core int }
	coreIDs := map[coreKey]int{}
	t := Topology{CPUs: map[int]CPUInfo{}}
	for _, id := range online.List() {
		dir := fmt.Sprintf("devices/system/cpu/cpu%d/topology/", id)
		socket, err := readInt(fsys, dir+"physical_package_id")
		if err != nil {
			return Topology{}, err
		}
		core, err := readInt(fsys, dir+"core_id")
		if err != nil {
			return Topology{}, err
		}
		k := coreKey{socket, core}
		if _, ok := coreIDs[k]; !ok {
			coreIDs[k] = len(coreIDs)
		}
		t.CPUs[id] = CPUInfo{Socket: socket, Core: coreIDs[k], NUMANode: numa[id]}
	}
	if len(t.CPUs) == 0 {
		return Topology{}, fmt.Errorf("no online CPUs in %s", "devices/system/cpu/online")
	}
	perNode := map[int]int{}
	for _, c := range t.CPUs {
		perNode[c.NUMANode]++
	}
	for id, c := range t.CPUs {
		u, ok, err := readUncore(fsys, id, perNode[c.NUMANode])
		if err != nil {
			return Topology{}, err
		}
		if !ok {
			u = c.Socket
		}
		c.Uncore = u
		t.CPUs[id] = c
	}
	return t, nil
}

// readUncore reads the uncore cache of cpu from its cache/index*
// directories (in index order): the first cache above L2 that is not
// shared by exactly nodeCPUs CPUs (those of its NUMA node). ok is false
// when there is none (or no cache information at all).
func readUncore(fsys fs.FS, cpu, nodeCPUs int) (id int, ok bool, err error) {
	dirs, _ := fs.Glob(fsys, fmt.Sprintf("devices/system/cpu/cpu%d/cache/index[0-9]*", cpu))
	sort.Slice(dirs, func(i, j int) bool { return indexOf(dirs[i]) < indexOf(dirs[j]) })
	for _, d := range dirs {
		level, err := readInt(fsys, d+"/level")
		if err != nil {
			return 0, false, err
		}
		if level <= 2 {
			continue
		}
		shared, err := readCPUList(fsys, d+"/shared_cpu_list")
		if err != nil {
			return 0, false, err
		}
		if shared.Size() == nodeCPUs {
			continue
		}
		id, err := readInt(fsys, d+"/id")
		if err != nil {
			return 0, false, err
		}
		return id, true, nil
	}
	return 0, false, nil
}

func indexOf(dir string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(path.Base(dir), "index"))
	return n
}

// aligned tells whether all of set share one uncore cache (kubelet's
// uncore-cache alignment: an empty or one-CPU set is).
func (t Topology) aligned(set cpuset.CPUSet) bool {
	return len(t.keys(set, uncoreOf)) <= 1
}

func readCPUList(fsys fs.FS, name string) (cpuset.CPUSet, error) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return cpuset.New(), fmt.Errorf("read cpu list: %w", err)
	}
	s, err := cpuset.Parse(strings.TrimSpace(string(b)))
	if err != nil {
		return cpuset.New(), fmt.Errorf("%s: %w", name, err)
	}
	return s, nil
}

func readInt(fsys fs.FS, name string) (int, error) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return 0, fmt.Errorf("read cpu topology: %w", err)
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return v, nil
}
