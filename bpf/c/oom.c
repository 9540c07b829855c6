// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * OOM kills: oom/mark_victim fires when the OOM killer (global or memcg)
 * has picked a victim and sent it SIGKILL. The context is the killing task
 * (current), not the victim.
 *
 * Since Linux 6.8 (and in stable backports, e.g. Debian's 6.1) the
 * tracepoint passes the victim task and its uid; before, only the victim's
 * pid. For those older kernels signal/signal_generate, which fires for
 * the SIGKILL just before mark_victim in the same thread, remembers the
 * target task per killing thread, and mark_victim takes it when the pid
 * matches.
 *
 * Programs by attach mode (the loader picks the ones that fit the kernel):
 *   tp_btf:     kl_oom_btf (task argument) | kl_oom_btf_pid + kl_oom_sig_btf
 *   raw_tp:     kl_oom_raw (task argument) | kl_oom_raw_pid + kl_oom_sig_raw
 *   tracepoint: kl_oom_tp, which has only what the record carries (no
 *               task, no cgroups).
 */
#include "common.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct oom_event {
	__u64 ktime_ns;
	__u64 known; /* enum kl_field */
	__u64 total_vm; /* bytes */
	__u64 anon_rss; /* bytes */
	__u64 file_rss; /* bytes */
	__u64 shmem_rss; /* bytes */
	__u64 pgtables; /* bytes */
	__u64 cgroup_id;
	__u64 memcg_id;
	__u64 memcg_usage; /* bytes */
	__u64 memcg_limit; /* bytes, ~0: unlimited */
	__u32 pid;
	__u32 tgid;
	__u32 uid;
	__s32 oom_score_adj;
	__u32 killer_pid;
	__u32 killer_tgid;
	char comm[KL_COMM_LEN];
	char killer_comm[KL_COMM_LEN];
};

/* The layout of the oom/mark_victim record, from its tracefs format. */
struct oom_tp_layout {
	struct kl_tp_field pid;
	struct kl_tp_field comm; /* char[16], or a __data_loc string */
	struct kl_tp_field total_vm; /* KiB */
	struct kl_tp_field anon_rss; /* KiB */
	struct kl_tp_field file_rss; /* KiB */
	struct kl_tp_field shmem_rss; /* KiB */
	struct kl_tp_field uid;
	struct kl_tp_field pgtables; /* KiB */
	struct kl_tp_field oom_score_adj;
	__u32 comm_data_loc;
};

const volatile struct oom_tp_layout oom_tp = {};

/* Force the event types into the BTF for bpf2go. */
const struct oom_event *unused_oom_event __attribute__((unused));
const enum kl_field *unused_kl_field __attribute__((unused));

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} oom_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} oom_drops SEC(".maps");

/* Killing thread id -> the task its last SIGKILL went to (kernels < 6.8). */
struct oom_target {
	__u64 task;
	__u32 pid;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct oom_target);
} oom_targets SEC(".maps");

/* Linux 6.2 made mm->rss_stat an array of percpu_counter ... */
struct mm_struct___kl_new {
	struct percpu_counter rss_stat[4];
} __attribute__((preserve_access_index));

/* ... before, it was a struct of atomic counters. */
struct mm_rss_stat___kl_old {
	atomic_long_t count[4];
} __attribute__((preserve_access_index));

struct mm_struct___kl_old {
	struct mm_rss_stat___kl_old rss_stat;
} __attribute__((preserve_access_index));

static __always_inline __u64 kl_pos(__s64 v)
{
	return v > 0 ? (__u64)v : 0;
}

static __always_inline void read_rss(struct oom_event *e, struct mm_struct *mm)
{
	struct mm_struct___kl_new *mn = (void *)mm;
	struct mm_struct___kl_old *mo = (void *)mm;
	__s64 file, anon, shmem;

	if (bpf_core_field_exists(mn->rss_stat)) {
		/* The global count, as the kernel's OOM report reads it. */
		file = BPF_CORE_READ(mn, rss_stat[MM_FILEPAGES].count);
		anon = BPF_CORE_READ(mn, rss_stat[MM_ANONPAGES].count);
		shmem = BPF_CORE_READ(mn, rss_stat[MM_SHMEMPAGES].count);
	} else if (bpf_core_field_exists(mo->rss_stat)) {
		file = BPF_CORE_READ(mo, rss_stat.count[MM_FILEPAGES].counter);
		anon = BPF_CORE_READ(mo, rss_stat.count[MM_ANONPAGES].counter);
		shmem = BPF_CORE_READ(mo, rss_stat.count[MM_SHMEMPAGES].counter);
	} else {
		return;
	}
	e->file_rss = kl_pos(file) << page_shift;
	e->anon_rss = kl_pos(anon) << page_shift;
	e->shmem_rss = kl_pos(shmem) << page_shift;
	e->known |= KL_F_RSS;
}

