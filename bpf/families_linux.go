//go:build 386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64

package bpf

import "context"

// The four program families: what each one loads and how its tracer is
// opened. What is particular to a family (tracepoint layouts, constants)
// is in its own file.

// OpenOOMTracer loads and attaches the OOM kill programs (oom/mark_victim)
// in the best attach mode that works here, or the one opts.Mode forces,
// and starts delivering OOMKill events. The tracer closes when ctx ends or
// Close is called. When no mode works the error wraps ErrUnavailable and
// names what each mode lacked.
func OpenOOMTracer(ctx context.Context, opts Options) (*OOMTracer, error) {
	return openTracer(ctx, &family{name: "oom/mark_victim", spec: loadOom, events: "oom_events", drops: "oom_drops",
		plan: planOOM}, opts, decodeOOMKill)
}

// OpenReclaimTracer loads and attaches the memcg reclaim programs
// (vmscan/mm_vmscan_memcg_reclaim_begin and _end) and starts delivering
// ReclaimStall events; see OpenOOMTracer for modes, errors and lifetime.
func OpenReclaimTracer(ctx context.Context, opts Options) (*ReclaimTracer, error) {
	return openTracer(ctx, &family{name: "vmscan/mm_vmscan_memcg_reclaim", spec: loadReclaim, events: "rcl_events", drops: "rcl_drops",
		progs: []progSpec{
			{base: "kl_rcl_begin", label: "reclaim_begin", tracepoint: "vmscan/mm_vmscan_memcg_reclaim_begin"},
			{base: "kl_rcl_end", label: "reclaim_end", tracepoint: "vmscan/mm_vmscan_memcg_reclaim_end"},
		}, setup: reclaimSetup}, opts, decodeReclaimStall)
}

// OpenExitTracer loads and attaches the process exit program
// (sched/sched_process_exit) and starts delivering ProcessExit events: one
// per process by default, one per thread with opts.AllThreads. See
// OpenOOMTracer for modes, errors and lifetime.
func OpenExitTracer(ctx context.Context, opts Options) (*ExitTracer, error) {
	exit := progSpec{base: "kl_exit", label: "process_exit", tracepoint: "sched/sched_process_exit"}
	return openTracer(ctx, &family{name: "sched/sched_process_exit", spec: loadExit, events: "exit_events", drops: "exit_drops",
		progs: []progSpec{exit}, setup: exitSetup}, opts, decodeProcessExit)
}

// OpenCgroupTracer loads and attaches the cgroup programs
// (cgroup/cgroup_mkdir and cgroup/cgroup_rmdir, every hierarchy) and starts
// delivering CgroupEvent events; see OpenOOMTracer for modes, errors and
// lifetime.
func OpenCgroupTracer(ctx context.Context, opts Options) (*CgroupTracer, error) {
	mkdir := progSpec{base: "kl_cg_mkdir", label: "cgroup_mkdir", tracepoint: "cgroup/cgroup_mkdir"}
	rmdir := progSpec{base: "kl_cg_rmdir", label: "cgroup_rmdir", tracepoint: "cgroup/cgroup_rmdir"}
	return openTracer(ctx, &family{name: "cgroup/cgroup_mkdir,cgroup_rmdir", spec: loadCgroup, events: "cg_events",
		drops: "cg_drops", progs: []progSpec{mkdir, rmdir}, setup: cgroupSetup}, opts, decodeCgroupEvent)
}
