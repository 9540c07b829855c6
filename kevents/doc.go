// Package kevents is the kernel-event wiring shared by `kernelet trace`
// and `kernelet run`: the host's cgroup hierarchies and the cgroup id →
// path cache (fed by the eBPF cgroup mkdir/rmdir tracer where it works,
// else answered by walking the hierarchy), the rule of which id space an
// event's cgroup ids belong to (memcg or unified), the OOM kill stream
// opened eBPF first with the named fallbacks otherwise, the reclaim stall
// tracer (OpenReclaim), the run statistics of every tracer opened through
// an Env (Env.ProgramStats, a bpf.StatsSource), and one pump that turns a
// tracer's events into the caller's rows.
//
// It sits on the kernel side (bpf, cgroups, oom) and must never import the
// pod side: pods are named through an oom.Resolver handed to it.
package kevents
