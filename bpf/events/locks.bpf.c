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
 * The stacks are walked at contention_begin, as perf's profiler walks them:
 * contention_end of a mutex or an rwsem writer runs with the lock taken, and
 * a walk there (5 us of ORC unwinding on a VM) would lengthen every critical
 * section the contention is about.  The wait is timed from after the walk.
 *
 * User locks: glibc parks a contended pthread mutex in futex(FUTEX_WAIT,
 * val = 2) on the mutex's first word, so the futex call gives the mutex
 * address; an uncontended lock never enters the kernel and costs nothing.  A
 * priority-inheritance mutex waits in futex(FUTEX_LOCK_PI) on the mutex
 * itself (LOCK_F_USER_PI).  Other futex waits (condvars, semaphores) are kept
 * apart (LOCK_F_USER_WAIT).  The wait is timed from the sleep, not the
 * syscall: at sched_switch a thread that goes to sleep inside futex() has the
 * call's number and arguments in its saved user registers, so one program per
 * context switch replaces two on every syscall of the machine (the futex
 * call's few microseconds before it sleeps and after it wakes are not counted;
 * a call that does not sleep, -EAGAIN, is no wait either way).
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
#include "events/profiler.bpf.h"
#include "lib/syscall.bpf.h"
#include "lib/sched.bpf.h"


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

/* A futex sleep in progress; its key is built at switch-out, where the sleeper is current. */
struct futex_sleep {
	__u64 begin_ns;		/* 0: none */
	__u32 flags;		/* LOCK_F_USER_* */
	__u32 switches;		/* the task's context switches (low 32 bits) when it went to sleep */
	struct sample_key key;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct futex_sleep);
} futex_sleep_start SEC(".maps");

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

/* The key of the wait that @h's hold belongs to: @who's ids and comm, @h's lock and stacks. */
static __always_inline void held_key(const struct locks_held *h, const struct sample_key *who,
				     struct sample_key *key)
{
	key->tgid = who->tgid;
	key->pid = who->pid;
	key->user_stack_id = h->user_stack_id;
	key->kernel_stack_id = h->kernel_stack_id;
	key->object = h->lock;
	__builtin_memcpy(key->comm, who->comm, sizeof(key->comm));
}

/* Frees @who's @h; a wait's raw event still waiting for its hold goes out without one. */
static __always_inline void held_release(const struct aperture_control *ctl, struct locks_held *h,
					 const struct sample_key *who)
{
	struct sample_key key = {};

	if (h->raw_pending && ctl) {
		held_key(h, who, &key);
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
	struct sample_key who = {};
	struct locks_held *h;

	if (!held)
		return;
	key_fill_who(&who, 0);
	if (lock) {
		h = held_slot(held, lock);
		if (h->lock == lock)
			held_release(ctl, h, &who);
		return;
	}
	for (int i = 0; i < LOCK_HOLD_SLOTS; i++)
		if (held->slot[i].lock)
			held_release(ctl, &held->slot[i], &who);
}

/*
 * @task's wait for @key's lock ended with the lock taken: time its hold from
 * now.  @task need not be current (a futex sleep ends at its switch-in).
 */
static __always_inline void hold_begin(const struct aperture_control *ctl, struct task_struct *task,
				       const struct sample_key *key, __u64 wait_begin_ns, __u64 wait_ns,
				       __u32 flags, bool raw)
{
	struct locks_held_set *held = bpf_task_storage_get(&lock_held, task, NULL,
							   BPF_LOCAL_STORAGE_GET_F_CREATE);
	struct locks_held *h;

	if (!held) {
		stat_inc(STAT_START_FULL);
		if (raw)
			raw_event_emit(ctl, EVENT_LOCK, key, wait_begin_ns, wait_ns, 0);
		return;
	}
	h = held_slot(held, key->object);
	if (h->lock && h->lock != key->object)	/* two held locks share the slot: the older goes untimed */
		stat_inc(STAT_HOLDS_LOST);
	if (h->lock)	/* another lock, or this one again: its raw event goes now */
		held_release(ctl, h, key);
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
	struct sample_key key = {}, who = {};
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
	key_fill_who(&who, 0);
	held_key(h, &who, &key);
	record_event(ctl, &key, &delta);
	if (h->raw_pending)
		raw_event_emit(ctl, EVENT_LOCK, &key, h->wait_begin_ns, h->wait_ns, delta.hold_ns);
	h->lock = 0;
	h->raw_pending = 0;
}

/*
 * The futex syscall's own arguments, from the user registers.  FUTEX_WAIT and
 * FUTEX_WAIT_BITSET are waits, glibc's contended mutex waits with val 2;
 * FUTEX_LOCK_PI(2) is a PI mutex's contended lock, on the mutex itself;
 * FUTEX_WAIT_REQUEUE_PI is a condvar wait (its address is the condvar's).
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

/*
 * The futex wait @task is in, from the registers its syscall saved: its
 * LOCK_F_USER_* kind and (in *@futex) its address; 0 when it is in none.
 */
static __always_inline __u32 futex_call_of(struct task_struct *task, __u64 *futex)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);

	if (!regs || SYSCALL_NR(regs) != NR_FUTEX)
		return 0;
	*futex = PT_REGS_PARM1(regs);
	return futex_wait_kind(PT_REGS_PARM2(regs), PT_REGS_PARM3(regs));
}

