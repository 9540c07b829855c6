// Package agent is the node daemon behind `kernelet run`: it builds the
// pod lifecycle's parts (sub-packages by responsibility: config, cluster,
// sources, podworkers, runtime, pleg, prober, volume, gc, podsetup,
// nodeip, server, logs, streaming, live) and hands them to each other in
// New and Run (agent.go, pods.go; podhooks.go: the callbacks between the
// prober, the volume manager, the collectors and the pod workers;
// listeners.go: the endpoints; nodestatus.go: the node status inputs).
//
// Beside Run, RunOnce runs the static pods once (`kernelet run --runonce`;
// once.go wires agent/runonce).
//
// Inside Run the pressure side runs beside the pods: agent/pressure builds
// the eviction manager with the stats it reads, the pods' local storage
// and the kernel notifications that wake it (kernelsignals.go hands it the
// pod workers' kill path, the pod list and the PLEG cache), and
// agent/oomwatch runs the OOM kill stream (attribution, OOMKilling /
// SystemOOM events, kernelet_oom_kills_total, the recent kills of
// /status) with the eBPF reclaim stall tracer.
//
// Metrics: New builds the registries of /metrics, /metrics/cadvisor,
// /metrics/resource and /metrics/probes (registries.go) and has each
// producing package register its own collectors there (agent/buildinfo,
// pleg, podworkers, prober, crimetrics, gc, stats, kubeclient's
// rest_client_*, eviction, cgroups, bpf, runtime's oom_score_adj), also
// those whose producers start later with the pod side; MetricNames
// describes those registries. sweeps.go hands the stats sweep of the pod
// side to agent/stats and the Summary API.
//
// liveview.go feeds the live dashboard and `kernelet top` (agent/live,
// agent/server/dashboard): evictions and OOMKilled terminations are
// published to the live hub as they happen, pressure condition changes
// within a second, and the snapshot is read from the cgroups on request.
//
// The agent imports the kernel side (cgroups, bpf, eviction, oom) as values
// and interfaces; the kernel side never imports the agent.
package agent
