// Package qoscgroups keeps the QoS cgroups — kubepods, burstable and
// besteffort — sized for the pods that run, as kubelet's QoS container
// manager does: burstable's cpu shares are the sum of its pods' cpu
// requests, Memory QoS's reservations the sums of the memory requests.
// They are written when the sums change (a pod admitted, resized or gone)
// and every minute (Refresh) even when nothing changed.
//
// The agent calls Update before each pod sync (the pod's share in its QoS
// cgroup comes before its own cgroup), from housekeeping and when a pod
// terminated; most syncs change nothing, so each pod's requirements are
// remembered with the pod object they came from and the allocations'
// generation, and summed again only when one of them changed.
package qoscgroups
