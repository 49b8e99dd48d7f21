/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The current task's stacks walked and stored: the one way a sample key gets
 * its stack ids.  A user stack is walked with the DWARF tables
 * (dwarf.bpf.h), else by frame pointers in BPF, else by the kernel's
 * bpf_get_stack(), which also walks kernel stacks; the result is stored by
 * bpf/lib/stacks.bpf.h.
 */
#ifndef UNWIND_WALK_BPF_H
#define UNWIND_WALK_BPF_H

#include "lib/stats.bpf.h"
#include "lib/stacks.bpf.h"
#include "unwind/dwarf.bpf.h"

/*
 * Walks the current stack (user or kernel) into per-CPU scratch, stores it in
 * the stacks map unless it is there already, and returns its id: 0 when there
 * is no stack to walk or the walk failed, APERTURE_STACK_LOST when it could
 * not be stored; both are counted (stack_save).
 */
static __always_inline __u64 stack_store(void *ctx, bool user)
{
	__u32 zero = 0;
	struct aperture_stack *st = bpf_map_lookup_elem(&stack_scratch, &zero);
	long len;
	int dwarf;

	if (!st)
		return 0;
	st->py_new = 0;
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
	return stack_save();
}

/*
 * Whether the current task's user stack is to be walked: asked for, and the
 * task has one (kernel threads have none: not a loss, nothing to walk).
 * Asked once per event: each load of a task's pointer field costs the
 * verifier a search of the kernel's BTF by name (whether the pointer is
 * trusted), once per path that reaches it.
 */
static __always_inline bool stacks_user(const struct aperture_control *ctl)
{
	return ctl->stack_mode != STACK_MODE_KERNEL && current_has_mm();
}

/*
 * Whether a perf event's sample interrupted user mode, from the registers the
 * event hands over: then there is no kernel stack, and the kernel's walk, which
 * would find that out, cost 230-270 ns a sample here (bench/unwind.sh U4,
 * v_walk_k against v_walk_k_um, two runs).  Other architectures walk, as
 * before (only x86_64 is built).
 */
static __always_inline bool perf_sample_in_user_mode(struct bpf_perf_event_data *ctx)
{
#if defined(__TARGET_ARCH_x86)
	/* A context access, so a fixed offset: pt_regs is the x86-64 ABI's layout. */
	return *(volatile __u64 *)((char *)ctx + __builtin_offsetof(struct pt_regs, cs)) & 3;
#else
	return false;
#endif
}

/*
 * Fills the stack ids of @key according to control.stack_mode; @user: the
 * caller found the user stack asked for and the task has one (stacks_user);
 * @in_kernel: the event may have a kernel stack (false only for a sample
 * known to have interrupted user mode, whose kernel walk finds nothing).
 */
static __always_inline void stacks_fill(void *ctx, const struct aperture_control *ctl,
					struct sample_key *key, bool user, bool in_kernel)
{
	key->user_stack_id = 0;
	key->kernel_stack_id = 0;
	if (user)
		key->user_stack_id = stack_store(ctx, true);
	if (in_kernel && ctl->stack_mode != STACK_MODE_USER)
		key->kernel_stack_id = stack_store(ctx, false);
}

#endif /* UNWIND_WALK_BPF_H */
