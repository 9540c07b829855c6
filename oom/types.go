package oom

import "github.com/kernelet/kernelet/cgroups"

// The fixed oom_score_adj values of kubelet's policy.
const (
	// AgentScoreAdj is the agent's own value (oomScoreAdj's default).
	AgentScoreAdj = -999
	// GuaranteedScoreAdj is for Guaranteed and node-critical pods.
	GuaranteedScoreAdj = -997
	// BestEffortScoreAdj is for BestEffort pods: killed first.
	BestEffortScoreAdj = 1000
	// BurstableMinScoreAdj and BurstableMaxScoreAdj bound Burstable containers,
	// so they always rank between Guaranteed and BestEffort.
	BurstableMinScoreAdj = 1000 + GuaranteedScoreAdj // 3
	BurstableMaxScoreAdj = BestEffortScoreAdj - 1    // 999
)

// Pod is what the policy needs to know of a pod, as plain values: the pod
// side maps a Kubernetes Pod to it.
type Pod struct {
	QOS cgroups.QOSClass
	// NodeCritical: the pod has the system-node-critical priority class.
	NodeCritical bool
	// Containers are the regular (app) containers.
	Containers []Container
}

// Container is one container of a pod.
type Container struct {
	Name string
	// MemoryRequest is the container's memory request in bytes (0 if none).
	MemoryRequest int64
	// Sidecar: an init container with restartPolicy Always.
	Sidecar bool
}
