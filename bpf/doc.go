// Package bpf is kernelet's eyes on kernel events: CO-RE eBPF programs (C in
// bpf/c, one file per program family, with a committed vmlinux.h) compiled
// by bpf2go, and Go loaders that expose typed events on channels — OOM
// kills, memcg reclaim stalls, process exits, cgroup mkdir/rmdir — and
// report their own run time.
//
// Tracers: OpenOOMTracer (OOMKill, oom/mark_victim), OpenReclaimTracer
// (ReclaimStall, vmscan/mm_vmscan_memcg_reclaim_begin/_end),
// OpenExitTracer (ProcessExit, sched/sched_process_exit) and
// OpenCgroupTracer (CgroupEvent, cgroup/cgroup_mkdir and _rmdir); the four
// tracer types are instances of one generic Tracer[E]. Each attaches in
// the best mode that works — tp_btf, then raw_tp, then a tracefs
// tracepoint — or in the one Options.Mode forces, and fails with
// an error wrapping ErrUnavailable that names what each mode lacked. What
// an event knows depends on the mode (the tracepoint mode of the OOM
// tracer has no task, hence no cgroups); every event says so in Known.
// Events carry CLOCK_MONOTONIC time (Ktime) and wall-clock time.
//
// The kernel's BTF, decoded for CO-RE and the tp_btf attach targets (several
// MiB of heap), is shared by the tracers opened one after the other and
// dropped KernelTypesIdle after the last open, or at once by
// ReleaseKernelTypes.
//
// Every tracer turns on the kernel's BPF run-time statistics while open
// (where allowed) and reports its programs' run count and time;
// NewCollector exports them to Prometheus
// (kernelet_bpf_program_run_count_total, kernelet_bpf_program_run_seconds_total).
//
// The generated objects (*_bpfel.o, *_bpfel.go; little-endian) are
// committed and reproduced byte for byte by `make generate`, which `make
// generate-check` verifies. c/vmlinux.h is regenerated only on purpose
// (c/vmlinux.sh, `make generate VMLINUX=1`).
//
// Kernel needs: ring buffers (Linux 5.8+), BTF at /sys/kernel/btf/vmlinux
// for tp_btf and raw_tp (CO-RE), tracefs for the tracepoint mode; the exit
// tracer uses an atomic compare-and-swap (5.12+). Tested on 6.18 (hybrid
// cgroups) and Debian's 6.1 (cgroup v2, in the test VM). Off little-endian
// Linux every Open* returns ErrUnavailable. This package
// must never import the agent (pod) side.
package bpf
