/* SPDX-License-Identifier: GPL-2.0 */
/* Stacks, stored once each in a hash map keyed by a hash of their frames. */
#ifndef UNWIND_STACKS_BPF_H
#define UNWIND_STACKS_BPF_H

#include "lib/stats.bpf.h"
#include "unwind/dwarf.bpf.h"

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

/* bpf_get_stack() needs ~1 KiB of room: far beyond the 512-byte BPF stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct aperture_stack);
} stack_scratch SEC(".maps");

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

/* A new stack with Python frames: its frames to the loader, to name them while the process lives. */
static __always_inline void stack_tell_python(const struct aperture_stack *st)
{
	struct aperture_py_event *event;

	event = bpf_ringbuf_reserve(&events, sizeof(*event), 0);
	if (!event) {
		stat_inc(STAT_EVENTS_LOST);
		return;
	}
	event->hdr.type = EVENT_PY_STACK;
	event->hdr.tgid = bpf_get_current_pid_tgid() >> 32;
	event->depth = st->depth;
	event->pad = 0;
	for (__u32 i = 0; i < APERTURE_MAX_DEPTH; i++)
		event->ips[i] = st->ips[i];
	bpf_ringbuf_submit(event, 0);
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
	int dwarf;
	__u64 id;
	/*
	 * int, not long: before 6.4 ("bpf: return long from bpf_map_ops funcs") the
	 * inlined map op returned int, so -EEXIST arrived as 0xffffffef with the upper
	 * half zero and never equalled a long -EEXIST (seen on 6.1).
	 */
	int err;

	if (!st)
		return 0;
	st->pad = 0;
	dwarf = user ? unwind_dwarf_walk(st) : 0;
	if (dwarf <= 0 && !(user && unwind_fp_walk(st))) {
		len = bpf_get_stack(ctx, st->ips, sizeof(st->ips), user ? BPF_F_USER_STACK : 0);
		if (len < 0) {
			stat_inc(user ? STAT_USTACK_FAULT : STAT_KSTACK_FAULT);
			return 0;
		}
		st->depth = len / sizeof(__u64);
	}
	if (dwarf < 0)
		unwind_mark(st, APERTURE_IP_NO_TABLES);
	if (!st->depth)	/* e.g. no kernel stack for a sample taken in user mode */
		return 0;
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
	if (!err && st->pad)
		stack_tell_python(st);
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


#endif /* UNWIND_STACKS_BPF_H */
