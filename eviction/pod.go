package eviction

import (
	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// memoryRequest is the pod's effective memory request (containers, init
// containers, sidecars and overhead, as the scheduler counts them).
func memoryRequest(p *v1.Pod) int64 {
	q := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})[v1.ResourceMemory]
	return q.Value()
}

// MemoryRequest is the pod's effective memory request (what RankMemory
// compares its working set with).
func MemoryRequest(p *v1.Pod) int64 { return memoryRequest(p) }
