// Package cgroups reads what the kernel knows about a cgroup or the node —
// memory, cpu, io (totals and per block device, the devices named
// /dev/<DEVNAME> from sysfs by BlockDevices), pids, PSI; meminfo, root
// memory.stat, filesystem usage, pid limits — over cgroup v2, hybrid and
// v1 with one API, watches
// memory.events, v1 oom_control and PSI triggers, and writes the QoS
// hierarchy (kubepods, burstable, besteffort, pod cgroups) through
// containerd/cgroups/v3 — under the systemd cgroup driver as slices made
// over systemd's D-Bus API (go-systemd) first (Layout names the cgroups
// of both drivers, ParsePodCgroup reads a path of either back to its pod
// and container, SliceProperties are a slice's unit properties) —, with
// kubelet v1.37's Memory QoS on cgroup v2
// (memory.min, memory.low, memory.high: ComputeQoSSettings,
// ComputePodMemoryQoS); the writes can be timed (ManagerConfig.Observe, ManagerMetrics: kubelet's
// kubelet_cgroup_manager_duration_seconds).
//
// Where the cgroup filesystems are mounted is discovered from
// /proc/self/mountinfo (Discover), never assumed. Parsers are pure
// functions over bytes that share one line scanner (a per-format setter
// takes each key), fuzzed with committed seed corpora; everything that
// touches a cgroup filesystem goes through a Hierarchies value. A
// PathCache maps cgroup ids (in the memcg or the unified id space,
// IDSpace) to paths, from the CgroupChange values a caller feeds it (the
// bpf cgroup tracer) and by walking the hierarchy on a miss.
//
// This package must never import the agent (pod) side.
package cgroups
