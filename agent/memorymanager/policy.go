package memorymanager

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/kernelet/kernelet/agent/qos"
	tm "github.com/kernelet/kernelet/agent/topologymanager"
	"github.com/kernelet/kernelet/cgroups"
)

// Policy names (memoryManagerPolicy).
const (
	PolicyNone   = "None"
	PolicyStatic = "Static"
)

// Reserved is reservedMemory: bytes per NUMA node and resource.
type Reserved map[int]map[v1.ResourceName]uint64

// ReservedFrom is reservedMemory of the KubeletConfiguration.
func ReservedFrom(list []kubeletv1beta1.MemoryReservation) Reserved {
	r := Reserved{}
	for _, m := range list {
		node := int(m.NumaNode)
		if r[node] == nil {
			r[node] = map[v1.ResourceName]uint64{}
		}
		for name, q := range m.Limits {
			r[node][name] += uint64(q.Value())
		}
	}
	return r
}

// Matches checks that the reserved memory adds up, per resource, to
// reservation: what node allocatable reserves (kubeReserved,
// systemReserved and the hard eviction threshold), kubelet's start check.
func (r Reserved) Matches(reservation map[v1.ResourceName]uint64) error {
	totals := map[v1.ResourceName]uint64{}
	for name := range reservation {
		totals[name] = 0
	}
	for _, node := range r {
		for name, v := range node {
			totals[name] += v
		}
	}
	for _, name := range sortedResources(totals) {
		if v := totals[name]; v != reservation[name] {
			return fmt.Errorf("the total amount %q of type %q is not equal to the value %q determined by Node Allocatable feature",
				resource.NewQuantity(int64(v), resource.BinarySI).String(), name, resource.NewQuantity(int64(reservation[name]), resource.BinarySI).String())
		}
	}
	return nil
}

// Static is kubelet's static memory policy over a State.
type Static struct {
	nodes       []Node
	all         tm.Mask
	allocatable map[int]map[v1.ResourceName]uint64
}

// NewStatic builds the policy: each node gives its memory less what is
// reserved on it. Some memory must be reserved (kubelet's error).
func NewStatic(nodes []Node, reserved Reserved) (*Static, error) {
	var total uint64
	for _, r := range reserved {
		total += r[v1.ResourceMemory]
	}
	if total == 0 {
		return nil, errors.New("[memorymanager] you should specify the system reserved memory")
	}
	p := &Static{nodes: nodes, allocatable: map[int]map[v1.ResourceName]uint64{}}
	known := map[int]bool{}
	for _, n := range nodes {
		known[n.ID] = true
		p.all |= tm.NewMask(n.ID)
		p.allocatable[n.ID] = map[v1.ResourceName]uint64{}
		for r, v := range n.Total {
			if res := reserved[n.ID][r]; res > v {
				return nil, fmt.Errorf("[memorymanager] NUMA node %d: %s reserved %d is more than its %d", n.ID, r, res, v)
			}
			p.allocatable[n.ID][r] = v - reserved[n.ID][r]
		}
	}
	for id, r := range reserved {
		if !known[id] {
			return nil, fmt.Errorf("the reserved memory configuration references a NUMA node %d that does not exist on this machine", id)
		}
		for name, v := range r {
			if _, ok := p.allocatable[id][name]; !ok && v > 0 {
				return nil, fmt.Errorf("the reserved memory configuration reserves %s on NUMA node %d, which has none", name, id)
			}
		}
	}
	return p, nil
}

// Allocatable is what each node can give, one block per node and memory
// resource with something to give, by node then resource (kubelet's
// allocatable memory of the podresources API).
func (p *Static) Allocatable() []Block {
	var out []Block
	for _, n := range p.nodes {
		for _, r := range slices.Sorted(maps.Keys(p.allocatable[n.ID])) {
			if v := p.allocatable[n.ID][r]; v > 0 {
				out = append(out, Block{NUMA: []int{n.ID}, Type: r, Size: v})
			}
		}
	}
	return out
}

