package eviction

import (
	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// What makes a pod critical to kubelet: its source annotation (static
// pods), the mirror annotation, or its priority.
const (
	annotationConfigSource = "kubernetes.io/config.source"
	annotationConfigMirror = "kubernetes.io/config.mirror"
	configSourceAPI        = "api"
	// SystemCriticalPriority is the lowest priority of a critical pod.
	SystemCriticalPriority int32 = 2_000_000_000
)

// IsCritical reports whether pod is never evicted: a static pod (its
// config.source names a source other than the API server), a mirror pod,
// or a pod with priority ≥ 2000000000 (kubelet's critical pods).
func IsCritical(pod *v1.Pod) bool {
	if src, ok := pod.Annotations[annotationConfigSource]; ok && src != configSourceAPI {
		return true
	}
	if _, ok := pod.Annotations[annotationConfigMirror]; ok {
		return true
	}
	return pod.Spec.Priority != nil && *pod.Spec.Priority >= SystemCriticalPriority
}

// memoryRequest is the pod's effective memory request (containers, init
// containers, sidecars and overhead, as the scheduler counts them).
func memoryRequest(p *v1.Pod) int64 {
	q := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})[v1.ResourceMemory]
	return q.Value()
}
