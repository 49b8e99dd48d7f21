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
 * costs nothing.  A priority-inheritance mutex waits in futex(FUTEX_LOCK_PI)
 * on the mutex itself (LOCK_F_USER_PI).  Other futex waits (condvars,
 * semaphores) are kept apart (LOCK_F_USER_WAIT).
 *
 * Hold times (--lock-hold, opt-in): at the end of a contended wait the lock
 * goes into the thread's held slots (task storage) with the wait's key; the
 * unlock (a uprobe on libc's pthread_mutex_unlock, fentry on the kernel's
 * mutex_unlock/up_read/up_write where trampolines load) adds the time since
 * to the same key.  Only locks seen contended are timed: an unlock of any
 * other costs one task-storage lookup.
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

struct locks_held_set {
	struct locks_held slot[LOCK_HOLD_SLOTS];
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct locks_held_set);
} lock_held SEC(".maps");

#define LOCK_F_USER_ANY (LOCK_F_USER_MUTEX | LOCK_F_USER_PI | LOCK_F_USER_WAIT)

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
	if (!delta->holds)
		return;
	__sync_fetch_and_add(&slot->holds, delta->holds);
	__sync_fetch_and_add(&slot->hold_ns, delta->hold_ns);
	if (delta->max_hold_ns > slot->max_hold_ns)
		slot->max_hold_ns = delta->max_hold_ns;
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

/* The key of the wait that @h's hold belongs to (the current task's). */
static __always_inline void held_key(const struct locks_held *h, struct sample_key *key)
{
	__u64 id = bpf_get_current_pid_tgid();

	key->tgid = id >> 32;
	key->pid = (__u32)id;
	key->user_stack_id = h->user_stack_id;
	key->kernel_stack_id = h->kernel_stack_id;
	key->object = h->lock;
	bpf_get_current_comm(key->comm, sizeof(key->comm));
}

/* Frees @h; a wait's raw event still waiting for its hold goes out without one. */
static __always_inline void held_release(const struct aperture_control *ctl, struct locks_held *h)
{
	struct sample_key key = {};

	if (h->raw_pending && ctl) {
		held_key(h, &key);
		raw_event_emit(ctl, EVENT_LOCK, &key, h->wait_begin_ns, h->wait_ns, 0);
	}
	h->lock = 0;
	h->raw_pending = 0;
}

/*
 * A lock's slot among the thread's held ones: direct-mapped by address (no
 * search loop for the verifier to walk); two held locks that share a slot
 * keep the newer.
 */
static __always_inline struct locks_held *held_slot(struct locks_held_set *held, __u64 lock)
{
	return &held->slot[((lock >> 3) ^ (lock >> 7)) & (LOCK_HOLD_SLOTS - 1)];
}

/*
 * The current task waits for @lock, or (@lock 0) for something that is no
 * lock (a condvar: glibc releases the mutex inside pthread_cond_wait, where
 * no uprobe sees it): it holds @lock (or anything) no more as far as we can tell.
 */
static __always_inline void held_drop(const struct aperture_control *ctl, __u64 lock)
{
	struct locks_held_set *held = bpf_task_storage_get(&lock_held, bpf_get_current_task_btf(), NULL, 0);
	struct locks_held *h;

	if (!held)
		return;
	if (lock) {
		h = held_slot(held, lock);
		if (h->lock == lock)
			held_release(ctl, h);
		return;
	}
	for (int i = 0; i < LOCK_HOLD_SLOTS; i++)
		if (held->slot[i].lock)
			held_release(ctl, &held->slot[i]);
}

