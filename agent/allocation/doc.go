// Package allocation owns what kernelet has granted each pod of the node's
// resources, as kubelet's allocation manager does for in-place pod resize
// (KEP-1287, GA in v1.35):
//
//   - resources.go: Resources, a pod's cpu/memory requirements per
//     container and at pod level; Of takes them from a pod, Apply puts
//     them back into a copy of it (the pod as allocated), Differs tells a
//     requested resize;
//   - store.go: Store, the resources per pod UID kept in a checkpoint file
//     under the root directory (allocated_pods_state for what was granted,
//     actuated_pods_state for what the runtime and cgroups were given), so
//     that both survive an agent restart;
//   - conditions.go: Conditions, the PodResizePending and
//     PodResizeInProgress conditions of each pod with kubelet's rules for
//     their reasons, observed generations and transition times;
//   - decide.go: the pure parts — which pending resize is tried first,
//     whether a resize increases requests, the Infeasible reasons kubelet
//     gives before any fit check, and the JSON summary of kubelet's Resize*
//     event messages;
//   - manager.go: Manager, which admits a resize against the node (the admit
//     handlers it is handed, with the other pods at their allocated
//     resources), checkpoints it, sets the conditions, records the events,
//     keeps the deferred resizes and tries them again when pods go, shrink
//     or every 3 minutes (kubelet's retry period), waking the pod's worker.
//
// Actuating an allocation (UpdateContainerResources, the pod cgroup) is the
// runtime's (agent/runtime, resize.go); this package never talks to the
// runtime, the cgroups or the API server.
package allocation
