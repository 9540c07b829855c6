// Package gc is kernelet's garbage collection of what pods leave in the
// runtime: dead containers (with their log files) and sandboxes no pod
// needs any more (ContainerGC), and images no container uses while the
// image filesystem is too full or once they have not been used for the
// maximum age (ImageGC).
//
// The decisions are pure functions over plain values (SelectContainers,
// ImageEvictionOrder, OldImages, ImageFsUsageOf, FreeCandidates); the
// collectors around them only list, remove and record. Both collectors run
// periodically (kubelet's periods: one minute for containers, five for
// images) and on demand (DeleteAllUnusedContainers, DeleteUnusedImages),
// which is what the eviction manager calls first under disk pressure.
// ImageGCMetrics is kubelet's kubelet_image_garbage_collected_total{reason}.
//
// NewCollectors builds both collectors from the KubeletConfiguration.
//
// It does not find pods itself: a PodStateFunc handed to it says whether a
// pod is active, finished or removed — the agent's is PodStates.Of, a rule
// over what the pod workers run and what the pod sources want — and
// PodImages lists the images pods name (the agent's: SpecImages of the
// sources' pods). It never removes a running container, an image a
// container (running or exited) uses or a pod names before its container
// exists, a pinned image or the runtime's sandbox image, nor — for a pod
// that still exists — the newest dead container of each of its
// containers, which the pod's status (lastState) and `kubectl logs
// --previous` read.
package gc
