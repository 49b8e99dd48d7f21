/* SPDX-License-Identifier: GPL-2.0 */
/* Lock contention profiler structs shared with user space. */
#ifndef LOCKS_H
#define LOCKS_H

#include "aperture.h"

/* contention_begin's flags (the kernel's trace/events/lock.h), kept as they come. */
#define LOCK_F_SPIN		(1U << 0)
#define LOCK_F_READ		(1U << 1)
#define LOCK_F_WRITE		(1U << 2)
#define LOCK_F_RT		(1U << 3)
#define LOCK_F_PERCPU		(1U << 4)
#define LOCK_F_MUTEX		(1U << 5)
/* Ours, above the kernel's. */
#define LOCK_F_USER_MUTEX	(1U << 8)	/* futex wait with val 2: a contended pthread mutex */
#define LOCK_F_USER_WAIT	(1U << 9)	/* any other futex wait: condvars, semaphores, joins */
#define LOCK_F_USER_PI		(1U << 10)	/* futex LOCK_PI/LOCK_PI2: a priority-inheritance pthread mutex */
#define LOCK_F_MMAP		(1U << 12)	/* the waiter's own mm->mmap_lock */
#define LOCK_F_SIGLOCK		(1U << 13)	/* the waiter's own sighand->siglock */

/* Value of the lock counts maps; the key's object is the lock (or futex) address. */
struct locks_value {
	__u64 contentions;
	__u64 wait_ns;
	__u64 max_wait_ns;
	__u32 flags;		/* LOCK_F_* seen for this lock */
	__u32 interrupted;	/* waits that ended without the lock (signal, timeout) */
	/* --lock-hold: from the end of a contended wait to the unlock (0 unless measured) */
	__u64 holds;		/* unlocks timed */
	__u64 hold_ns;
	__u64 max_hold_ns;
};

/* locks_config: the lock profiler's own settings (pinned, bpftool-writable). */
struct locks_config {
	__u64 min_wait_ns;	/* shorter waits are not counted */
	__u32 kernel;		/* count kernel lock contention (lock:contention_begin/end) */
	__u32 user;		/* count user futex waits */
	__u64 raw_min_ns;	/* lock waits at least this long are raw events too (0: none) */
	__u32 hold_user;	/* --lock-hold: time holds of contended user mutexes (uprobe on unlock) */
	__u32 hold_kernel;	/* --lock-hold: time holds of contended kernel mutexes/rwsems (fentry) */
};

/*
 * --lock-hold: a lock the thread took after waiting for it, until its unlock.
 * A few per thread (task storage), for nested locks.  The raw event of the
 * wait, when there is one, is sent at the unlock with the hold time.
 */
#define LOCK_HOLD_SLOTS 4
struct locks_held {
	__u64 lock;		/* 0: free */
	__u64 since_ns;		/* end of the wait */
	__u64 user_stack_id;	/* the wait's key, so that the hold adds to its sample */
	__u64 kernel_stack_id;
	__u64 wait_begin_ns;	/* the wait, for its raw event (raw_pending) */
	__u64 wait_ns;
	__u32 flags;
	__u32 raw_pending;	/* the wait's raw event waits for this hold */
};

/* Runqueue locks named, at most: CPUs beyond have theirs shown by address. */
#define LOCKS_RQ_MAX_CPUS 8192

/* A wait in progress: per task (sleeping locks, futexes) or per CPU (spinning locks). */
struct locks_start {
	__u64 begin_ns;		/* 0: none */
	__u64 lock;
	__u32 flags;
	__u32 pad;
	__u64 user_stack_id;	/* the waiter's stacks, walked at the begin */
	__u64 kernel_stack_id;
};

_Static_assert(sizeof(struct locks_value) == 8 * 7, "locks_value layout");
_Static_assert(sizeof(struct locks_config) == 32, "locks_config layout");
_Static_assert(sizeof(struct locks_held) == 56, "locks_held layout");

#endif /* LOCKS_H */
