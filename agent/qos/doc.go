// Package qos maps a Kubernetes Pod to the plain values the kernel side
// decides on: its QoS class (cgroups.QOSClass), the effective requests and
// limits its pod cgroup is sized from (cgroups.PodResources), and what the
// oom_score_adj policy needs to know of it (oom.Pod, oom.Container).
//
// Everything here is a pure function of the v1.Pod: no I/O, no clock, no
// feature gates. The rules are kubelet's (Kubernetes 1.3x with
// PodLevelResources and sidecar containers enabled):
//
//   - Requests default to limits, per container and per resource, when only
//     the limit is set (what API defaulting does; static pods may arrive
//     undefaulted, so it is repeated here). Pod-level requests default the
//     same way (see PodLevel).
//   - QoS class: with pod-level cpu/memory resources set, the pod-level
//     requirements alone decide; otherwise every container (init, sidecar
//     and regular) is classified per resource — cpu and memory request equal
//     to the limit and non-zero: Guaranteed; both zero: BestEffort; else
//     Burstable — and the pod is Guaranteed or BestEffort only when every
//     container is, else Burstable. A QOSClass already in the pod's status
//     wins (Class), as it is immutable once the API server set it.
//   - Effective requests and limits: max(sum over regular and sidecar
//     containers, the largest init-container need), where an init
//     container needs its own amount plus the sidecars started before it;
//     pod-level values replace the container sums for the resources they
//     set; pod overhead is added for the pod cgroup.
//
// This package must not touch cgroups, the runtime or the API server.
package qos
