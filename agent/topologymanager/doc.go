// Package topologymanager is kubelet's topology manager: before a pod
// runs, the resource managers that care where on the machine a container's
// resources sit (today the CPU manager) give NUMA hints for each
// container (scope container) or for the whole pod (scope pod); the hints
// are merged (merge.go, pure) into the best affinity, the policy decides
// whether the pod may run — none and best-effort always, restricted only
// with a preferred affinity, single-numa-node only with a preferred
// affinity on one NUMA node, else kubelet's TopologyAffinityError
// "Resources cannot be allocated with Topology locality" — and the
// managers then allocate within that affinity. The Manager is the admit
// handler doing this (manager.go); under the none policy it only asks the
// managers to allocate. It never touches containers itself.
package topologymanager
