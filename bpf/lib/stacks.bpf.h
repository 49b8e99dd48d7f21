/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Stacks, stored once each in a hash map keyed by a hash of their frames.
 * Walking them is bpf/unwind/'s job (walk.bpf.h): this file only stores what
 * a walk left in stack_scratch.
 */
#ifndef LIB_STACKS_BPF_H
#define LIB_STACKS_BPF_H

#include "lib/stats.bpf.h"
#include "lib/kernel.bpf.h"
#include "lib/notify.bpf.h"

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

/*
 * FNV-1a over the frames in two lanes, the even frames and the odd, folded
 * with each other and the depth; 0 is reserved for "none".  Each lane is a
 * chain of xor and multiply: two chains of half the length run side by side
 * where one chain waited for a multiply a frame.
 */
static __always_inline __u64 stack_hash(const struct aperture_stack *st)
{
	__u64 even = 0xcbf29ce484222325ULL ^ st->depth, odd = 0x84222325cbf29ce4ULL, h;

	for (__u32 i = 0; i < APERTURE_MAX_DEPTH; i += 2) {
		if (i >= st->depth)
			break;
		even = (even ^ st->ips[i]) * 0x100000001b3ULL;
		if (i + 1 >= st->depth || i + 1 >= APERTURE_MAX_DEPTH)
			break;
		odd = (odd ^ st->ips[i + 1]) * 0x100000001b3ULL;
	}
	h = even ^ odd * 0x9e3779b97f4a7c15ULL;
	return h == 0 || h == APERTURE_STACK_LOST ? 1 : h;
}

/*
 * A new stack with a Python frame whose code object the walk saw first: its
 * frames to the loader, which names that code object while the process still
 * has it.  A new stack of known code objects (another instruction, another
 * native leaf) is named at the snapshot from the loader's cache: telling it
 * woke the loader ~15 times a second at 99 Hz in steady state for nothing.
 */
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
	/* A fixed-size copy: straight-line code, where a loop was walked by the verifier 127 times per path. */
	__builtin_memcpy(event->ips, st->ips, sizeof(event->ips));
	bpf_ringbuf_submit(event, 0);
}

/*
 * Stores the walked stack (in this CPU's stack_scratch, at least one frame)
 * in the stacks map unless it is there already, and returns its id, or
 * APERTURE_STACK_LOST when it could not be stored (counted).  A 64-bit hash
 * makes two distinct stacks sharing an id vanishingly unlikely
 * (p ~ n^2 / 2^65: 3e-10 for 100k stacks).  A global function: the verifier
 * checks its loop once, not once per caller (user and kernel stack) and per
 * path into it (inlined, it was 11k of the 12.7k instructions the on-CPU
 * program's own body cost the verifier).  It looks the scratch up itself, so
 * that the stack stored is a map value, as 6.1 wants of a map update's value.
 */
APERTURE_SUBPROG __u64 stack_save(void)
{
	__u32 zero = 0;
	struct aperture_stack *st = bpf_map_lookup_elem(&stack_scratch, &zero);
	__u64 id;
	/*
	 * int, not long: before 6.4 ("bpf: return long from bpf_map_ops funcs") the
	 * inlined map op returned int, so -EEXIST arrived as 0xffffffef with the upper
	 * half zero and never equalled a long -EEXIST (seen on 6.1).
	 */
	int err;

	if (!st)
		return APERTURE_STACK_LOST;
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
	if (!err && st->py_new)
		stack_tell_python(st);
	return id;
}

#endif /* LIB_STACKS_BPF_H */
