// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * cgroup mkdir/rmdir: cgroup/cgroup_mkdir and cgroup/cgroup_rmdir fire in
 * every hierarchy (v1 and unified) with the cgroup and its path relative to
 * the hierarchy's root.
 *
 * Programs by attach mode: kl_cg_{mkdir,rmdir}_btf (tp_btf),
 * kl_cg_{mkdir,rmdir}_raw (raw_tp), kl_cg_{mkdir,rmdir}_tp (tracepoint:
 * root, level, id and path from the record, at the offsets the loader found
 * in the format; no CO-RE).
 */
#include "common.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define KL_PATH_LEN 256

enum cgroup_op {
	CGROUP_OP_MKDIR = 1,
	CGROUP_OP_RMDIR = 2,
};

struct cgroup_event {
	__u64 ktime_ns;
	__u64 id; /* kernfs id: the inode of the cgroup's directory */
	__u32 hierarchy_id; /* 0: the unified (v2) hierarchy */
	__s32 level; /* 0: the root */
	__u32 op; /* enum cgroup_op */
	__u32 pid; /* current: who made or removed it */
	char comm[KL_COMM_LEN];
	char path[KL_PATH_LEN];
};

/* The layout of the cgroup record (tracepoint mode). */
struct cgroup_tp_layout {
	struct kl_tp_field root;
	struct kl_tp_field level;
	struct kl_tp_field id;
	struct kl_tp_field path; /* __data_loc char[] */
};

const volatile struct cgroup_tp_layout cgroup_tp = {};

/*
 * With hierarchy_filter set, only the cgroups of hierarchies hierarchy_a
 * and hierarchy_b are reported (0: the unified one): a v1 host makes each
 * cgroup in a dozen hierarchies, and the host's other cgroups too.
 */
const volatile __u32 hierarchy_filter = 0;
const volatile __u32 hierarchy_a = 0;
const volatile __u32 hierarchy_b = 0;

static __always_inline int cg_wanted(__u32 hierarchy_id)
{
	return !hierarchy_filter || hierarchy_id == hierarchy_a || hierarchy_id == hierarchy_b;
}

const struct cgroup_event *unused_cgroup_event __attribute__((unused));
const enum cgroup_op *unused_cgroup_op __attribute__((unused));

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} cg_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} cg_drops SEC(".maps");

static __always_inline struct cgroup_event *cg_reserve(__u32 op)
{
	struct cgroup_event *e = bpf_ringbuf_reserve(&cg_events, sizeof(*e), 0);

	if (!e) {
		KL_COUNT_DROP(cg_drops);
		return NULL;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->ktime_ns = bpf_ktime_get_ns();
	e->op = op;
	e->pid = (__u32)bpf_get_current_pid_tgid();
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	return e;
}

static __always_inline int on_cgroup(__u32 op, struct cgroup *cgrp, const char *path)
{
	__u32 hierarchy_id = BPF_CORE_READ(cgrp, root, hierarchy_id);
	struct cgroup_event *e;

	if (!cg_wanted(hierarchy_id))
		return 0;
	e = cg_reserve(op);
	if (!e)
		return 0;
	e->id = BPF_CORE_READ(cgrp, kn, id);
	e->hierarchy_id = hierarchy_id;
	e->level = BPF_CORE_READ(cgrp, level);
	bpf_probe_read_kernel_str(e->path, sizeof(e->path), path);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

static __always_inline int on_cgroup_tp(__u32 op, void *ctx)
{
	__u32 hierarchy_id = kl_tp_uint(ctx, cgroup_tp.root.off, cgroup_tp.root.size);
	struct cgroup_event *e;

	if (!cg_wanted(hierarchy_id))
		return 0;
	e = cg_reserve(op);
	if (!e)
		return 0;
	e->id = kl_tp_uint(ctx, cgroup_tp.id.off, cgroup_tp.id.size);
	e->hierarchy_id = hierarchy_id;
	e->level = kl_tp_uint(ctx, cgroup_tp.level.off, cgroup_tp.level.size);
	if (cgroup_tp.path.size)
		bpf_probe_read_kernel_str(e->path, sizeof(e->path), kl_data_loc(ctx, cgroup_tp.path.off));
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("tp_btf/cgroup_mkdir")
int BPF_PROG(kl_cg_mkdir_btf, struct cgroup *cgrp, const char *path)
{
	return on_cgroup(CGROUP_OP_MKDIR, cgrp, path);
}

SEC("tp_btf/cgroup_rmdir")
int BPF_PROG(kl_cg_rmdir_btf, struct cgroup *cgrp, const char *path)
{
	return on_cgroup(CGROUP_OP_RMDIR, cgrp, path);
}

SEC("raw_tp/cgroup_mkdir")
int BPF_PROG(kl_cg_mkdir_raw, struct cgroup *cgrp, const char *path)
{
	return on_cgroup(CGROUP_OP_MKDIR, cgrp, path);
}

SEC("raw_tp/cgroup_rmdir")
int BPF_PROG(kl_cg_rmdir_raw, struct cgroup *cgrp, const char *path)
{
	return on_cgroup(CGROUP_OP_RMDIR, cgrp, path);
}

SEC("tracepoint/cgroup/cgroup_mkdir")
int kl_cg_mkdir_tp(void *ctx)
{
	return on_cgroup_tp(CGROUP_OP_MKDIR, ctx);
}

SEC("tracepoint/cgroup/cgroup_rmdir")
int kl_cg_rmdir_tp(void *ctx)
{
	return on_cgroup_tp(CGROUP_OP_RMDIR, ctx);
}
