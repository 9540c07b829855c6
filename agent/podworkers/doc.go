// Package podworkers runs one serialized worker per pod UID: it admits a
// pod before its first sync, syncs it (again on every update, lifecycle
// event, error back-off and sync period), and terminates it in two phases
// (terminating: kill with grace, then the pod's final status; terminated:
// cleanup). Updates that arrive while a sync runs coalesce into the next
// one; a terminate or kill with a shorter grace than the termination
// under way brings its deadline forward (grace.go: a grace period only
// ever decreases, as kubelet's). What a sync, kill or
// cleanup does is the Syncer's business; this package never talks to the
// runtime itself.
//
// Admission runs the AdmitHandlers it is given, in order; kubelet's own
// are here (admit.go: ResourceFit, Validate; admit_node.go: PodOS,
// NodeName, NodeAffinity, Taints, NodePorts, Sysctls), and a rejected pod
// ends Failed (RejectedStatus). A pod already Succeeded or Failed in its
// source when first seen (an agent restart) is not admitted: it is
// stopped, never synced, keeps its source's status and counts against no
// other pod. With an Allocation (agent/allocation),
// a pod and the others are admitted at their allocated requirements and
// an admitted pod's are recorded. Metrics (metrics.go) times the syncs as
// kubelet's kubelet_pod_worker_duration_seconds,
// kubelet_pod_start_duration_seconds and
// kubelet_pod_start_sli_duration_seconds (image pulls reported to it are
// left out).
package podworkers
