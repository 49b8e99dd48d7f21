/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the kernel decides on the BPF side, in one place.  A profiler's
 * object can be built twice from the same source: for kernels with bpf_loop
 * (5.17+; the bpf_loop probe) and, with APERTURE_COMPAT defined
 * (bpf/events/X_compat.bpf.c: on-CPU and off-CPU today), for older ones
 * down to 5.10.  user/core/profiler.c (profiler_needs) picks the object.  A dead branch is not enough: 5.10 refuses
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
 *   (bpf_get_stack), the DWARF and CPython walks off;
 * - sched_switch without its prev_state argument (5.18): the task's own
 *   state field, read as that kernel names it;
 * - per-thread state in a hash map keyed by thread id, freed at the
 *   thread's exit, instead of task storage (5.11).
 */
#ifndef LIB_KERNEL_BPF_H
#define LIB_KERNEL_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

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

/*
 * SCHED_SWITCH_PROG(name) { ... SCHED_SWITCH_PREV_STATE ... }: a
 * tp_btf/sched_switch program with preempt, prev and next, and the state
 * prev leaves the CPU in.  The argument since 5.18; before, the field, which
 * 5.14 renamed from state to __state ("sched: Change task_struct::state").
 */
struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

static __always_inline unsigned int task_state(struct task_struct *task)
{
	if (bpf_core_field_exists(task->__state))
		return task->__state;
	return ((struct task_struct___pre514 *)task)->state;
}

#ifdef APERTURE_COMPAT
#define SCHED_SWITCH_PROG(name)							\
	SEC("tp_btf/sched_switch")						\
	int BPF_PROG(name, bool preempt, struct task_struct *prev, struct task_struct *next)
#define SCHED_SWITCH_PREV_STATE task_state(prev)
#else
#define SCHED_SWITCH_PROG(name)							\
	SEC("tp_btf/sched_switch")						\
	int BPF_PROG(name, bool preempt, struct task_struct *prev, struct task_struct *next, \
		     unsigned int prev_state)
#define SCHED_SWITCH_PREV_STATE prev_state
#endif

/*
 * Per-thread state: THREAD_STATE_MAP(name, type) declares it,
 * THREAD_STATE_GET(name, task, type, create) finds (or makes) @task's,
 * NULL when there is none (or no room: the caller counts it), and
 * THREAD_STATE_FREE(name, task) is called at the thread's exit.  Task
 * storage goes with its task; the older build's hash map holds
 * THREAD_STATE_ENTRIES threads (preallocated, so a full map refuses new
 * threads rather than failing an allocation).
 */
#define THREAD_STATE_ENTRIES 16384
#ifdef APERTURE_COMPAT
#define THREAD_STATE_MAP(name, value_type)					\
	struct {								\
		__uint(type, BPF_MAP_TYPE_HASH);				\
		__uint(max_entries, THREAD_STATE_ENTRIES);			\
		__type(key, __u32);						\
		__type(value, value_type);					\
	} name SEC(".maps")
#define THREAD_STATE_GET(name, task, value_type, create) ({			\
	__u32 __tid = (task)->pid;						\
	value_type *__v = bpf_map_lookup_elem(&name, &__tid);			\
	if (!__v && (create)) {							\
		value_type __zero = {};						\
		if (bpf_map_update_elem(&name, &__tid, &__zero, BPF_NOEXIST) == 0) \
			__v = bpf_map_lookup_elem(&name, &__tid);		\
	}									\
	__v; })
#define THREAD_STATE_FREE(name, task) ({					\
	__u32 __tid = (task)->pid;						\
	bpf_map_delete_elem(&name, &__tid); })
#else
#define THREAD_STATE_MAP(name, value_type)					\
	struct {								\
		__uint(type, BPF_MAP_TYPE_TASK_STORAGE);			\
		__uint(map_flags, BPF_F_NO_PREALLOC);				\
		__type(key, int);						\
		__type(value, value_type);					\
	} name SEC(".maps")
#define THREAD_STATE_GET(name, task, value_type, create)			\
	((value_type *)bpf_task_storage_get(&name, task, NULL,			\
					    (create) ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0))
#define THREAD_STATE_FREE(name, task) ((void)0)
#endif

#endif /* LIB_KERNEL_BPF_H */
