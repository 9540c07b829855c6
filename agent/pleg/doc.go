// Package pleg is the pod lifecycle event generator: it relists the
// runtime's pods every period, turns the differences into per-pod events
// for the pod workers, keeps a cache of the latest runtime status of each
// pod, and reports its own health (kubelet's `pleg` check). It tries CRI
// GetContainerEvents as a wake-up hint and falls back to relist alone.
// It does not run or kill anything. Its metrics (metrics.go) are kubelet's
// relist ones (NewMetrics) and kubelet_running_pods and
// kubelet_running_containers counted from its cache (RegisterRunning).
package pleg
