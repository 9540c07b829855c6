// Package grace holds the deadline of a pod's termination that a later,
// shorter grace period brings forward while the termination runs: the pod
// worker (agent/podworkers) shortens it when a deletion or eviction with a
// smaller grace arrives, as kubelet's pod worker lets a grace period only
// decrease, and the runtime (agent/runtime) bounds the preStop hooks and
// container stops of the running kill by it. It only keeps time: it never
// talks to the runtime or the API server.
package grace
