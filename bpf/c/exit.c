// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Process exits: sched/sched_process_exit fires in do_exit of every
 * exiting thread, with the exit code already in task->exit_code and the
 * task still in its cgroups.
 *
 * By default one event per process: at the exit of the thread that ends
 * the thread group (signal->live reached 0, which is also when the kernel
 * folds the mm's high-water RSS into signal->maxrss). The leader may exit
 * long before (pthread_exit), so "pid == tgid" would report processes that
 * still run. Two threads exiting at once can both see live == 0; a map of
 * thread group -> the leader's start time lets only the first report it.
 * With exit_all_threads set, every thread exit is an event.
 *
 * Programs by attach mode: kl_exit_btf (tp_btf), kl_exit_raw (raw_tp),
 * kl_exit_tp (tracepoint; the task is current). All read with CO-RE.
 */
#include "common.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct exit_event {
	__u64 ktime_ns;
	__u64 known; /* enum kl_field */
	__u64 start_ns; /* the thread group leader's start, CLOCK_MONOTONIC */
	__u64 maxrss; /* bytes */
	__u64 cgroup_id;
	__u64 memcg_id;
	__u32 pid; /* the exiting thread */
	__u32 tgid;
	__u32 ppid;
	__u32 exit_code; /* task->exit_code: status << 8 | core << 7 | signal */
	__u32 group_dead;
	__u32 pad;
	char comm[KL_COMM_LEN];
};

const volatile __u32 exit_all_threads = 0;

const struct exit_event *unused_exit_event __attribute__((unused));

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} exit_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} exit_drops SEC(".maps");

/* Thread group id -> start time of the leader of the group last reported. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} exit_reported SEC(".maps");

/* Whether this is the first report of this thread group's death. */
static __always_inline bool first_report(__u32 tgid, __u64 start)
{
	__u64 *seen = bpf_map_lookup_elem(&exit_reported, &tgid);
	__u64 old;

	if (!seen)
		return bpf_map_update_elem(&exit_reported, &tgid, &start, BPF_NOEXIST) == 0;
	old = *seen;
	if (old == start)
		return false;
	/* An earlier process with the same tgid: take the slot over, once. */
	return __sync_val_compare_and_swap(seen, old, start) == old;
}

static __always_inline int on_exit(struct task_struct *task)
{
	struct kl_cgroups cg = {};
	struct exit_event *e;
	__u32 pid, tgid;
	__u64 start;
	bool dead;

	dead = BPF_CORE_READ(task, signal, live.counter) == 0;
	if (!exit_all_threads && !dead)
		return 0;
	pid = BPF_CORE_READ(task, pid);
	tgid = BPF_CORE_READ(task, tgid);
	start = BPF_CORE_READ(task, group_leader, start_time);
	if (!exit_all_threads && !first_report(tgid, start))
		return 0;

	e = bpf_ringbuf_reserve(&exit_events, sizeof(*e), 0);
	if (!e) {
		KL_COUNT_DROP(exit_drops);
		return 0;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->ktime_ns = bpf_ktime_get_ns();
	e->pid = pid;
	e->tgid = tgid;
	e->start_ns = start;
	e->group_dead = dead;
	e->exit_code = BPF_CORE_READ(task, exit_code);
	e->ppid = BPF_CORE_READ(task, real_parent, tgid);
	BPF_CORE_READ_STR_INTO(&e->comm, task, comm);
	e->known = KL_F_PID | KL_F_TGID | KL_F_COMM | KL_F_EXIT_CODE | KL_F_PPID | KL_F_START_TIME;
	if (dead) {
		e->maxrss = (__u64)BPF_CORE_READ(task, signal, maxrss) << page_shift;
		e->known |= KL_F_MAXRSS;
	}

	kl_read_cgroups(task, &cg, true);
	if (cg.have_cgroup) {
		e->cgroup_id = cg.cgroup_id;
		e->known |= KL_F_CGROUP_ID;
	}
	if (cg.have_memcg && cg.memcg_v1) {
		e->memcg_id = cg.memcg_id;
		e->known |= KL_F_MEMCG_V1_ID;
	}
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(kl_exit_btf, struct task_struct *task)
{
	return on_exit(task);
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(kl_exit_raw, struct task_struct *task)
{
	return on_exit(task);
}

SEC("tracepoint/sched/sched_process_exit")
int kl_exit_tp(void *ctx)
{
	return on_exit((struct task_struct *)bpf_get_current_task());
}
