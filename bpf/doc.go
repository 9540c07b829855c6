// Package bpf is kernelet's eyes on kernel events: CO-RE eBPF programs (C in
// bpf/c, one file per program family, with a committed vmlinux.h) compiled
// by bpf2go, and Go loaders that expose typed events on channels — OOM
// kills, memcg reclaim stalls, process exits, cgroup mkdir/rmdir — and
// report their own run time. Each program degrades tp_btf → raw_tp →
// tracepoint → unavailable, naming the missing kernel feature.
//
// The generated objects are committed and reproduced by `make generate`.
// Nothing is implemented here yet: the programs arrive with the eBPF issue.
// This package must never import the agent (pod) side.
package bpf