static __always_inline struct oom_event *oom_reserve(void)
{
	struct oom_event *e = bpf_ringbuf_reserve(&oom_events, sizeof(*e), 0);
	__u64 id;

	if (!e) {
		KL_COUNT_DROP(oom_drops);
		return NULL;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->ktime_ns = bpf_ktime_get_ns();
	id = bpf_get_current_pid_tgid();
	e->killer_pid = (__u32)id;
	e->killer_tgid = id >> 32;
	bpf_get_current_comm(e->killer_comm, sizeof(e->killer_comm));
	e->known = KL_F_PID | KL_F_KILLER;
	return e;
}

static __always_inline void fill_victim(struct oom_event *e, struct task_struct *task)
{
	struct kl_cgroups cg = {};
	struct mm_struct *mm;

	e->pid = BPF_CORE_READ(task, pid);
	e->tgid = BPF_CORE_READ(task, tgid);
	BPF_CORE_READ_STR_INTO(&e->comm, task, comm);
	e->uid = BPF_CORE_READ(task, real_cred, uid.val);
	e->oom_score_adj = BPF_CORE_READ(task, signal, oom_score_adj);
	e->known |= KL_F_TGID | KL_F_COMM | KL_F_UID | KL_F_OOM_SCORE_ADJ;

	mm = BPF_CORE_READ(task, mm);
	if (mm) {
		e->total_vm = BPF_CORE_READ(mm, total_vm) << page_shift;
		e->known |= KL_F_TOTAL_VM;
		if (bpf_core_field_exists(mm->pgtables_bytes)) {
			e->pgtables = kl_pos(BPF_CORE_READ(mm, pgtables_bytes.counter));
			e->known |= KL_F_PGTABLES;
		}
		read_rss(e, mm);
	}

	kl_read_cgroups(task, &cg, true);
	if (cg.have_cgroup) {
		e->cgroup_id = cg.cgroup_id;
		e->known |= KL_F_CGROUP_ID;
	}
	if (cg.have_memcg) {
		e->memcg_id = cg.memcg_id;
		e->memcg_usage = cg.memcg_usage;
		e->memcg_limit = cg.memcg_limit;
		e->known |= KL_F_MEMCG_USAGE;
		if (cg.memcg_v1)
			e->known |= KL_F_MEMCG_V1_ID;
	}
}

static __always_inline int on_victim_task(struct task_struct *task)
{
	struct oom_event *e = oom_reserve();

	if (!e)
		return 0;
	fill_victim(e, task);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

static __always_inline int on_victim_pid(__u32 pid)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct oom_target *t = bpf_map_lookup_elem(&oom_targets, &tid);
	struct oom_event *e = oom_reserve();

	if (!e)
		return 0;
	if (t && t->pid == pid && t->task)
		fill_victim(e, (struct task_struct *)t->task);
	else
		e->pid = pid;
	if (t)
		bpf_map_delete_elem(&oom_targets, &tid);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

static __always_inline int on_signal(int sig, struct task_struct *task)
{
	struct oom_target t = {};
	__u32 tid;

	if (sig != 9 /* SIGKILL */)
		return 0;
	tid = (__u32)bpf_get_current_pid_tgid();
	t.task = (__u64)task;
	t.pid = BPF_CORE_READ(task, pid);
	bpf_map_update_elem(&oom_targets, &tid, &t, BPF_ANY);
	return 0;
}

SEC("tp_btf/mark_victim")
int BPF_PROG(kl_oom_btf, struct task_struct *task)
{
	return on_victim_task(task);
}

SEC("tp_btf/mark_victim")
int BPF_PROG(kl_oom_btf_pid, int pid)
{
	return on_victim_pid(pid);
}

SEC("tp_btf/signal_generate")
int BPF_PROG(kl_oom_sig_btf, int sig, struct kernel_siginfo *info, struct task_struct *task)
{
	return on_signal(sig, task);
}

SEC("raw_tp/mark_victim")
int BPF_PROG(kl_oom_raw, struct task_struct *task)
{
	return on_victim_task(task);
}

SEC("raw_tp/mark_victim")
int BPF_PROG(kl_oom_raw_pid, int pid)
{
	return on_victim_pid(pid);
}

SEC("raw_tp/signal_generate")
int BPF_PROG(kl_oom_sig_raw, int sig, struct kernel_siginfo *info, struct task_struct *task)
{
	return on_signal(sig, task);
}

SEC("tracepoint/oom/mark_victim")
int kl_oom_tp(void *ctx)
{
	struct oom_event *e = oom_reserve();

	if (!e)
		return 0;
	if (oom_tp.pid.size)
		e->pid = kl_tp_uint(ctx, oom_tp.pid.off, oom_tp.pid.size);
	if (oom_tp.comm.size) {
		void *src = oom_tp.comm_data_loc ? kl_data_loc(ctx, oom_tp.comm.off) : ctx + oom_tp.comm.off;
		bpf_probe_read_kernel_str(e->comm, sizeof(e->comm), src);
		e->known |= KL_F_COMM;
	}
	if (oom_tp.total_vm.size) {
		e->total_vm = kl_tp_uint(ctx, oom_tp.total_vm.off, oom_tp.total_vm.size) << 10;
		e->known |= KL_F_TOTAL_VM;
	}
	if (oom_tp.anon_rss.size && oom_tp.file_rss.size && oom_tp.shmem_rss.size) {
		e->anon_rss = kl_tp_uint(ctx, oom_tp.anon_rss.off, oom_tp.anon_rss.size) << 10;
		e->file_rss = kl_tp_uint(ctx, oom_tp.file_rss.off, oom_tp.file_rss.size) << 10;
		e->shmem_rss = kl_tp_uint(ctx, oom_tp.shmem_rss.off, oom_tp.shmem_rss.size) << 10;
		e->known |= KL_F_RSS;
	}
	if (oom_tp.uid.size) {
		e->uid = kl_tp_uint(ctx, oom_tp.uid.off, oom_tp.uid.size);
		e->known |= KL_F_UID;
	}
	if (oom_tp.pgtables.size) {
		e->pgtables = kl_tp_uint(ctx, oom_tp.pgtables.off, oom_tp.pgtables.size) << 10;
		e->known |= KL_F_PGTABLES;
	}
	if (oom_tp.oom_score_adj.size == 2) {
		e->oom_score_adj = (__s16)kl_tp_uint(ctx, oom_tp.oom_score_adj.off, 2);
		e->known |= KL_F_OOM_SCORE_ADJ;
	}
	bpf_ringbuf_submit(e, 0);
	return 0;
}
