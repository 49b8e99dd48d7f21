/* SPDX-License-Identifier: GPL-2.0 */
/* Syscall profiler structs shared with user space. */
#ifndef SYSCALLS_H
#define SYSCALLS_H

#include "aperture.h"

/* log2 latency slots: slot i counts calls of [2^i, 2^(i+1)) ns; the last one everything above. */
#define SYSCALL_HIST_SLOTS 36

/*
 * The key's object: the syscall number in the low 32 bits, the errno of a
 * failed call in the high 32 (0: it succeeded), so errors are counted per errno.
 */
#define SYSCALL_OBJECT(nr, err) ((__u64)(__u32)(nr) | (__u64)(err) << 32)

/* Value of the syscall counts maps: 4 totals, then the histogram. */
struct syscalls_value {
	__u64 calls;
	__u64 total_ns;
	__u64 max_ns;
	__u64 errors;
	__u64 hist[SYSCALL_HIST_SLOTS];
};

/* --syscall-filter: a bit per syscall number below this. */
#define SYSCALL_FILTER_NRS 512

/* syscalls_config: the syscall profiler's own settings (pinned, bpftool-writable). */
struct syscalls_config {
	__u64 stack_min_ns;	/* take the user stack of calls at least this slow (0: never) */
	__u32 only_set;		/* count only the syscalls whose bit is set in only[] */
	__u32 pad;
	__u64 raw_min_ns;	/* calls at least this slow are raw events too (0: none) */
	__u64 only[SYSCALL_FILTER_NRS / 64];
};

/* Per-task storage: the call in progress. */
struct syscalls_start {
	__u64 enter_ns;		/* 0: none */
	__u64 nr;
	__u32 cache_gen;	/* control.cache_gen + 1 when `wanted` was decided; 0: never */
	__u32 wanted;		/* with a pid filter: this task's process is a target */
};

_Static_assert(sizeof(struct syscalls_value) == 8 * (4 + SYSCALL_HIST_SLOTS), "syscalls_value layout");
_Static_assert(sizeof(struct syscalls_config) == 24 + SYSCALL_FILTER_NRS / 8, "syscalls_config layout");

#endif /* SYSCALLS_H */
