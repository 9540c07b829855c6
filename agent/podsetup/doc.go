// Package podsetup derives what the pod side needs from the configuration
// and the node before it runs a pod (New → Setup): the node's capacity
// (CPUs, MemTotal), its allocatable as the Node's status.allocatable says
// it (capacity − reserved − hard eviction thresholds, through
// status/node's Allocatable, so admission and the Node agree to the byte),
// the QoS cgroup hierarchy's settings (kubepods limited to capacity −
// reserved; Memory QoS with memoryThrottlingFactor and
// memoryReservationPolicy) and the options of every pod sync (sandbox and
// container configs; a container's Memory QoS is enforced when the
// MemoryQoS gate is on and the node runs cgroup v2), and the cgroup
// driver from the configuration and what the runtime reports
// (CgroupDriver). Pure functions of values, except NodeCapacity, which reads
// the node through package cgroups. It creates no cgroup and starts
// nothing: the agent applies the Setup (cgroups.Manager.EnsureQoS,
// runtime.Manager).
package podsetup