/* Starts timing a kernel lock wait on @lock by the current task, unless filtered out. */
static __always_inline void wait_begin(void *ctx, __u64 lock, __u32 flags, bool spin)
{
	struct sample_key where = {};
	struct aperture_control *ctl = control_get();
	struct locks_config *cfg = config_get();
	struct task_struct *task = bpf_get_current_task_btf();
	struct locks_start *start;
	__u64 futex;

	if (!ctl || !cfg || !cfg->kernel)
		return;
	if (!task_wanted(ctl, bpf_get_current_pid_tgid() >> 32))
		return;
	/*
	 * A PI futex sleeps on a kernel rt_mutex: that wait is the user lock's,
	 * counted once, as the user lock, when the thread sleeps.
	 */
	if (cfg->user && !spin && futex_call_of(task, &futex))
		return;
	start = start_slot(task, spin, true);
	if (!start) {
		stat_inc(STAT_START_FULL);
		return;
	}
	if (start->begin_ns) {
		/*
		 * The same lock again is the same wait going on: a mutex that
		 * spun (MUTEX|SPIN) and now sleeps (MUTEX) begins twice and
		 * ends once; its flags become the sleep's.  Another lock is a
		 * nested wait (a mutex's wait_lock contended in its slow path):
		 * its time is inside the outer wait's, not timed apart, and no
		 * begin record was lost.
		 */
		if (start->lock == lock)
			start->flags = flags | lock_class(task, lock);
		else
			stat_inc(STAT_LOCK_NESTED);
		return;
	}
	start->lock = lock;
	start->flags = flags | lock_class(task, lock);
	key_fill_stacks(ctx, ctl, &where, true);	/* who waits is filled at the end */
	start->user_stack_id = where.user_stack_id;
	start->kernel_stack_id = where.kernel_stack_id;
	start->begin_ns = bpf_ktime_get_ns();
}

/*
 * The kind's own part of a finished wait: hold timing (--lock-hold) when
 * @acquired, and the raw event.  @task is the waiter, @key its wait's key.
 */
static __always_inline void wait_finish(const struct aperture_control *ctl, const struct locks_config *cfg,
					struct task_struct *task, const struct sample_key *key,
					const struct locks_value *delta, __u64 begin_ns, bool acquired)
{
	bool raw, hold;

	/* Locks only: a condvar or semaphore wait (LOCK_F_USER_WAIT) is no lock held by anyone. */
	raw = cfg->raw_min_ns && delta->wait_ns >= cfg->raw_min_ns && !(delta->flags & LOCK_F_USER_WAIT);
	/* Kernel holds: mutexes and rwsems, whose unlocks the fentry programs see. */
	hold = acquired && (delta->flags & LOCK_F_USER_ANY ? cfg->hold_user :
			    cfg->hold_kernel && !(delta->flags & (LOCK_F_SPIN | LOCK_F_RT | LOCK_F_PERCPU)));
	if (hold)
		hold_begin(ctl, task, key, begin_ns, delta->wait_ns, delta->flags, raw);
	else if (raw)
		raw_event_emit(ctl, EVENT_LOCK, key, begin_ns, delta->wait_ns, 0);
}