// MachineState is the nodes' memory as s leaves it (the checkpoint's
// machineState, kubelet's): per node and memory resource its total, the
// reserved part, the allocatable rest, what s gives and what is free; a
// node's assignments count its blocks (a container's memory and
// hugepages on it are two) and its cells are the nodes its blocks span
// (itself alone when it serves no multi-node block).
func (p *Static) MachineState(s *State) MachineState {
	used, groups := p.used(s), p.groups(s)
	count := map[int]int{}
	for _, cs := range s.Assignments {
		for _, bs := range cs {
			for _, b := range bs {
				for _, n := range b.NUMA {
					count[n]++
				}
			}
		}
	}
	out := MachineState{}
	for _, n := range p.nodes {
		ns := &NodeState{NumberOfAssignments: count[n.ID], MemoryMap: map[v1.ResourceName]*MemoryTable{}, Cells: []int{n.ID}}
		if g, ok := groups[n.ID]; ok {
			ns.Cells = g.Nodes()
		}
		for r, total := range n.Total {
			alloc, given := p.allocatable[n.ID][r], used[n.ID][r]
			ns.MemoryMap[r] = &MemoryTable{Total: total, SystemReserved: total - alloc, Allocatable: alloc, Reserved: given, Free: alloc - given}
		}
		out[n.ID] = ns
	}
	return out
}

// Start checks a restored state against the nodes: every block on known
// nodes and resources, no node giving more than it can.
func (p *Static) Start(s *State) error {
	for uid, cs := range s.Assignments {
		for name, bs := range cs {
			for _, b := range bs {
				for node := range b.PerNode {
					if _, ok := p.allocatable[node][b.Type]; !ok {
						return fmt.Errorf("[memorymanager] (pod: %s, container: %s) the memory assignment uses %s on NUMA node %d, which does not exist", uid, name, b.Type, node)
					}
				}
			}
		}
	}
	used := p.used(s)
	for node, rs := range used {
		for r, v := range rs {
			if v > p.allocatable[node][r] {
				return fmt.Errorf("[memorymanager] the state gives %d of %s on NUMA node %d, more than its %d", v, r, node, p.allocatable[node][r])
			}
		}
	}
	return nil
}

