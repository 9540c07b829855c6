/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Shared pieces of kernelet's CO-RE programs: kernel types, helpers, the
 * cgroup/memcg readers every family uses, and the constants user space
 * rewrites before loading.
 *
 * Reads of kernel memory go through BPF_CORE_READ (bpf_probe_read_kernel
 * with CO-RE relocations), so the same code works from tp_btf (typed
 * pointers), raw_tp (untyped u64 arguments) and classic tracepoints
 * (bpf_get_current_task).
 */
#ifndef KERNELET_COMMON_H
#define KERNELET_COMMON_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#define KL_COMM_LEN 16

/*
 * Which fields of an event the kernel side filled in: what is known
 * depends on the attach mode and on the kernel (mirrored by bpf.Fields in
 * Go; the Go tests check the values).
 */
enum kl_field {
	KL_F_TGID = 1 << 0,
	KL_F_COMM = 1 << 1,
	KL_F_UID = 1 << 2,
	KL_F_OOM_SCORE_ADJ = 1 << 3,
	KL_F_TOTAL_VM = 1 << 4,
	KL_F_RSS = 1 << 5,
	KL_F_PGTABLES = 1 << 6,
	KL_F_CGROUP_ID = 1 << 7,
	KL_F_MEMCG_V1_ID = 1 << 8,
	KL_F_MEMCG_USAGE = 1 << 9,
	KL_F_KILLER = 1 << 10,
	KL_F_EXIT_CODE = 1 << 11,
	KL_F_MAXRSS = 1 << 12,
	KL_F_PPID = 1 << 13,
	KL_F_START_TIME = 1 << 14,
	KL_F_PID = 1 << 15,
	KL_F_NR_RECLAIMED = 1 << 16,
	KL_F_GFP = 1 << 17,
};

/* A field of a tracepoint record: where it is and how long (0: absent). */
struct kl_tp_field {
	__u16 off;
	__u16 size;
};

/* Bumps the first counter of an array map (events the ring buffer dropped). */
#define KL_COUNT_DROP(map)                                      \
	do {                                                    \
		__u32 __zero = 0;                               \
		__u64 *__n = bpf_map_lookup_elem(&(map), &__zero); \
		if (__n)                                        \
			__sync_fetch_and_add(__n, 1);           \
	} while (0)

/* The page shift of the running kernel, set by the loader. */
const volatile __u32 page_shift = 12;

/*
 * The ids of a task's cgroups. cgroup_id is the kernfs id of the task's
 * cgroup in the unified (v2) hierarchy, which is the inode number of its
 * directory under the cgroup2 mount. The memcg is the memory controller's
 * css of the task, on v1 (memcg_v1 != 0) or on v2; memcg_id is the kernfs
 * id of its cgroup in that hierarchy.
 */
struct kl_cgroups {
	__u64 cgroup_id;
	__u64 memcg_id;
	__u64 memcg_usage; /* bytes */
	__u64 memcg_limit; /* bytes; ~0 when unlimited */
	__u8 have_cgroup;
	__u8 have_memcg;
	__u8 memcg_v1;
};

/* page_counter's "no limit" is PAGE_COUNTER_MAX: LONG_MAX / PAGE_SIZE. */
static __always_inline __u64 kl_pages_to_bytes_limit(__u64 pages)
{
	if (pages >= (0x7fffffffffffffffULL >> page_shift))
		return ~0ULL;
	return pages << page_shift;
}

static __always_inline void kl_read_cgroups(struct task_struct *task, struct kl_cgroups *out, bool with_memcg)
{
	struct css_set *cset = BPF_CORE_READ(task, cgroups);
	struct cgroup *dfl;

	if (!cset)
		return;
	dfl = BPF_CORE_READ(cset, dfl_cgrp);
	if (dfl) {
		out->cgroup_id = BPF_CORE_READ(dfl, kn, id);
		out->have_cgroup = 1;
	}
	if (!with_memcg || !bpf_core_enum_value_exists(enum cgroup_subsys_id, memory_cgrp_id))
		return;

	/* cset->subsys[memory_cgrp_id], with the index relocated too. */
	__u32 idx = bpf_core_enum_value(enum cgroup_subsys_id, memory_cgrp_id);
	struct cgroup_subsys_state *css = NULL;
	void *slot = (void *)cset + bpf_core_field_offset(struct css_set, subsys) + idx * sizeof(void *);
	if (idx >= 64 || bpf_probe_read_kernel(&css, sizeof(css), slot) || !css)
		return;

	struct cgroup *cg = BPF_CORE_READ(css, cgroup);
	if (!cg)
		return;
	out->memcg_id = BPF_CORE_READ(cg, kn, id);
	/* The default (v2) hierarchy has id 0. */
	out->memcg_v1 = BPF_CORE_READ(cg, root, hierarchy_id) != 0;
	out->have_memcg = 1;

	/* The css is embedded in struct mem_cgroup. */
	struct mem_cgroup *memcg = (void *)css - bpf_core_field_offset(struct mem_cgroup, css);
	__s64 usage = BPF_CORE_READ(memcg, memory.usage.counter);
	__u64 max = BPF_CORE_READ(memcg, memory.max);
	out->memcg_usage = usage > 0 ? (__u64)usage << page_shift : 0;
	out->memcg_limit = kl_pages_to_bytes_limit(max);
}

/* A tracepoint __data_loc field: offset in the low, length in the high 16 bits. */
static __always_inline void *kl_data_loc(void *rec, __u32 off)
{
	__u32 loc = 0;

	bpf_probe_read_kernel(&loc, sizeof(loc), rec + off);
	return rec + (loc & 0xffff);
}

/*
 * Reads an unsigned integer field of size 1, 2, 4 or 8 bytes of a
 * tracepoint record (offsets and sizes come from the tracepoint's format,
 * which the loader parses and writes into constants).
 */
static __always_inline __u64 kl_tp_uint(void *rec, __u32 off, __u32 size)
{
	__u64 v = 0;

	/* Little endian: reading size bytes into v gives the value. */
	switch (size) {
	case 1:
		bpf_probe_read_kernel(&v, 1, rec + off);
		break;
	case 2:
		bpf_probe_read_kernel(&v, 2, rec + off);
		break;
	case 4:
		bpf_probe_read_kernel(&v, 4, rec + off);
		break;
	case 8:
		bpf_probe_read_kernel(&v, 8, rec + off);
		break;
	}
	return v;
}

#endif /* KERNELET_COMMON_H */
