package cpumanager

import "k8s.io/apimachinery/pkg/types"

// MemoryNodes is the memory manager's answer for a container: the NUMA
// nodes of its memory, "" when it is not pinned.
type MemoryNodes interface {
	MemoryNodes(podUID, name string) string
}

// Pinning answers the runtime (runtime.Pinning) with the CPU manager's
// state and the memory manager's.
type Pinning struct {
	CPUs   *Manager
	Memory MemoryNodes
}

// CPUSet is the cpuset of the container: "" under the none policy.
func (p Pinning) CPUSet(uid types.UID, name string) string {
	if !p.CPUs.Static() {
		return ""
	}
	return p.CPUs.CPUs(string(uid), name).String()
}

// Exclusive tells whether the container has CPUs of its own.
func (p Pinning) Exclusive(uid types.UID, name string) bool {
	return p.CPUs.Exclusive(string(uid), name)
}

// MemoryNodes is the container's cpuset.mems.
func (p Pinning) MemoryNodes(uid types.UID, name string) string {
	return p.Memory.MemoryNodes(string(uid), name)
}
