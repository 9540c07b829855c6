package qos

import (
	v1 "k8s.io/api/core/v1"

	"github.com/kernelet/kernelet/internal/podutil"
	"github.com/kernelet/kernelet/oom"
)

// OOMPod is what the oom_score_adj policy needs to know of pod: its QoS
// class, whether it is node-critical, and its regular containers with their
// memory requests (see OOMContainer).
func OOMPod(pod *v1.Pod) oom.Pod {
	p := oom.Pod{QOS: Class(pod), NodeCritical: podutil.IsNodeCritical(pod)}
	for i := range pod.Spec.Containers {
		p.Containers = append(p.Containers, OOMContainer(pod, &pod.Spec.Containers[i]))
	}
	return p
}

// OOMContainer describes container c of pod to the oom_score_adj policy:
// its memory request (defaulting to its limit), plus — when the pod has a
// pod-level memory request — an equal share, over all init and regular
// containers, of the part of that request no container claims; Sidecar
// when c is an init container with restartPolicy Always.
func OOMContainer(pod *v1.Pod, c *v1.Container) oom.Container {
	return oom.Container{
		Name:          c.Name,
		MemoryRequest: ContainerRequests(c).MemoryBytes + unclaimedMemoryShare(pod),
		Sidecar:       IsSidecar(pod, c),
	}
}

// unclaimedMemoryShare is the pod-level memory request minus the
// containers' effective request, divided by the number of containers
// (0 without a pod-level memory request).
func unclaimedMemoryShare(pod *v1.Pod) int64 {
	if pod.Spec.Resources == nil {
		return 0
	}
	q, ok := pod.Spec.Resources.Requests[v1.ResourceMemory]
	n := int64(len(pod.Spec.Containers) + len(pod.Spec.InitContainers))
	if !ok || q.IsZero() || n == 0 {
		return 0
	}
	rest := q.Value() - aggregate(pod, ContainerRequests).MemoryBytes
	return max(rest, 0) / n
}
