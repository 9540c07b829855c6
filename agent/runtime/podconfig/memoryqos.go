package podconfig

import (
	"strconv"

	v1 "k8s.io/api/core/v1"

	"github.com/kernelet/kernelet/agent/qos"
	"github.com/kernelet/kernelet/cgroups"
)

// The cgroup v2 interface files of Memory QoS, as CRI unified keys.
const (
	memoryMinKey  = "memory.min"
	memoryLowKey  = "memory.low"
	memoryHighKey = "memory.high"
)

// MemoryQoSOptions are what the Memory QoS of a container depends on
// besides the pod and the container.
type MemoryQoSOptions struct {
	// Enforce: the MemoryQoS gate is on and the node's memory controller
	// is on cgroup v2 (kubelet's isMemoryQoSEnforced; kernelet also asks
	// for a kernel of at least 5.9, cgroups.Manager.MemoryQoS).
	Enforce bool
	// ThrottlingFactor is memoryThrottlingFactor; 0 is kubelet's unset
	// (nil, its v1.37 default): no memory.high.
	ThrottlingFactor float64
	// TieredReservation is memoryReservationPolicy: TieredReservation.
	TieredReservation bool
	// AllocatableMemory is the node's memory capacity − systemReserved −
	// kubeReserved in bytes (kubelet's GetNodeAllocatableAbsolute, without
	// the eviction thresholds): memory.high of a container without a
	// memory limit is computed against it.
	AllocatableMemory int64
	// PageSize rounds memory.high down (os.Getpagesize() on the node).
	PageSize int64
}

// ContainerMemoryQoS returns the cgroup v2 entries of CRI
// LinuxContainerResources.Unified that Memory QoS gives container c of
// pod, as kubelet v1.37.2 sets them:
//   - not enforced: memory.high=max on cgroup v2 (kubelet resets a
//     throttle of an earlier run with the gate on), nothing on v1;
//   - memory.min and memory.low: with TieredReservation and a memory
//     request, memory.min = the request in a Guaranteed pod, memory.low =
//     the request otherwise; else both "0";
//   - memory.high, with a throttling factor, when the container's memory
//     request differs from its limit or is 0, and the container does not
//     leave its limit to a pod-level one:
//     floor((request + factor·(limit or AllocatableMemory − request)) /
//     page)·page, only when it lies above the request.
func ContainerMemoryQoS(pod *v1.Pod, c *v1.Container, o MemoryQoSOptions, cgroupV2 bool) map[string]string {
	if !o.Enforce {
		if cgroupV2 {
			return map[string]string{memoryHighKey: "max"}
		}
		return nil
	}
	request, limit := qos.ContainerRequests(c).MemoryBytes, qos.ContainerLimits(c).MemoryBytes
	unified := map[string]string{}
	switch {
	case request != 0 && o.TieredReservation && qos.Class(pod) == cgroups.Guaranteed:
		unified[memoryMinKey] = strconv.FormatInt(request, 10)
	case request != 0 && o.TieredReservation:
		unified[memoryLowKey] = strconv.FormatInt(request, 10)
	default:
		unified[memoryMinKey], unified[memoryLowKey] = "0", "0"
	}
	if h := containerMemoryHigh(pod, request, limit, o); h > 0 {
		unified[memoryHighKey] = strconv.FormatInt(h, 10)
	}
	return unified
}

// containerMemoryHigh is memory.high of a container with the given memory
// request and limit (0: none), or 0 for none.
func containerMemoryHigh(pod *v1.Pod, request, limit int64, o MemoryQoSOptions) int64 {
	if o.ThrottlingFactor <= 0 || o.PageSize <= 0 {
		return 0
	}
	if limit == 0 && podMemoryLimit(pod) {
		return 0 // the pod cgroup's memory.high throttles it
	}
	if request == limit && request != 0 {
		return 0
	}
	against := limit
	if against == 0 {
		against = o.AllocatableMemory
	}
	if against <= 0 {
		return 0
	}
	if h := cgroups.MemoryHigh(request, against, o.ThrottlingFactor, o.PageSize); h > request {
		return h
	}
	return 0
}

// podMemoryLimit tells whether the pod has a pod-level memory limit.
func podMemoryLimit(pod *v1.Pod) bool {
	if !qos.PodLevelSet(pod) {
		return false
	}
	q, ok := pod.Spec.Resources.Limits[v1.ResourceMemory]
	return ok && !q.IsZero()
}
