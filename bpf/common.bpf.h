/* SPDX-License-Identifier: GPL-2.0 */
/* Maps and helpers shared by every aperture BPF program. */
#ifndef COMMON_BPF_H
#define COMMON_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "aperture.h"

#ifndef PROFILER_ID
#error "define PROFILER_ID (enum profiler_id) before including common.bpf.h"
#endif

#ifndef E2BIG
#define E2BIG 7
#endif
#ifndef ENOMEM
#define ENOMEM 12
#endif
#ifndef EEXIST
#define EEXIST 17
#endif

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct aperture_control);
} control SEC(".maps");

/*
 * Target processes: tgid -> bitmask of the profilers (1 << enum profiler_id)
 * that want it, so that one shared set serves profilers with different
 * targets; 0xff means every profiler.  Consulted when control.filter_pids is set.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u8);
} target_pids SEC(".maps");

/*
 * Resized by the loader before load.  Preallocated: without it, inserts from
 * sched_switch (IRQs off) failed with -ENOMEM whenever the allocator's per-CPU
 * cache ran dry, which lost ~10% of the stacks in short runs.  The price is
 * max_entries * ~1 KiB of kernel memory up front (16 MiB for 16384).
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct aperture_stack);
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

/* bpf_get_stack() needs ~1 KiB of room: far beyond the 512-byte BPF stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct aperture_stack);
} stack_scratch SEC(".maps");

/*
 * tgids already announced to user space.  LRU: an evicted tgid is announced
 * again, which only costs user space a cheap "already tracked" check.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, __u8);
} seen_tgids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 1024);
} events SEC(".maps");

static __always_inline void stat_inc(__u32 idx)
{
	__u64 *slot = bpf_map_lookup_elem(&stats, &idx);

	if (slot)
		*slot += 1;	/* per-CPU slot: no atomic needed */
}

static __always_inline struct aperture_control *control_get(void)
{
	__u32 zero = 0;
	struct aperture_control *ctl = bpf_map_lookup_elem(&control, &zero);

	if (!ctl || !(ctl->enabled & (1u << PROFILER_ID)) ||
	    ctl->layout_version != APERTURE_LAYOUT_VERSION)
		return NULL;
	return ctl;
}

/*
 * Tells user space about a process the first time it shows up, so that its
 * memory maps are read while it lives: a process that exits before the next
 * snapshot is still symbolized.
 */
static __always_inline void process_seen(__u32 tgid)
{
	struct aperture_event *event;
	__u8 one = 1;

	if (bpf_map_lookup_elem(&seen_tgids, &tgid))
		return;
	bpf_map_update_elem(&seen_tgids, &tgid, &one, BPF_ANY);
	event = bpf_ringbuf_reserve(&events, sizeof(*event), 0);
	if (!event) {
		stat_inc(STAT_EVENTS_LOST);
		return;
	}
	event->type = EVENT_NEW_PROCESS;
	event->tgid = tgid;
	bpf_ringbuf_submit(event, 0);
}

/* PID set and cgroup filters; both are about the current task. */
static __always_inline bool task_wanted(const struct aperture_control *ctl, __u32 tgid)
{
	if (ctl->filter_pids) {
		__u8 *profilers = bpf_map_lookup_elem(&target_pids, &tgid);

		if (!profilers || !(*profilers & (1u << PROFILER_ID)))
			return false;
	}
	if (ctl->cgroup_id && bpf_get_current_cgroup_id() != ctl->cgroup_id)
		return false;
	return true;
}

/* FNV-1a over the frames, folded with the depth; 0 is reserved for "none". */
static __always_inline __u64 stack_hash(const struct aperture_stack *st)
{
	__u64 h = 0xcbf29ce484222325ULL ^ st->depth;

	for (__u32 i = 0; i < APERTURE_MAX_DEPTH; i++) {
		if (i >= st->depth)
			break;
		h ^= st->ips[i];
		h *= 0x100000001b3ULL;
	}
	return h == 0 || h == APERTURE_STACK_LOST ? 1 : h;
}

/*
 * Walks the current stack (user or kernel) into per-CPU scratch, stores it in
 * the stacks map unless it is there already, and returns its id: 0 when there
 * is no stack to walk or the walk failed, APERTURE_STACK_LOST when it could
 * not be stored; both are counted.  A 64-bit hash makes two distinct stacks
 * sharing an id vanishingly unlikely (p ~ n^2 / 2^65: 3e-10 for 100k stacks).
 */
