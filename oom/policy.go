package oom

import "github.com/kernelet/kernelet/cgroups"

// ScoreAdj is the oom_score_adj of container c of pod p on a node with
// memoryCapacity bytes of memory (the node's capacity, not allocatable):
//
//   - node-critical and Guaranteed pods: -997;
//   - BestEffort pods: 1000;
//   - Burstable: 1000 − 1000·request/capacity (integer arithmetic), so a
//     container that requests more is killed later; a sidecar gets no more
//     than the value of the pod's regular container with the smallest
//     request; the result is clamped to [3, 999], so Burstable containers
//     always rank between Guaranteed and BestEffort ones.
func ScoreAdj(p Pod, c Container, memoryCapacity int64) int {
	if p.NodeCritical {
		return GuaranteedScoreAdj
	}
	switch p.QOS {
	case cgroups.Guaranteed:
		return GuaranteedScoreAdj
	case cgroups.BestEffort:
		return BestEffortScoreAdj
	}
	if memoryCapacity <= 0 {
		return BurstableMaxScoreAdj
	}
	adj := burstable(c.MemoryRequest, memoryCapacity)
	if c.Sidecar {
		if minReq, ok := smallestRequest(p.Containers); ok {
			adj = min(adj, burstable(minReq, memoryCapacity))
		}
	}
	switch {
	case adj < BurstableMinScoreAdj:
		return BurstableMinScoreAdj
	case adj >= BestEffortScoreAdj:
		return BurstableMaxScoreAdj
	}
	return int(adj)
}

func burstable(request, capacity int64) int64 {
	if request < 0 {
		request = 0
	}
	return 1000 - (1000*request)/capacity
}

// smallestRequest is the smallest memory request among regular containers.
func smallestRequest(cs []Container) (int64, bool) {
	var out int64
	found := false
	for _, c := range cs {
		if c.Sidecar {
			continue
		}
		if !found || c.MemoryRequest < out {
			out, found = c.MemoryRequest, true
		}
	}
	return out, found
}
