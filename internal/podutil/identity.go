package podutil

import v1 "k8s.io/api/core/v1"

// IsStatic reports whether pod came from a static source (file or URL):
// kubelet's rule, a config.source annotation that is not SourceAPI.
func IsStatic(pod *v1.Pod) bool {
	src, ok := pod.Annotations[AnnotationConfigSource]
	return ok && src != SourceAPI
}

// IsMirror reports whether pod is the API server's mirror of a static pod
// (it has the config.mirror annotation).
func IsMirror(pod *v1.Pod) bool {
	_, ok := pod.Annotations[AnnotationConfigMirror]
	return ok
}

// IsCritical reports whether pod is critical in kubelet's sense (never
// evicted): a static pod, a mirror pod, or a pod with priority ≥
// SystemCriticalPriority.
func IsCritical(pod *v1.Pod) bool {
	if IsStatic(pod) || IsMirror(pod) {
		return true
	}
	return pod.Spec.Priority != nil && *pod.Spec.Priority >= SystemCriticalPriority
}

// IsNodeCritical reports whether pod is node-critical, kubelet's rule: a
// critical pod (IsCritical) whose priorityClassName is
// system-node-critical. The class name alone is not enough: an API pod
// naming the class without the priority the admission plugin resolves it
// to is not node-critical.
func IsNodeCritical(pod *v1.Pod) bool {
	return pod.Spec.PriorityClassName == SystemNodeCritical && IsCritical(pod)
}

// IsTerminal reports whether phase is Succeeded or Failed: the pod's
// containers will not run again.
func IsTerminal(phase v1.PodPhase) bool {
	return phase == v1.PodSucceeded || phase == v1.PodFailed
}

// FullName is pod's namespace/name.
func FullName(pod *v1.Pod) string { return pod.Namespace + "/" + pod.Name }
