// Package oom owns kernelet's OOM handling: the oom_score_adj policy
// (ScoreAdj, a pure function of pod, container and node capacity), and one
// stream of OOM kills (OpenStream) merging every source the host has — the
// eBPF mark_victim tracer first; without it v2 memory.events, v1
// oom_control eventfds and /dev/kmsg — deduplicated into one Kill per victim
// (a process once, even when the kernel marks it again within
// DefaultRepeat) with the sources that saw it and only the fields those
// sources really have, attributed to pod and container through a Resolver. Each source
// is a file of its own behind a small interface (source_*_linux.go); a
// stream emits a kill when its merge window ends, or as soon as every
// source of StreamConfig.Complete reported it. ParseKmsg reads the
// kernel's OOM lines from /dev/kmsg records; Applied and ReadScoreAdj tell
// how a requested oom_score_adj ended up on a container's process (and
// who refused it: the runtime, the kernel or the process).
//
// This package must never import the agent side: the Resolvers are
// implemented there (agent/runtime's CgroupResolver over CRI labels,
// agent/oomwatch's over the agent's own pods first) and handed in by
// agent/oomwatch for `kernelet run` and by cmd/kernelet for `kernelet
// trace` (through kevents).
package oom
