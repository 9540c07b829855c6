// Package stats is the node's resource usage as operators and
// metrics-server read it: one sweep of the cgroups (the node, the root and
// kubepods cgroups, every pod's and every running container's cgroup)
// shared by /metrics/cadvisor, /metrics/resource and /stats/summary, and
// the pure conversions of a sweep into cAdvisor's series, kubelet's
// resource metrics, the Summary API (k8s.io/kubelet stats/v1alpha1) and
// kernelet's PSI gauges of /metrics (the avg10 shares; the cumulative stall
// times are cAdvisor's container_pressure_*). Register registers the three
// collectors with their endpoints' registries.
//
// A Collector reads a sweep on demand and keeps it for a short window
// (Config.MaxAge, 1 s by default): scrapes of the three endpoints within
// that window share one read, and concurrent scrapes wait for the read in
// flight instead of starting their own. Each cgroup is read with one
// cgroups.Reader call (every file of the groups it needs), never file by
// file per series.
//
// The pods and containers to read come from an Inventory function the
// agent provides (pod identity, cgroup, containers with their runtime IDs
// and images); the package knows nothing of the pod workers, the runtime
// or HTTP. ContainersOf turns a pod status's container into the
// Inventory's instances; BootTime reads the node's boot time.
//
// container_oom_events_total counts, per pod and container name,
// over every instance of the container seen while the pod lives: the
// kernel's OOM kill counter of the instance's cgroup (v2 memory.events
// oom_kill, v1 memory.oom_control oom_kill) as last read, or 1 when the
// runtime reports the instance terminated with reason OOMKilled and its
// cgroup was gone before a sweep saw the kill (the runtime removes an
// exited container's cgroup within milliseconds).
//
// The node filesystem's usage is a statfs of Config.RootDir (also reported
// as the image filesystem unless Config.ImageFsDir names another). A pod's
// ephemeral storage, its disk emptyDirs and its containers' rootfs and
// logs in the Summary API come from the Inventory (Pod.Storage:
// agent/pressure's last measurement); this package walks no directory.
// The stats of PVC volumes (with their pvcRef) come from the Inventory too
// (Pod.Claims: the CSI drivers' NodeGetVolumeStats, through
// agent/volumemanager).
//
// Not read yet: network, accelerators.
package stats