static __always_inline __u64 stack_store(void *ctx, bool user)
{
	__u32 zero = 0;
	struct aperture_stack *st = bpf_map_lookup_elem(&stack_scratch, &zero);
	long len;
	__u64 id;
	long err;

	if (!st)
		return 0;
	len = bpf_get_stack(ctx, st->ips, sizeof(st->ips), user ? BPF_F_USER_STACK : 0);
	if (len < 0) {
		stat_inc(user ? STAT_USTACK_FAULT : STAT_KSTACK_FAULT);
		return 0;
	}
	if (len == 0)	/* e.g. no kernel stack for a sample taken in user mode */
		return 0;
	st->depth = len / sizeof(__u64);
	st->pad = 0;
	id = stack_hash(st);
	/* Known stacks are the common case: a lock-free lookup, no bucket lock. */
	if (bpf_map_lookup_elem(&stacks, &id))
		return id;
	err = bpf_map_update_elem(&stacks, &id, st, BPF_NOEXIST);
	if (err && err != -EEXIST) {
		stat_inc(err == -E2BIG ? STAT_STACKS_FULL :
			 err == -ENOMEM ? STAT_STACKS_NOMEM : STAT_OTHER);
		return APERTURE_STACK_LOST;
	}
	return id;
}

/* Fills the stack ids of @key according to control.stack_mode. */
static __always_inline void stacks_fill(void *ctx, const struct aperture_control *ctl,
					struct sample_key *key)
{
	struct task_struct *task = bpf_get_current_task_btf();

	key->user_stack_id = 0;
	key->kernel_stack_id = 0;
	/* Kernel threads have no user stack: not a loss, nothing to walk. */
	if (ctl->stack_mode != STACK_MODE_KERNEL && task->mm)
		key->user_stack_id = stack_store(ctx, true);
	if (ctl->stack_mode != STACK_MODE_USER)
		key->kernel_stack_id = stack_store(ctx, false);
}


/*
 * Double-buffered aggregation (define COUNTS_VALUE to the value struct before
 * including this header).  The programs write into whichever counts map
 * the one-slot ARRAY_OF_MAPS `active_counts` holds.  To snapshot, user space
 * swaps the other (empty) map into the slot: the kernel answers that update
 * only after synchronize_rcu() (maybe_wait_bpf_programs() in
 * kernel/bpf/syscall.c), so when the syscall returns no program can still be
 * writing into the old map.  User space then drains the old map at leisure
 * with no writer racing it: no sample that arrives during a snapshot is lost or
 * counted twice.
 */
#ifdef COUNTS_VALUE
struct counts_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);	/* resized by the loader */
	__type(key, struct sample_key);
	__type(value, COUNTS_VALUE);
} counts_0 SEC(".maps"), counts_1 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, struct counts_map);
} active_counts SEC(".maps") = { .values = { &counts_0 } };

/*
 * Cumulative counts, never drained: filled only while control.keep_totals is
 * set (a pinned daemon), so that `cat` on a pinned iterator and bpftool see
 * the aggregate since start however often the loader drains the live map.
 */
struct counts_map totals SEC(".maps");

static __always_inline void *live_counts(void)
{
	__u32 zero = 0;
	void *counts = bpf_map_lookup_elem(&active_counts, &zero);

	if (!counts)
		stat_inc(STAT_NO_COUNTS_MAP);
	return counts;
}

/*
 * Returns the value slot for @key in @counts, inserting a zeroed one when it
 * is new; NULL (counted) when the map is full.
 */
static __always_inline void *counts_slot(void *counts, const struct sample_key *key,
					 const void *zero_value)
{
	void *slot;
	long err;

	if (!counts)
		return NULL;
	slot = bpf_map_lookup_elem(counts, key);
	if (slot)
		return slot;
	err = bpf_map_update_elem(counts, key, zero_value, BPF_NOEXIST);
	if (err && err != -EEXIST) {
		stat_inc(err == -E2BIG || err == -ENOMEM ? STAT_COUNTS_FULL : STAT_OTHER);
		return NULL;
	}
	slot = bpf_map_lookup_elem(counts, key);
	if (!slot)
		stat_inc(STAT_OTHER);
	return slot;
}
#endif /* COUNTS_VALUE */

#endif /* COMMON_BPF_H */
