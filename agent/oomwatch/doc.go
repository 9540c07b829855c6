// Package oomwatch is the OOM kill stream inside `kernelet run`: a Watch
// (New, then Start) opens the kernel events (kevents: the eBPF OOM tracer
// merged with kmsg, else the fallbacks memory.events, oom_control and kmsg),
// attributes each kill to its pod and container (the pod<uid> directory
// among the workers' pods, the PLEG cache, CRI for what they do not know
// yet) and decides the scope of the limit that was hit (container, pod,
// kubepods, node). Each kill becomes an OOMKilling pod event (SystemOOM on
// the node for a global OOM), kernelet_oom_kills_total (its series of pods
// that are gone dropped every 30 s), an entry of the recent kills of /status
// (Watch.Status), a live hub event, and a wake-up of the eviction manager
// (unless its scope is node without a global OOM: a limit outside the pods'
// memory).
//
// The same kernel events env opens the eBPF reclaim stall tracer
// (kernelet_pod_reclaim_stall_seconds_total per pod; a stall of 10 ms or
// more wakes the eviction manager, at most every 100 ms) and exports the
// eBPF programs' run statistics (bpf.Collector). The two counters are made
// here (NewKillsCounter, NewReclaimStallCounter) and registered by the
// caller with the /metrics registry. ReleaseStartupMemory gives back the
// heap that opening the tracers needed once; ProtectAgent sets the agent's
// own oom_score_adj.
//
// What it needs from the pod side (the pods, the PLEG cache, the eviction
// manager's Wake, the live hub) is handed in through Config (types.go); it
// must not import the agent root.
package oomwatch