// Requests are the memory resources container c of pod gets pinned:
// memory and hugepages requests of a Guaranteed pod without pod-level
// resources (kubelet v1.37.2 without PodLevelResourceManagers).
func Requests(pod *v1.Pod, c *v1.Container) map[v1.ResourceName]uint64 {
	if qos.Class(pod) != cgroups.Guaranteed || qos.PodLevelSet(pod) {
		return nil
	}
	out := map[v1.ResourceName]uint64{}
	for name, q := range c.Resources.Requests {
		if (name == v1.ResourceMemory || strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix)) && q.Value() > 0 {
			out[name] = uint64(q.Value())
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// used is what the state gives from each node, per resource.
func (p *Static) used(s *State) map[int]map[v1.ResourceName]uint64 {
	out := map[int]map[v1.ResourceName]uint64{}
	for _, cs := range s.Assignments {
		for _, bs := range cs {
			for _, b := range bs {
				for node, v := range b.PerNode {
					if out[node] == nil {
						out[node] = map[v1.ResourceName]uint64{}
					}
					out[node][b.Type] += v
				}
			}
		}
	}
	return out
}

// groups maps each node in use to the nodes its blocks span: a node of a
// multi-node block serves only that same set.
func (p *Static) groups(s *State) map[int]tm.Mask {
	out := map[int]tm.Mask{}
	for _, cs := range s.Assignments {
		for _, bs := range cs {
			for _, b := range bs {
				m := tm.NewMask(b.NUMA...)
				for _, n := range b.NUMA {
					out[n] |= m
				}
			}
		}
	}
	return out
}

// usable tells whether the nodes of m may take a new block: a single node
// not in a wider group, or several nodes each unused or in exactly m.
func (p *Static) usable(groups map[int]tm.Mask, m tm.Mask) bool {
	for _, n := range p.nodes {
		if !m.Has(n.ID) {
			continue
		}
		g, inUse := groups[n.ID]
		if m.Count() == 1 && inUse && g.Count() > 1 {
			return false
		}
		if m.Count() > 1 && inUse && g != m {
			return false
		}
	}
	return true
}

// amount sums per node over the nodes of m.
func (p *Static) amount(m tm.Mask, per func(node int) uint64) uint64 {
	var v uint64
	for _, n := range p.nodes {
		if m.Has(n.ID) {
			v += per(n.ID)
		}
	}
	return v
}

func (p *Static) free(s *State, used map[int]map[v1.ResourceName]uint64, m tm.Mask, r v1.ResourceName) uint64 {
	return p.amount(m, func(n int) uint64 { return p.allocatable[n][r] - used[n][r] })
}

// masks are the non-empty node sets, fewest nodes first.
func (p *Static) masks() []tm.Mask {
	var out []tm.Mask
	for m := tm.Mask(1); m <= p.all; m++ {
		if m&^p.all == 0 {
			out = append(out, m)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Count() < out[j].Count() })
	return out
}

// hints are the node sets that can take reqs now, preferred when as few
// nodes as reqs could ever need.
func (p *Static) hints(s *State, reqs map[v1.ResourceName]uint64) map[string][]tm.Hint {
	used, groups := p.used(s), p.groups(s)
	minNodes := 0
	var fits []tm.Mask
	for _, m := range p.masks() {
		ever, now := true, p.usable(groups, m)
		for r, q := range reqs {
			if p.amount(m, func(n int) uint64 { return p.allocatable[n][r] }) < q {
				ever = false
			}
			if p.free(s, used, m, r) < q {
				now = false
			}
		}
		if ever && minNodes == 0 {
			minNodes = m.Count()
		}
		if now && ever {
			fits = append(fits, m)
		}
	}
	out := map[string][]tm.Hint{}
	for r := range reqs {
		hs := []tm.Hint{}
		for _, m := range fits {
			hs = append(hs, tm.Hint{NUMA: m, Preferred: m.Count() == minNodes})
		}
		out[string(r)] = hs
	}
	return out
}

// held is the hint of what a container holds: its nodes, preferred.
func held(bs []Block) map[string][]tm.Hint {
	out := map[string][]tm.Hint{}
	for _, b := range bs {
		out[string(b.Type)] = []tm.Hint{{NUMA: tm.NewMask(b.NUMA...), Preferred: true}}
	}
	return out
}

// ContainerHints are the hints for container c of pod (nil: nothing pinned).
func (p *Static) ContainerHints(s *State, pod *v1.Pod, c *v1.Container) map[string][]tm.Hint {
	reqs := Requests(pod, c)
	if reqs == nil {
		return nil
	}
	if bs, ok := s.Assignments[string(pod.UID)][c.Name]; ok {
		return held(bs)
	}
	return p.hints(s, reqs)
}

// PodHints are the hints for the pod's memory at once: the larger of its
// app containers' and sidecars' sum and any init container's.
func (p *Static) PodHints(s *State, pod *v1.Pod) map[string][]tm.Hint {
	reqs := map[v1.ResourceName]uint64{}
	sidecars := map[v1.ResourceName]uint64{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		for r, q := range Requests(pod, c) {
			if qos.IsRestartableInit(c) {
				sidecars[r] += q
			} else {
				reqs[r] = max(reqs[r], sidecars[r]+q)
			}
		}
	}
	apps := map[v1.ResourceName]uint64{}
	for r, q := range sidecars {
		apps[r] = q
	}
	for i := range pod.Spec.Containers {
		for r, q := range Requests(pod, &pod.Spec.Containers[i]) {
			apps[r] += q
		}
	}
	for r, q := range apps {
		reqs[r] = max(reqs[r], q)
	}
	if len(reqs) == 0 {
		return nil
	}
	var bs []Block
	for _, cbs := range s.Assignments[string(pod.UID)] {
		bs = append(bs, cbs...)
	}
	if len(bs) > 0 {
		return held(bs)
	}
	return p.hints(s, reqs)
}

// Allocate pins container c of pod on the nodes of affinity when its
// requests fit there, else on the fewest nodes around affinity that take
// them (kubelet's extension of a hint), or, without an affinity, on the
// fewest nodes that do.
func (p *Static) Allocate(s *State, pod *v1.Pod, c *v1.Container, affinity tm.Mask) error {
	reqs := Requests(pod, c)
	uid := string(pod.UID)
	if reqs == nil {
		return nil
	}
	if _, ok := s.Assignments[uid][c.Name]; ok {
		return nil
	}
	used, groups := p.used(s), p.groups(s)
	// What the pod's finished init containers hold serves its later
	// containers (kubelet's reuse): it counts as free here.
	inits := reusableInits(s, pod, c)
	for _, name := range inits {
		for _, b := range s.Assignments[uid][name] {
			for n, v := range b.PerNode {
				used[n][b.Type] -= v
			}
		}
	}
	var chosen tm.Mask
	for _, m := range p.masks() {
		if affinity != 0 && m&affinity != affinity {
			continue
		}
		ok := p.usable(groups, m)
		for r, q := range reqs {
			ok = ok && p.free(s, used, m, r) >= q
		}
		if ok {
			chosen = m
			break
		}
	}
	if chosen == 0 {
		if affinity == 0 {
			return errors.New("[memorymanager] failed to get the default NUMA affinity, no NUMA nodes with enough memory is available")
		}
		return errors.New("[memorymanager] failed to find NUMA nodes to extend the current topology hint")
	}
	var nodes []int
	for _, n := range p.nodes {
		if chosen.Has(n.ID) {
			nodes = append(nodes, n.ID)
		}
	}
	var bs []Block
	for _, r := range sortedResources(reqs) {
		left := reqs[r]
		b := Block{NUMA: nodes, Type: r, Size: left, PerNode: map[int]uint64{}}
		for _, n := range nodes {
			take := min(left, p.allocatable[n][r]-used[n][r])
			if take > 0 {
				b.PerNode[n] = take
				left -= take
			}
		}
		bs = append(bs, b)
	}
	shrinkInits(s, uid, inits, bs)
	s.set(uid, c.Name, bs)
	return nil
}

// reusableInits are the pod's non-restartable init containers before c
// that hold memory.
func reusableInits(s *State, pod *v1.Pod, c *v1.Container) []string {
	var out []string
	for i := range pod.Spec.InitContainers {
		ic := &pod.Spec.InitContainers[i]
		if ic.Name == c.Name {
			break
		}
		if _, ok := s.Assignments[string(pod.UID)][ic.Name]; ok && !qos.IsRestartableInit(ic) {
			out = append(out, ic.Name)
		}
	}
	return out
}

// shrinkInits takes what the new blocks reuse out of the init
// containers' blocks, node by node.
func shrinkInits(s *State, uid string, inits []string, bs []Block) {
	for _, nb := range bs {
		for n, want := range nb.PerNode {
			for _, name := range inits {
				ibs := s.Assignments[uid][name]
				for i := range ibs {
					if ibs[i].Type != nb.Type || want == 0 {
						continue
					}
					got := min(want, ibs[i].PerNode[n])
					ibs[i].PerNode[n] -= got
					ibs[i].Size -= got
					want -= got
				}
			}
		}
	}
}

func sortedResources(m map[v1.ResourceName]uint64) []v1.ResourceName {
	out := make([]v1.ResourceName, 0, len(m))
	for r := range m {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Nodes are the NUMA nodes container name of the pod with podUID is pinned
// to (nil: none).
func Nodes(s *State, podUID, name string) []int {
	seen := map[int]bool{}
	var out []int
	for _, b := range s.Assignments[podUID][name] {
		for _, n := range b.NUMA {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	sort.Ints(out)
	return out
}

// RemoveStale releases what containers not in active (pod UID →
// container names) hold and returns them, "uid/name" each.
func RemoveStale(s *State, active map[string]map[string]bool) []string {
	var gone []string
	for uid, cs := range s.Assignments {
		for name := range cs {
			if !active[uid][name] {
				gone = append(gone, uid+"/"+name)
			}
		}
	}
	sort.Strings(gone)
	for _, g := range gone {
		uid, name, _ := strings.Cut(g, "/")
		s.delete(uid, name)
	}
	return gone
}

// MessageResizeInfeasible is kubelet's Infeasible message for a memory
// resize of a Guaranteed pod under the Static policy (without
// InPlacePodVerticalScalingExclusiveMemory, alpha and off).
const MessageResizeInfeasible = `Resize is infeasible for Guaranteed Pods alongside Memory Manager policy "Static"`

// MemoryResizeOfGuaranteed tells whether a resize from allocated to
// desired changes the memory requests or limits of a container of a
// Guaranteed pod.
func MemoryResizeOfGuaranteed(desired, allocated *v1.Pod) bool {
	return qos.GuaranteedResize(desired, allocated, v1.ResourceMemory)
}

// ResizeInfeasible is kubelet's Infeasible message for a resize from
// allocated to desired under this manager's policy ("" when it is not).
func (m *Manager) ResizeInfeasible(desired, allocated *v1.Pod) string {
	if m.policy == nil || !MemoryResizeOfGuaranteed(desired, allocated) {
		return ""
	}
	return MessageResizeInfeasible
}
