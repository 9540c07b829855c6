// Package cgroups reads what the kernel knows about a cgroup or the node —
// memory, cpu, io, pids, PSI; meminfo, root memory.stat, filesystem usage,
// pid limits — over cgroup v2, hybrid and v1 with one API, watches
// memory.events, v1 oom_control and PSI triggers, and writes the QoS
// hierarchy (kubepods, burstable, besteffort, pod cgroups).
//
// Nothing is implemented here yet: the readers arrive with the "kernel
// signals, part one" issue. This package must never import the agent side.
package cgroups
