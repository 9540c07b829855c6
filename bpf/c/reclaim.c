// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * memcg reclaim stalls: vmscan/mm_vmscan_memcg_reclaim_begin and _end
 * bracket a direct reclaim a task does because its memcg hit its limit
 * (try_to_free_mem_cgroup_pages). Begin remembers the time per thread, end
 * emits the stall with its duration and nr_reclaimed, attributed to
 * current (the task that stalled) and its cgroups.
 *
 * Programs by attach mode: kl_rcl_{begin,end}_btf (tp_btf),
 * kl_rcl_{begin,end}_raw (raw_tp), kl_rcl_{begin,end}_tp (tracepoint: order,
 * gfp_flags and nr_reclaimed come from the records, at the offsets the
 * loader found in their formats). All modes read current's cgroups with
 * CO-RE.
 */
#include "common.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct reclaim_event {
	__u64 ktime_ns; /* end of the stall */
	__u64 known; /* enum kl_field */
	__u64 duration_ns;
	__u64 nr_reclaimed; /* pages */
	__u64 cgroup_id;
	__u64 memcg_id;
	__u64 memcg_usage; /* bytes, at the end */
	__u64 memcg_limit; /* bytes, ~0: unlimited */
	__u32 pid;
	__u32 tgid;
	__s32 order;
	__u32 gfp_flags;
	char comm[KL_COMM_LEN];
};

/* Emit only stalls at least this long (0: all). */
const volatile __u64 min_duration_ns = 0;
/* The layout of the begin and end records (tracepoint mode). */
struct rcl_tp_layout {
	struct kl_tp_field order;
	struct kl_tp_field gfp_flags;
	struct kl_tp_field nr_reclaimed;
};

const volatile struct rcl_tp_layout rcl_tp = {};

const struct reclaim_event *unused_reclaim_event __attribute__((unused));

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} rcl_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} rcl_drops SEC(".maps");

struct rcl_begin {
	__u64 start_ns;
	__s32 order;
	__u32 gfp_flags;
	__u32 have_gfp;
	__u32 pad;
};

/* Thread id -> its reclaim in progress. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, struct rcl_begin);
} rcl_inflight SEC(".maps");

static __always_inline int on_begin(int order, __u32 gfp_flags, bool have_gfp)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct rcl_begin b = {
		.start_ns = bpf_ktime_get_ns(),
		.order = order,
		.gfp_flags = gfp_flags,
		.have_gfp = have_gfp,
	};

	bpf_map_update_elem(&rcl_inflight, &tid, &b, BPF_ANY);
	return 0;
}

static __always_inline int on_end(__u64 nr_reclaimed, bool have_nr)
{
	__u64 now = bpf_ktime_get_ns(), id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct kl_cgroups cg = {};
	struct reclaim_event *e;
	struct rcl_begin *b;
	__u64 start;
	__s32 order;
	__u32 gfp, have_gfp;

	b = bpf_map_lookup_elem(&rcl_inflight, &tid);
	if (!b)
		return 0; /* attached in the middle of this reclaim */
	start = b->start_ns;
	order = b->order;
	gfp = b->gfp_flags;
	have_gfp = b->have_gfp;
	bpf_map_delete_elem(&rcl_inflight, &tid);
	if (now - start < min_duration_ns)
		return 0;

	e = bpf_ringbuf_reserve(&rcl_events, sizeof(*e), 0);
	if (!e) {
		KL_COUNT_DROP(rcl_drops);
		return 0;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->ktime_ns = now;
	e->duration_ns = now - start;
	e->nr_reclaimed = nr_reclaimed;
	e->pid = tid;
	e->tgid = id >> 32;
	e->order = order;
	e->gfp_flags = gfp;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	e->known = KL_F_PID | KL_F_TGID | KL_F_COMM;
	if (have_nr)
		e->known |= KL_F_NR_RECLAIMED;
	if (have_gfp)
		e->known |= KL_F_GFP;

	kl_read_cgroups((struct task_struct *)bpf_get_current_task(), &cg, true);
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
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("tp_btf/mm_vmscan_memcg_reclaim_begin")
int BPF_PROG(kl_rcl_begin_btf, int order, gfp_t gfp_flags)
{
	return on_begin(order, gfp_flags, true);
}

SEC("tp_btf/mm_vmscan_memcg_reclaim_end")
int BPF_PROG(kl_rcl_end_btf, unsigned long nr_reclaimed)
{
	return on_end(nr_reclaimed, true);
}

SEC("raw_tp/mm_vmscan_memcg_reclaim_begin")
int BPF_PROG(kl_rcl_begin_raw, int order, gfp_t gfp_flags)
{
	return on_begin(order, gfp_flags, true);
}

SEC("raw_tp/mm_vmscan_memcg_reclaim_end")
int BPF_PROG(kl_rcl_end_raw, unsigned long nr_reclaimed)
{
	return on_end(nr_reclaimed, true);
}

SEC("tracepoint/vmscan/mm_vmscan_memcg_reclaim_begin")
int kl_rcl_begin_tp(void *ctx)
{
	if (!rcl_tp.order.size || !rcl_tp.gfp_flags.size)
		return on_begin(0, 0, false);
	return on_begin((__s32)kl_tp_uint(ctx, rcl_tp.order.off, rcl_tp.order.size),
			kl_tp_uint(ctx, rcl_tp.gfp_flags.off, rcl_tp.gfp_flags.size), true);
}

SEC("tracepoint/vmscan/mm_vmscan_memcg_reclaim_end")
int kl_rcl_end_tp(void *ctx)
{
	if (!rcl_tp.nr_reclaimed.size)
		return on_end(0, false);
	return on_end(kl_tp_uint(ctx, rcl_tp.nr_reclaimed.off, rcl_tp.nr_reclaimed.size), true);
}