/* The wait for @key's lock ended with the lock taken: time its hold from now. */
static __always_inline void hold_begin(const struct aperture_control *ctl, const struct sample_key *key,
				       __u64 wait_begin_ns, __u64 wait_ns, __u32 flags, bool raw)
{
	struct locks_held_set *held = bpf_task_storage_get(&lock_held, bpf_get_current_task_btf(), NULL,
							   BPF_LOCAL_STORAGE_GET_F_CREATE);
	struct locks_held *h;

	if (!held) {
		stat_inc(STAT_START_FULL);
		if (raw)
			raw_event_emit(ctl, EVENT_LOCK, key, wait_begin_ns, wait_ns, 0);
		return;
	}
	h = held_slot(held, key->object);
	if (h->lock)	/* another lock, or this one again: its raw event goes now */
		held_release(ctl, h);
	h->lock = key->object;
	h->user_stack_id = key->user_stack_id;
	h->kernel_stack_id = key->kernel_stack_id;
	h->wait_begin_ns = wait_begin_ns;
	h->wait_ns = wait_ns;
	h->flags = flags;
	h->raw_pending = raw;
	h->since_ns = bpf_ktime_get_ns();
}

/* The current task unlocks @lock: count its hold if it was taken after a contended wait. */
static __always_inline void hold_end(__u64 lock)
{
	struct locks_held_set *held = bpf_task_storage_get(&lock_held, bpf_get_current_task_btf(), NULL, 0);
	struct aperture_control *ctl;
	struct locks_value delta = { .holds = 1 };
	struct sample_key key = {};
	struct locks_held *h;

	if (!held || !lock)
		return;
	h = held_slot(held, lock);
	if (h->lock != lock)
		return;
	ctl = control_get();
	if (!ctl) {
		h->lock = 0;
		return;
	}
	delta.hold_ns = bpf_ktime_get_ns() - h->since_ns;
	delta.max_hold_ns = delta.hold_ns;
	delta.flags = h->flags;
	held_key(h, &key);
	record_event(ctl, &key, &delta);
	if (h->raw_pending)
		raw_event_emit(ctl, EVENT_LOCK, &key, h->wait_begin_ns, h->wait_ns, delta.hold_ns);
	h->lock = 0;
	h->raw_pending = 0;
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

/*
 * Ends the current task's wait on @lock and counts it; @acquired: it took the
 * lock, whose hold is then timed if --lock-hold asks for this side.
 */
static __always_inline void wait_end(void *ctx, __u64 lock, bool spin, bool interrupted, bool acquired)
{
	struct aperture_control *ctl = control_get();
	struct locks_config *cfg = config_get();
	struct locks_start *start = start_slot(bpf_get_current_task_btf(), spin, false);
	struct locks_value delta = { .contentions = 1, .interrupted = interrupted };
	struct sample_key key = {};
	__u64 begin_ns;
	bool raw, hold;

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
	if (delta.flags & LOCK_F_USER_ANY)
		key.kernel_stack_id = 0;
	record_event(ctl, &key, &delta);
	/* Locks only: a condvar or semaphore wait (LOCK_F_USER_WAIT) is no lock held by anyone. */
	raw = cfg->raw_min_ns && delta.wait_ns >= cfg->raw_min_ns && !(delta.flags & LOCK_F_USER_WAIT);
	/* Kernel holds: mutexes and rwsems, whose unlocks the fentry programs see. */
	hold = acquired && (delta.flags & LOCK_F_USER_ANY ? cfg->hold_user :
			    cfg->hold_kernel && !(delta.flags & (LOCK_F_SPIN | LOCK_F_RT | LOCK_F_PERCPU)));
	if (hold)
		hold_begin(ctl, &key, begin_ns, delta.wait_ns, delta.flags, raw);
	else if (raw)
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

	/* Holds are timed for sleeping locks only: a spinlock's hold is no sleep of anyone. */
	wait_end(ctx, (__u64)lock, spin, ret != 0, !spin && ret == 0);
	return 0;
}

/*
 * The futex syscall's own arguments, from the user registers.  FUTEX_WAIT and
 * FUTEX_WAIT_BITSET are waits, glibc's contended mutex waits with val 2;
 * FUTEX_LOCK_PI(2) is a PI mutex's contended lock, on the mutex itself;
 * FUTEX_WAIT_REQUEUE_PI is a condvar wait (its address is the condvar's).
 * (fentry on futex_wait would fire only for waits, but some kernels refuse
 * trampolines; the raw syscall tracepoints load everywhere, and the check of
 * the syscall number is the first thing each does.)
 */
#define FUTEX_WAIT		0
#define FUTEX_LOCK_PI		6
#define FUTEX_WAIT_BITSET	9
#define FUTEX_WAIT_REQUEUE_PI	11
#define FUTEX_LOCK_PI2		13
#define FUTEX_CMD_MASK		0x7f

/* LOCK_F_USER_* of a futex call, 0 when it is no wait. */
static __always_inline __u32 futex_wait_kind(unsigned long op, unsigned long val)
{
	switch (op & FUTEX_CMD_MASK) {
	case FUTEX_WAIT:
	case FUTEX_WAIT_BITSET:
		return val == 2 ? LOCK_F_USER_MUTEX : LOCK_F_USER_WAIT;
	case FUTEX_LOCK_PI:
	case FUTEX_LOCK_PI2:
		return LOCK_F_USER_PI;
	case FUTEX_WAIT_REQUEUE_PI:
		return LOCK_F_USER_WAIT;
	}
	return 0;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(futex_begin, struct pt_regs *regs, long id)
{
	struct locks_config *cfg;
	__u32 kind;
	__u64 lock;

	if (id != NR_FUTEX)
		return 0;
	kind = futex_wait_kind(PT_REGS_PARM2(regs), PT_REGS_PARM3(regs));
	if (!kind)
		return 0;
	lock = PT_REGS_PARM1(regs);
	cfg = config_get();
	/* Waiting for a lock: not holding it; waiting on a condvar: maybe no lock at all. */
	if (cfg && cfg->hold_user)
		held_drop(control_get(), kind == LOCK_F_USER_WAIT ? 0 : lock);
	wait_begin(lock, kind, false, true);
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
	if (!start || !start->begin_ns || !(start->flags & LOCK_F_USER_ANY))
		return 0;
	if (ret == -EAGAIN) {
		start->begin_ns = 0;
		return 0;
	}
	/* A woken mutex waiter takes the lock in user space right after (or waits again). */
	wait_end(ctx, start->lock, false, ret != 0, ret == 0 && !(start->flags & LOCK_F_USER_WAIT));
	return 0;
}

/* --lock-hold, user side: attached by the loader to each target's libc. */
SEC("uprobe")
int BPF_KPROBE(mutex_unlock_user, void *mutex)	/* BPF_KPROBE: libbpf 1.1 has no BPF_UPROBE */
{
	hold_end((__u64)mutex);
	return 0;
}

/* --lock-hold, kernel side: only where the kernel lets trampolines attach (FEAT_FENTRY). */
SEC("fentry/mutex_unlock")
int BPF_PROG(mutex_unlock_kernel, struct mutex *lock)
{
	hold_end((__u64)lock);
	return 0;
}

SEC("fentry/up_read")
int BPF_PROG(up_read_kernel, struct rw_semaphore *sem)
{
	hold_end((__u64)sem);
	return 0;
}

SEC("fentry/up_write")
int BPF_PROG(up_write_kernel, struct rw_semaphore *sem)
{
	hold_end((__u64)sem);
	return 0;
}

/*
 * A wait whose end never came (the thread exited while its begin was
 * recorded): counted, so that a missing end is never silent, and freed; a
 * held lock's pending raw event goes out without a hold time.
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(lock_task_exit, struct task_struct *task)
{
	struct locks_start *start = bpf_task_storage_get(&lock_task_start, task, NULL, 0);
	struct aperture_control *ctl = control_get();

	if (start && start->begin_ns) {
		stat_inc(STAT_WAIT_UNFINISHED);
		start->begin_ns = 0;
	}
	if (ctl && task == bpf_get_current_task_btf())
		held_drop(ctl, 0);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