/*
 * Ends the current task's wait on kernel lock @lock and counts it; @acquired:
 * it took the lock, whose hold is then timed if --lock-hold asks for it.
 */
static __always_inline void wait_end(__u64 lock, bool spin, bool interrupted, bool acquired)
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
	key_fill_who(&key, lock);
	key.user_stack_id = start->user_stack_id;
	key.kernel_stack_id = start->kernel_stack_id;
	record_event(ctl, &key, &delta);
	wait_finish(ctl, cfg, bpf_get_current_task_btf(), &key, &delta, begin_ns, acquired);
}

/*
 * Spinning waits use the per-CPU slot, except a mutex's optimistic spin
 * (MUTEX|SPIN): when the spin fails it sleeps on, and may wake on another
 * CPU, so its wait is the task's, as perf's lock profiler keeps it.
 */
SEC("tp_btf/contention_begin")
int BPF_PROG(lock_begin, void *lock, unsigned int flags)
{
	wait_begin(ctx, (__u64)lock, flags & 0xff, (flags & (LOCK_F_SPIN | LOCK_F_MUTEX)) == LOCK_F_SPIN);
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
	wait_end((__u64)lock, spin, ret != 0, !spin && ret == 0);
	return 0;
}

/*
 * The current task @prev goes to sleep inside a futex wait: the wait's key
 * (its user stack: a futex wait's kernel stack is the futex code itself) and
 * start.  A wait for a lock means not holding it; a condvar wait maybe no
 * lock at all (glibc releases the mutex where no uprobe sees it).
 */
static __always_inline void futex_sleep_begin(void *ctx, const struct aperture_control *ctl,
					      const struct locks_config *cfg, struct task_struct *prev)
{
	struct futex_sleep *sleep;
	__u64 futex = 0;
	__u32 kind = futex_call_of(prev, &futex);

	if (!kind || !task_wanted(ctl, prev->tgid))
		return;
	if (cfg->hold_user)
		held_drop(ctl, kind == LOCK_F_USER_WAIT ? 0 : futex);
	sleep = bpf_task_storage_get(&futex_sleep_start, prev, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!sleep) {
		stat_inc(STAT_START_FULL);
		return;
	}
	key_fill_who(&sleep->key, futex);
	sleep->key.kernel_stack_id = 0;
	sleep->key.user_stack_id = ctl->stack_mode != STACK_MODE_KERNEL ? stack_store(ctx, true) : 0;
	if (sleep->key.user_stack_id)
		process_seen(ctl, sleep->key.tgid);
	sleep->flags = kind;
	sleep->switches = task_switches(prev);
	sleep->begin_ns = bpf_ktime_get_ns();
}

/*
 * @next wakes from a futex sleep: count the wait.  Woken with a signal
 * pending, it returns without the lock (interrupted); otherwise a mutex
 * waiter takes the lock in user space right after (or sleeps again).
 */
static __always_inline void futex_sleep_end(const struct aperture_control *ctl, const struct locks_config *cfg,
					    struct task_struct *next)
{
	struct futex_sleep *sleep = bpf_task_storage_get(&futex_sleep_start, next, NULL, 0);
	struct locks_value delta = { .contentions = 1 };
	__u64 begin_ns;

	if (!sleep || !sleep->begin_ns)
		return;
	begin_ns = sleep->begin_ns;
	sleep->begin_ns = 0;
	if (sleep->switches != task_switches(next)) {
		stat_inc(STAT_SLEEP_STALE);
		return;
	}
	delta.wait_ns = bpf_ktime_get_ns() - begin_ns;
	if (delta.wait_ns < cfg->min_wait_ns)
		return;
	delta.max_wait_ns = delta.wait_ns;
	delta.flags = sleep->flags;
	delta.interrupted = task_signal_pending(next);
	record_event(ctl, &sleep->key, &delta);
	wait_finish(ctl, cfg, next, &sleep->key, &delta, begin_ns,
		    !delta.interrupted && !(delta.flags & LOCK_F_USER_WAIT));
}

