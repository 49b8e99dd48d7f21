// SPDX-License-Identifier: GPL-2.0
/*
 * Lock contention, kernel and user, aggregated per (thread, lock, stacks)
 * into { contentions, total wait, max wait, flags, interrupted }.
 *
 * Kernel locks: tp_btf lock:contention_begin/end, as perf's
 * lock_contention.bpf.c uses them.  The begin time goes in per-task storage
 * for sleeping locks and in a per-CPU slot for spinning ones: a spinner cannot
 * sleep or migrate until it has the lock, and a map update in a spinlock's
 * contention path could itself contend.  A nested begin (a spinlock taken in
 * an interrupt while a slot is busy) is counted as lost, not guessed at.
 * The key (and its stacks) is built at contention_end: the waiter is current
 * and still inside the lock call, and a wait below min_wait_ns costs no stack walk.
 *
 * User locks: glibc parks a contended pthread mutex in futex(FUTEX_WAIT,
 * val = 2) on the mutex's first word, so the futex syscall gives the mutex
 * address and the wait; an uncontended lock never enters the kernel and
 * costs nothing.  Other futex waits (condvars, semaphores) are kept
 * apart (LOCK_F_USER_WAIT).
 */
#include "vmlinux.h"
#include "locks.h"
#define PROFILER_ID PROFILER_LOCKS
#define PROFILER_CONFIG struct locks_config
#define COUNTS_VALUE struct locks_value
#define COUNTS_VALUE_ADD(slot, delta) locks_value_add(slot, delta)
static inline __attribute__((always_inline)) void locks_value_add(struct locks_value *slot,
							     const struct locks_value *delta);
#include "lib/profiler.bpf.h"
#include "lib/syscall.bpf.h"

#define EAGAIN 11

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct locks_start);
} lock_task_start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct locks_start);
} lock_cpu_start SEC(".maps");

static inline __attribute__((always_inline)) void locks_value_add(struct locks_value *slot,
							     const struct locks_value *delta)
{
	__sync_fetch_and_add(&slot->contentions, delta->contentions);
	__sync_fetch_and_add(&slot->wait_ns, delta->wait_ns);
	/*
	 * The rest without atomics (32-bit and "or" atomics need BPF v3): two
	 * CPUs raising the max at once keep one of them; flags of one lock do
	 * not change; interrupted waits are rare.
	 */
	if (delta->max_wait_ns > slot->max_wait_ns)
		slot->max_wait_ns = delta->max_wait_ns;
	slot->flags |= delta->flags;
	slot->interrupted += delta->interrupted;
}

/* Which of the waiter's own well-known locks @lock is. */
static __always_inline __u32 lock_class(struct task_struct *task, __u64 lock)
{
	struct mm_struct *mm = task->mm;
	struct sighand_struct *sighand = task->sighand;

	if (mm && lock == (__u64)&mm->mmap_lock)
		return LOCK_F_MMAP;
	if (sighand && lock == (__u64)&sighand->siglock)
		return LOCK_F_SIGLOCK;
	return 0;
}

