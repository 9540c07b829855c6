// Package podresources serves kubelet's podresources API
// (k8s.io/kubelet/pkg/apis/podresources v1: List, GetAllocatableResources,
// Get; and v1alpha1 List, which kubelet v1.37.2 still serves) on
// <root-dir>/pod-resources/kubelet.sock, rate limited as kubelet (100
// requests per second, bursts of 10; beyond: ResourceExhausted "rejected
// by rate limit").
//
// What it reports: the active pods (kubelet's default,
// KubeletPodResourcesListUseActivePods) with, per container (regular ones
// and restartable init containers, as kubelet), the devices of device
// plugins (agent/devicemanager), the CPUs it has of its own (the CPU
// manager's static policy; none in the shared pool) and its memory blocks
// (the memory manager's Static policy: type, size, NUMA nodes), and the
// node's allocatable devices, CPUs and memory per NUMA node, and the DRA
// claims it names as the DRA manager prepared them (agent/dra; kubelet's
// DynamicResources, KubeletPodResourcesDynamicResources). The server never
// changes anything.
// sources.go adapts the pod workers (WorkerPods), the CPU manager
// (CPUManager) and the memory manager (MemoryManager) to what it reads.
package podresources