/* Loaded with user locks on: per context switch, one register read and one task-storage lookup. */
SEC("tp_btf/sched_switch")
int BPF_PROG(futex_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	struct aperture_control *ctl = control_get();
	struct locks_config *cfg = config_get();

	if (!ctl || !cfg)
		return 0;
	/* A thread preempted before it slept is runnable, not waiting; kernel threads make no futex calls. */
	if (!preempt && prev_state && prev->mm)
		futex_sleep_begin(ctx, ctl, cfg, prev);
	futex_sleep_end(ctl, cfg, next);
	return 0;
}

/* --lock-hold, user side: attached by the loader to each target's libc. */
SEC("uprobe")
int BPF_KPROBE(mutex_unlock_user, void *mutex)	/* BPF_KPROBE: libbpf 1.1 has no BPF_UPROBE */
{
	hold_end((__u64)mutex);
	return 0;
}

/*
 * --lock-hold, kernel side: only where the kernel lets trampolines attach
 * (FEAT_FENTRY).  The lock's address is read with bpf_get_func_arg(), a
 * number: the argument itself (struct mutex *, struct rw_semaphore *) is a
 * BTF pointer, which the verifier lets no program shift (held_slot hashes
 * the address: "pointer arithmetic with >>= operator prohibited").
 */
static __always_inline void kernel_unlock(void *ctx)
{
	__u64 lock = 0;

	if (bpf_get_func_arg(ctx, 0, &lock) == 0)
		hold_end(lock);
}

SEC("fentry/mutex_unlock")
int BPF_PROG(mutex_unlock_kernel)
{
	kernel_unlock(ctx);
	return 0;
}

SEC("fentry/up_read")
int BPF_PROG(up_read_kernel)
{
	kernel_unlock(ctx);
	return 0;
}

SEC("fentry/up_write")
int BPF_PROG(up_write_kernel)
{
	kernel_unlock(ctx);
	return 0;
}

/*
 * Runqueue locks are per-CPU data, which no kernel symbol names (and kernels
 * without CONFIG_KALLSYMS_ALL list no data symbols at all).  The loader runs
 * lock_rq_collect on each CPU in turn (BPF_PROG_TEST_RUN with
 * BPF_F_TEST_RUN_ON_CPU; it is attached nowhere): whatever task is current
 * there has its runqueue in se.cfs_rq->rq (CONFIG_FAIR_GROUP_SCHED; without
 * it the cfs_rq is the one inside the rq).  A runqueue that does not say it
 * is this CPU's is not kept.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);		/* the possible CPUs, set by the loader */
	__type(key, __u32);
	__type(value, __u64);
} rq_locks SEC(".maps");

SEC("raw_tp")
int lock_rq_collect(void *ctx)
{
	struct cfs_rq *cfs_rq = bpf_get_current_task_btf()->se.cfs_rq;
	__u32 cpu = bpf_get_smp_processor_id();
	struct rq *rq;
	__u64 lock;

	if (!cfs_rq)
		return 0;
	/*
	 * BTF pointers read directly: BPF_CORE_READ is the probe read that
	 * lockdown=confidentiality denies.  A kernel without group scheduling
	 * (no cfs_rq->rq) has the cfs_rq inside its rq, whose address the
	 * verifier does not let a BTF pointer reach: read there as before.
	 */
	if (bpf_core_field_exists(cfs_rq->rq)) {
		rq = cfs_rq->rq;
		if (!rq || rq->cpu != cpu)
			return 0;
	} else {
		rq = container_of(cfs_rq, struct rq, cfs);
		if (BPF_CORE_READ(rq, cpu) != cpu)
			return 0;
	}
	lock = (__u64)&rq->__lock;
	bpf_map_update_elem(&rq_locks, &cpu, &lock, BPF_ANY);
	return 1;
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
