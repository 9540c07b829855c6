// Package pleg is the pod lifecycle event generator: it keeps a cache of
// the latest runtime status of each pod, turns the changes into per-pod
// events for the pod workers, and reports its own health (kubelet's
// `pleg` check, from the relist).
//
// It follows the runtime's CRI GetContainerEvents stream (evented.go).
// With Config.Evented (the EventedPLEG gate) each event updates the cache
// from the event's sandbox and container statuses and emits the pod's
// events at once; every status carries the time it was read (the event's
// creation time, a relist's start) and an older one never replaces a
// newer one (an event older than its pod's status asks for a relist). The relist then runs every SafetyPeriod (1 min) as the
// safety net, and at Period (1 s) whenever the stream is broken (reopened
// with back-off; Unimplemented, containerd 1.6, leaves relist alone).
// Without Evented an event only wakes the relist early.
//
// Listed hands the housekeeping the last relist's view of every pod (while
// that relist is at most two periods old), so the housekeeping does not
// list the runtime again. Forget drops a pod its worker removed: neither
// Listed, a relist that listed before, nor an event made before bring it
// back.
//
// Gate (gate.go) filters the events for the pod workers: a sync that
// left nothing to do records the status it read, and an event that finds
// the pod so wakes no worker; an event during a sync is judged at its end.
//
// It does not run or kill anything. Its metrics (metrics.go) are kubelet's
// relist and evented PLEG ones (NewMetrics), kernelet_pleg_events_active,
// and kubelet_running_pods and kubelet_running_containers counted from
// its cache (RegisterRunning).
package pleg
