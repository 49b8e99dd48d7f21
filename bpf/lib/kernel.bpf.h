/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the kernel decides on the BPF side, in one place.  Every profiler's
 * object is built twice from the same source: for kernels with bpf_loop
 * (5.17+; the bpf_loop probe) and, with APERTURE_COMPAT defined
 * (bpf/events/X_compat.bpf.c), for older ones down to 5.10.  user/core/profiler.c
 * picks the object by that probe.  A dead branch is not enough: 5.10 refuses
 * a program that merely holds a bpf_loop callback's address ("number of funcs
 * in func_info doesn't match number of subprogs", before verifying anything),
 * and it verifies every global function, reachable or not.
 *
 * What the older build does instead:
 * - APERTURE_SUBPROG: global functions take only scalars and the context
 *   before 5.12 (pointer arguments: "bpf: Support pointers in global func
 *   args"), so its functions are inlined instead;
 * - the current task by bpf_get_current_task() and CO-RE reads, not
 *   bpf_get_current_task_btf() (5.11);
 * - no bpf_loop walks: user stacks by the kernel's own walk
 *   (bpf_get_stack), the DWARF and CPython walks off.
 */
#ifndef LIB_KERNEL_BPF_H
#define LIB_KERNEL_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#ifdef APERTURE_COMPAT
#define APERTURE_SUBPROG static __always_inline
#define APERTURE_HAS_LOOP 0
#else
#define APERTURE_SUBPROG __noinline
#define APERTURE_HAS_LOOP 1
#endif

/*
 * Set by the loader where bpf_probe_read_kernel may be called (the
 * probe_read_kernel probe: not under lockdown=confidentiality).  Only the
 * older build reads the task through it.
 */
const volatile __u32 kernel_reads = 0;

/*
 * Whether the current task has a user address space (kernel threads have
 * none).  The older build, where it cannot read the task, answers yes: the
 * kernel's user-stack walk then finds none and says so.
 */
static __always_inline bool current_has_mm(void)
{
#ifdef APERTURE_COMPAT
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();

	return !kernel_reads || BPF_CORE_READ(task, mm);
#else
	return bpf_get_current_task_btf()->mm;
#endif
}

/*
 * Who the current process is (last_seen.bpf.h): its leader's start time,
 * its exec count and its tgid; false where the task cannot be read.
 */
static __always_inline bool current_identity(__u64 *start_time, __u64 *exec_id, __u32 *tgid)
{
#ifdef APERTURE_COMPAT
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();

	if (!kernel_reads)
		return false;
	*start_time = BPF_CORE_READ(task, group_leader, start_time);
	*exec_id = BPF_CORE_READ(task, self_exec_id);
	*tgid = BPF_CORE_READ(task, tgid);
#else
	struct task_struct *task = bpf_get_current_task_btf();

	*start_time = task->group_leader->start_time;
	*exec_id = task->self_exec_id;
	*tgid = task->tgid;
#endif
	return true;
}

#endif /* LIB_KERNEL_BPF_H */
