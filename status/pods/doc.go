// Package pods reports the node's pods to the API server, as kubelet's
// status manager and mirror pod manager do:
//
//   - the status of every pod the agent runs is PATCHed (a strategic
//     merge patch of the status with a UID precondition, retried on
//     conflict) when it changed, and compared with the API server's copy
//     on a periodic resync — up to four calls in flight (status writes
//     and the final deletions below), each free writer taking what waited
//     longest, also what came while the others run (kubelet writes one
//     at a time, so a burst of pod starts queues); terminal phases never
//     change, and
//     conditions the agent does not own (PodScheduled, DisruptionTarget,
//     readiness gates) are kept;
//   - a static pod's status goes to its mirror pod;
//   - a pod the API server deletes gracefully is deleted for good (grace 0,
//     UID precondition) once the agent has stopped everything of it and
//     its final status (set before Terminated) is written;
//   - every static pod has a mirror pod (kubernetes.io/config.mirror),
//     owned by the Node, created when missing, replaced when the static
//     pod changes, removed when it goes.
//
// The decisions (MergeStatus, StatusPatch, MirrorPod, MirrorActions) are
// pure functions over values in status.go and mirror.go; the loops that
// talk to the API server sit beside them in manager.go and mirror_sync.go.
// The package reads the API server's pods through a lister handed to it
// and writes through a client-go client; it never lists or watches by
// itself.
package pods
