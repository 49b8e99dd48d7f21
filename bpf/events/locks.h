/* SPDX-License-Identifier: GPL-2.0 */
/* Lock contention profiler structs shared with user space. */
#ifndef LOCKS_H
#define LOCKS_H

#include "aperture.h"

/* contention_begin's flags (include/trace/events/lock.h), kept as they come. */
#define LOCK_F_SPIN		(1U << 0)
#define LOCK_F_READ		(1U << 1)
#define LOCK_F_WRITE		(1U << 2)
#define LOCK_F_RT		(1U << 3)
#define LOCK_F_PERCPU		(1U << 4)
#define LOCK_F_MUTEX		(1U << 5)
/* Ours, above the kernel's. */
#define LOCK_F_USER_MUTEX	(1U << 8)	/* futex wait with val 2: a contended pthread mutex */
#define LOCK_F_USER_WAIT	(1U << 9)	/* any other futex wait: condvars, semaphores, joins */
#define LOCK_F_MMAP		(1U << 12)	/* the waiter's own mm->mmap_lock */
#define LOCK_F_SIGLOCK		(1U << 13)	/* the waiter's own sighand->siglock */

/* Value of the lock counts maps; the key's object is the lock (or futex) address. */
struct locks_value {
	__u64 contentions;
	__u64 wait_ns;
	__u64 max_wait_ns;
	__u32 flags;		/* LOCK_F_* seen for this lock */
	__u32 interrupted;	/* waits that ended without the lock (signal, timeout) */
};

/* locks_config: the lock profiler's own settings (pinned, bpftool-writable). */
struct locks_config {
	__u64 min_wait_ns;	/* shorter waits are not counted */
	__u32 kernel;		/* count kernel lock contention (lock:contention_begin/end) */
	__u32 user;		/* count user futex waits */
	__u64 raw_min_ns;	/* lock waits at least this long are raw events too (0: none) */
};

/* A wait in progress: per task (sleeping locks, futexes) or per CPU (spinning locks). */
struct locks_start {
	__u64 begin_ns;		/* 0: none */
	__u64 lock;
	__u32 flags;
	__u32 pad;
};

_Static_assert(sizeof(struct locks_value) == 8 * APERTURE_MAX_VALUES, "locks_value layout");
_Static_assert(sizeof(struct locks_config) == 24, "locks_config layout");

#endif /* LOCKS_H */
