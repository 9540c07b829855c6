// Package agent is the node daemon behind `kernelet run`, and its
// composition root only: it builds the pod lifecycle's parts (one
// sub-package per responsibility: config, cluster, sources, podworkers,
// runtime, pleg, prober, volume, volumemanager, pluginmanager, csi,
// apiobjects, gc, podsetup, nodeip, allocation, devicemanager,
// podresources, pressure, oomwatch, stats, server, logs, streaming, live)
// and hands
// them to each other in New and Run (agent.go; pods.go: the pod side
// from sources to workers to the runtime, the workers' Syncer and
// admission; podhooks.go: the callbacks between the prober, the volume
// manager, the collectors and the pod workers; listeners.go: the
// endpoints; nodestatus.go: the node status inputs; resizes.go: the
// allocation manager of in-place resize between the workers and each
// sync (and the QoS cgroups of agent/qoscgroups fed the allocated pods);
// nodeplugins.go:
// the plugin registration watcher, the CSI drivers' registry and CSINode,
// the CSI volume manager beside agent/volume, and the DRA manager
// (agent/dra: claims prepared through the runtime manager, its reconcile
// over the workers' pods); deviceplugins.go: the
// device plugin manager between admission, the runtime's container
// creation, the node status and housekeeping, and the podresources API
// over the workers' pods). Anything a
// sub-package could own belongs there, not here; no file of this
// package is named like a sub-package (internal/structure tests both,
// and keeps the package under 3,000 lines).
//
// Beside Run, RunOnce runs the static pods once (`kernelet run --runonce`;
// once.go wires agent/runonce).
//
// Inside Run the pressure side runs beside the pods (kernelsignals.go):
// agent/pressure builds the eviction manager with the stats it reads, the
// pods' local storage and the kernel notifications that wake it, and is
// handed the pod workers' kill path, the pod list and the PLEG cache;
// agent/oomwatch runs the OOM kill stream (attribution, OOMKilling /
// SystemOOM events, kernelet_oom_kills_total, the recent kills of
// /status) with the eBPF reclaim stall tracer.
//
// Metrics: New builds the registries of /metrics, /metrics/cadvisor,
// /metrics/resource and /metrics/probes (registries.go), each producing
// package's collectors made and registered there (agent/buildinfo, pleg,
// podworkers, prober, crimetrics, gc, stats, kubeclient's rest_client_*,
// oomwatch, eviction, cgroups, bpf, runtime's oom_score_adj), also those
// whose producers start later with the pod side; MetricNames describes
// those registries. sweeps.go hands the stats sweep of the pod side to
// agent/stats and the Summary API.
//
// liveview.go feeds the live dashboard and `kernelet top` (agent/live,
// agent/server/dashboard): evictions and OOM kills are published to the
// live hub as they happen (by agent/oomwatch while the kernel's OOM
// stream runs, else from the OOMKilled terminations of pod statuses),
// pressure condition changes within a second, and the snapshot is read
// from the cgroups on request.
//
// The agent imports the kernel side (cgroups, bpf, eviction; oom through
// agent/oomwatch) as values and interfaces; the kernel side never imports
// the agent.
package agent
