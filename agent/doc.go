// Package agent is the node daemon behind `kernelet run`: it owns the pod
// lifecycle (sub-packages by responsibility: config, runtime, server, and
// the pod sources, workers, relist, probes, volumes and GC as they land) and
// wires them together in New and Run.
//
// Beside Run, RunOnce runs the static pods once (`kernelet run --runonce`),
// and DeleteAllUnusedContainers / DeleteUnusedImages reclaim disk on demand
// through the container and image collectors of agent/gc, which otherwise
// run every minute and every five minutes.
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
// dashboard.go feeds the live dashboard and `kernelet top` (agent/live,
// agent/server/dashboard): evictions and OOMKilled terminations are
// published to the live hub as they happen, pressure condition changes
// within a second, and the snapshot is read from the cgroups on request.
//
// The agent imports the kernel side (cgroups, bpf, eviction, oom) as values
// and interfaces; the kernel side never imports the agent.
package agent
