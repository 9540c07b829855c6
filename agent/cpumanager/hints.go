package cpumanager

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/cpuset"

	"github.com/kernelet/kernelet/agent/qos"
	tm "github.com/kernelet/kernelet/agent/topologymanager"
)

// NUMANodes is the mask of the NUMA nodes that have CPUs.
func (t Topology) NUMANodes() tm.Mask {
	var m tm.Mask
	for _, c := range t.CPUs {
		m |= tm.NewMask(c.NUMANode)
	}
	return m
}

// onNodes are the CPUs of set on the nodes of mask (0: all of set).
func (t Topology) onNodes(set cpuset.CPUSet, mask tm.Mask) cpuset.CPUSet {
	if mask == 0 {
		return set
	}
	var ids []int
	for _, id := range set.UnsortedList() {
		if mask.Has(t.CPUs[id].NUMANode) {
			ids = append(ids, id)
		}
	}
	return cpuset.New(ids...)
}

// hintsFor are the NUMA hints for n exclusive CPUs from available: every
// set of nodes with n of them free, preferred when it has as few nodes as
// n CPUs could ever need (counting every allocatable CPU).
func (p *Static) hintsFor(available cpuset.CPUSet, n int) map[string][]tm.Hint {
	nodes := p.topo.NUMANodes()
	allocatable := p.Allocatable()
	minNodes := 0
	var masks []tm.Mask
	for m := tm.Mask(1); m <= nodes; m++ {
		if m&^nodes != 0 {
			continue
		}
		masks = append(masks, m)
		if p.topo.onNodes(allocatable, m).Size() >= n && (minNodes == 0 || m.Count() < minNodes) {
			minNodes = m.Count()
		}
	}
	hints := []tm.Hint{}
	for _, m := range masks {
		if p.topo.onNodes(available, m).Size() >= n {
			hints = append(hints, tm.Hint{NUMA: m, Preferred: m.Count() == minNodes})
		}
	}
	return map[string][]tm.Hint{string(v1.ResourceCPU): hints}
}

// held is the hint of CPUs already given: their nodes, preferred.
func (p *Static) held(c cpuset.CPUSet) map[string][]tm.Hint {
	var m tm.Mask
	for _, id := range c.UnsortedList() {
		m |= tm.NewMask(p.topo.CPUs[id].NUMANode)
	}
	return map[string][]tm.Hint{string(v1.ResourceCPU): {{NUMA: m, Preferred: true}}}
}

// ContainerHints are the hints for container c of pod (nil: it gets no
// exclusive CPUs).
func (p *Static) ContainerHints(s *State, pod *v1.Pod, c *v1.Container) map[string][]tm.Hint {
	n := GuaranteedCPUs(pod, c)
	if n == 0 {
		return nil
	}
	if got, ok := s.Get(string(pod.UID), c.Name); ok {
		return p.held(got)
	}
	return p.hintsFor(p.available(s).Union(p.reuse[string(pod.UID)]), n)
}

// PodHints are the hints for all the pod's exclusive CPUs at once: those
// of its longest-running set (the app containers and sidecars) or of its
// largest init container, whichever is more.
func (p *Static) PodHints(s *State, pod *v1.Pod) map[string][]tm.Hint {
	n := podGuaranteedCPUs(pod)
	if n == 0 {
		return nil
	}
	if cs, ok := s.Assignments[string(pod.UID)]; ok && len(cs) > 0 {
		all := cpuset.New()
		for _, c := range cs {
			all = all.Union(c)
		}
		return p.held(all)
	}
	return p.hintsFor(p.available(s), n)
}

// podGuaranteedCPUs is the number of exclusive CPUs the pod holds at
// most at once: its app containers' and sidecars', or an init
// container's with the sidecars started before it, the larger.
func podGuaranteedCPUs(pod *v1.Pod) int {
	sidecars, initMax := 0, 0
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		n := GuaranteedCPUs(pod, c)
		if qos.IsRestartableInit(c) {
			sidecars += n
		} else {
			initMax = max(initMax, sidecars+n)
		}
	}
	apps := sidecars
	for i := range pod.Spec.Containers {
		apps += GuaranteedCPUs(pod, &pod.Spec.Containers[i])
	}
	return max(apps, initMax)
}
