// Package oom owns kernelet's OOM handling: the oom_score_adj policy (a
// pure function of pod, container and node capacity), the adjuster for
// processes outside containers, the OOM kill sources merged into one stream
// (eBPF first; then v2 memory.events, v1 oom_control, /dev/kmsg), and the
// attribution of each kill to its pod and container through a resolver
// interface.
//
// Nothing is implemented here yet: it arrives with the eBPF and pod
// lifecycle issues. This package must never import the agent side.
package oom
