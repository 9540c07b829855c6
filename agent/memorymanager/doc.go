// Package memorymanager is kubelet's memory manager with the None and
// Static policies: under Static, each container of a Guaranteed pod gets
// its memory and hugepages requests reserved on a set of NUMA nodes (one
// when it fits) and runs with cpuset.mems on them; a set of several nodes
// serves only containers pinned to that same set (kubelet's groups). The
// nodes' memory less reservedMemory is what can be given.
//
// The pure parts: the NUMA nodes' memory from sysfs (nodes.go), the static
// policy over a State — hints for the topology manager, allocation within
// an affinity, release, and the checkpoint (policy.go, state.go). The
// Manager (manager.go) holds the checkpoint `<root-dir>/memory_manager_state`
// (kubelet's policyName, machineState and entries)
// and takes part in admission as a topology manager provider; it never
// touches containers: the runtime asks it for a container's memory nodes.
package memorymanager