static __always_inline struct locks_start *start_slot(struct task_struct *task, bool spin, bool create)
{
	__u32 zero = 0;

	if (spin)
		return bpf_map_lookup_elem(&lock_cpu_start, &zero);
	return bpf_task_storage_get(&lock_task_start, task, NULL, create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
}

/* Starts timing a wait on @lock by the current task, unless filtered out. */
static __always_inline void wait_begin(__u64 lock, __u32 flags, bool spin, bool user_side)
{
	struct aperture_control *ctl = control_get();
	struct locks_config *cfg = config_get();
	struct task_struct *task = bpf_get_current_task_btf();
	struct locks_start *start;

	if (!ctl || !cfg || !(user_side ? cfg->user : cfg->kernel))
		return;
	if (!task_wanted(ctl, bpf_get_current_pid_tgid() >> 32))
		return;
	start = start_slot(task, spin, true);
	if (!start || start->begin_ns) {
		stat_inc(STAT_START_FULL);	/* nested: not timed */
		return;
	}
	start->lock = lock;
	start->flags = flags | (user_side ? 0 : lock_class(task, lock));
	start->begin_ns = bpf_ktime_get_ns();
}

/* Ends the current task's wait on @lock and counts it. */
static __always_inline void wait_end(void *ctx, __u64 lock, bool spin, bool interrupted)
{
	struct aperture_control *ctl = control_get();
	struct locks_config *cfg = config_get();
	struct locks_start *start = start_slot(bpf_get_current_task_btf(), spin, false);
	struct locks_value delta = { .contentions = 1, .interrupted = interrupted };
	struct sample_key key = {};
	__u64 begin_ns;

	if (!start || !start->begin_ns || start->lock != lock)
		return;
	begin_ns = start->begin_ns;
	delta.wait_ns = bpf_ktime_get_ns() - begin_ns;
	delta.max_wait_ns = delta.wait_ns;
	delta.flags = start->flags;
	start->begin_ns = 0;
	if (!ctl || !cfg || delta.wait_ns < cfg->min_wait_ns)
		return;
	key_fill_current(ctx, ctl, &key, lock);
	/* A futex wait's kernel stack is the futex code itself: keep the user side only. */
	if (delta.flags & (LOCK_F_USER_MUTEX | LOCK_F_USER_WAIT))
		key.kernel_stack_id = 0;
	record_event(ctl, &key, &delta);
	/* Locks only: a condvar or semaphore wait (LOCK_F_USER_WAIT) is no lock held by anyone. */
	if (cfg->raw_min_ns && delta.wait_ns >= cfg->raw_min_ns && !(delta.flags & LOCK_F_USER_WAIT))
		raw_event_emit(ctl, EVENT_LOCK, &key, begin_ns, delta.wait_ns, 0);
}

SEC("tp_btf/contention_begin")
int BPF_PROG(lock_begin, void *lock, unsigned int flags)
{
	wait_begin((__u64)lock, flags & 0xff, flags & LOCK_F_SPIN, false);
	return 0;
}

/* ret: 0 when the lock was taken, else why not (-EINTR, -ETIMEDOUT, ...). */
SEC("tp_btf/contention_end")
int BPF_PROG(lock_end, void *lock, int ret)
{
	__u32 zero = 0;
	struct locks_start *cpu = bpf_map_lookup_elem(&lock_cpu_start, &zero);
	bool spin = cpu && cpu->begin_ns && cpu->lock == (__u64)lock;

	wait_end(ctx, (__u64)lock, spin, ret != 0);
	return 0;
}

/*
 * The futex syscall's own arguments, from the user registers.  FUTEX_WAIT and
 * FUTEX_WAIT_BITSET are waits; glibc's contended mutex waits with val 2.
 * (fentry on futex_wait would fire only for waits, but some kernels refuse
 * trampolines; the raw syscall tracepoints load everywhere, and the check of
 * the syscall number is the first thing each does.)
 */
#define FUTEX_WAIT		0
#define FUTEX_WAIT_BITSET	9
#define FUTEX_CMD_MASK		0x7f

SEC("tp_btf/sys_enter")
int BPF_PROG(futex_begin, struct pt_regs *regs, long id)
{
	unsigned long op;

	if (id != NR_FUTEX)
		return 0;
	op = PT_REGS_PARM2(regs) & FUTEX_CMD_MASK;
	if (op != FUTEX_WAIT && op != FUTEX_WAIT_BITSET)
		return 0;
	wait_begin(PT_REGS_PARM1(regs), PT_REGS_PARM3(regs) == 2 ? LOCK_F_USER_MUTEX : LOCK_F_USER_WAIT,
		   false, true);
	return 0;
}

/* -EAGAIN: the futex changed before the thread slept: no wait, not counted. */
SEC("tp_btf/sys_exit")
int BPF_PROG(futex_end, struct pt_regs *regs, long ret)
{
	struct locks_start *start;

	if (SYSCALL_NR(regs) != NR_FUTEX)
		return 0;
	start = start_slot(bpf_get_current_task_btf(), false, false);
	if (!start || !start->begin_ns || !(start->flags & (LOCK_F_USER_MUTEX | LOCK_F_USER_WAIT)))
		return 0;
	if (ret == -EAGAIN) {
		start->begin_ns = 0;
		return 0;
	}
	wait_end(ctx, start->lock, false, ret != 0);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
