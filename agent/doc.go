// Package agent is the node daemon behind `kernelet run`: it builds the
// pod lifecycle's parts (sub-packages by responsibility: config, cluster,
// sources, podworkers, runtime, pleg, prober, volume, gc, podsetup,
// nodeip, server, logs, streaming, live) and hands them to each other in
// New and Run (agent.go, pods.go; podhooks.go: the callbacks between the
// prober, the volume manager, the collectors and the pod workers;
// serve.go: the endpoints; nodestatus.go: the node status inputs).
//
// Beside Run, RunOnce runs the static pods once (`kernelet run --runonce`;
// once.go wires agent/runonce).
//
// Inside Run the OOM kill stream (kevents, oom) runs beside the eviction
// manager: every kill is attributed to its pod and container and recorded
// (OOMKilling / SystemOOM events, kernelet_oom_kills_total, the recent
// kills of /status) — agent/oomkills.go decides scope and texts,
// agent/oomwatch.go wires the stream. The same kevents env opens the eBPF
// reclaim stall tracer (agent/reclaimwatch.go:
// kernelet_pod_reclaim_stall_seconds_total per pod, pods found by their
// cgroup's pod<uid> directory in a UID map of the workers' pods) and exports its tracers' run statistics
// (bpf.Collector: kernelet_bpf_program_run_{count,seconds}_total).
//
// liveview.go feeds the live dashboard and `kernelet top` (agent/live,
// agent/server/dashboard): evictions and OOMKilled terminations are
// published to the live hub as they happen, pressure condition changes
// within a second, and the snapshot is read from the cgroups on request.
//
// The agent imports the kernel side (cgroups, bpf, eviction, oom) as values
// and interfaces; the kernel side never imports the agent.
package agent
