/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Structs that cross the kernel boundary and are common to every profiler.
 * Only fixed-size types: this header is included by the BPF programs and by
 * user space.
 */
#ifndef APERTURE_H
#define APERTURE_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/*
 * Bump when any map's key/value layout, the control struct or the set of pinned
 * maps changes (7: unwind_rows and unwind_procs pinned; 8: unwind_procs' mappings
 * carry a file id, the files map pinned; 9: the stats arrays grew by nested lock
 * waits; 10: unwind_rows holds each file's page index before its rows, and
 * unwind_procs' mappings say how many slots it takes): a daemon that finds pinned maps of
 * another version refuses to mix them.
 */
#define APERTURE_LAYOUT_VERSION 11

/* perf_event_max_stack's default; a stack value is depth * 8 bytes. */
#define APERTURE_MAX_DEPTH 127
#define APERTURE_COMM_LEN 16

/*
 * Stacks are stored in a BPF HASH map keyed by a 64-bit hash of their frames
 * (not in a STACK_TRACE map): a STACK_TRACE map either loses stacks on bucket
 * collisions (-EEXIST) or, with BPF_F_REUSE_STACKID, silently hands out ids
 * that now point at another stack.  A HASH map can also be read by BPF
 * iterators, which a STACK_TRACE map cannot.  Id 0 means "no stack".
 */
struct aperture_stack {
	__u32 depth;	/* valid entries in ips[] */
	__u32 py_new;	/* walk-side: a Python frame's code object was first seen in this walk (stack_save) */
	__u64 ips[APERTURE_MAX_DEPTH];
};

/*
 * Stack id of a stack that was walked but could not be stored (map full, no
 * memory): the sample still counts, and user space shows the loss as a frame
 * instead of passing an incomplete stack off as a whole one.
 */
#define APERTURE_STACK_LOST (~0ULL)

/* Aggregation key of every profiler. */
struct sample_key {
	__u32 tgid;
	__u32 pid;
	__u64 user_stack_id;	/* 0: none (kernel-only mode or error) */
	__u64 kernel_stack_id;	/* 0: none (user-only mode or error) */
	__u64 object;		/* what a kind aggregates on besides the stack (a lock
				 * address, a syscall number); 0 for on/off-CPU */
	char comm[APERTURE_COMM_LEN];
};

/* Counts values carry at most this many u64s (count, total, max, ...). */
#define APERTURE_MAX_VALUES 4

/*
 * Bit numbers in control.enabled and target_pids values: a stable id per
 * profiler, part of the pinned layout (user/X.c sets ops.id to it).
 */
enum profiler_id {
	PROFILER_ONCPU = 0,
	PROFILER_OFFCPU = 1,
	PROFILER_LOCKS = 2,
	PROFILER_SYSCALLS = 3,
	PROFILER_GPU = 4,
	PROFILER_MAX = 8,	/* target_pids values are one byte; ids stay below 7 (TARGET_CHILD) */
};

/*
 * Bit of a target_pids value besides the profilers' bits: the entry was made
 * in the kernel at fork, for a child of a target (bpf/lib/control.bpf.h
 * target_fork), and leaves the set when that process exits.
 */
#define TARGET_CHILD 0x80
/* Room in target_pids: the pids given and the children alive at once that descend from them. */
#define APERTURE_TARGETS_MAX 4096

/* Which stacks to take. */
enum stack_mode {
	STACK_MODE_BOTH = 0,
	STACK_MODE_USER = 1,	/* -U */
	STACK_MODE_KERNEL = 2,	/* -K */
};

/*
 * The control struct: one element of an ARRAY map, read by the BPF programs on
 * every event, so that writing it (from the loader or with bpftool) changes
 * behaviour live.  Only what every profiler shares: a kind's own settings
 * live in its NAME_config map (bpf/include/X.h), so that adding a kind never changes
 * this layout.
 */
struct aperture_control {
	__u32 layout_version;
	__u32 enabled;		/* bit (1 << enum profiler_id) set: that profiler counts */
	__u32 filter_pids;	/* 1: only tgids whose target_pids bits name the profiler */
	__u32 stack_mode;	/* enum stack_mode */
	__u64 cgroup_id;	/* 0: any cgroup */
	__u32 keep_totals;	/* also add every event to the never-drained totals map */
	__u32 raw_events;	/* a reader writes the raw event stream: the kinds' thresholds apply */
	__u32 follow_children;	/* 1: a target's child becomes a target at fork (live: --no-children) */
	__u32 cache_gen;	/* bumped after changing target_pids or emptying seen_tgids: kernel caches are redone */
};

/*
 * Loss and activity counters, one per-CPU array slot each: X(id, what a
 * person reads), so that names and sums come from this one list.  LOSS: the
 * event (or its stack) was dropped.
 */
#define APERTURE_STATS(X, LOSS)							\
	X(STAT_EVENTS, "events")		/* events that passed the filters */	\
	X(STAT_USTACK_FAULT, "user stack unavailable")	/* walk failed: no user stack */ \
	X(STAT_KSTACK_FAULT, "kernel stack unavailable")				\
	LOSS(STAT_STACKS_FULL, "stacks map full")	/* stack dropped */		\
	LOSS(STAT_STACKS_NOMEM, "stack allocation failed")				\
	LOSS(STAT_COUNTS_FULL, "counts map full")	/* sample dropped */		\
	LOSS(STAT_START_FULL, "start slot unavailable")	/* a kind's begin record lost */ \
	X(STAT_EVENTS_LOST, "notifications lost")	/* ring buffer full */		\
	LOSS(STAT_NO_COUNTS_MAP, "no counts map")	/* never expected */		\
	LOSS(STAT_OTHER, "other errors")						\
	X(STAT_RAW_SENT, "raw events sent")	/* into the events ring buffer */	\
	X(STAT_RAW_LOST, "raw events lost (ring buffer full)")			\
	X(STAT_WAIT_UNFINISHED, "waits unfinished at exit")	/* a begin whose end never came */ \
	LOSS(STAT_TOTALS_FULL, "totals map full")	/* not in the never-drained totals */	\
	X(STAT_HOLDS_LOST, "holds lost (slot taken by another lock)")	/* --lock-hold: untimed */ \
	X(STAT_NAMES_LOST, "kernel names lost")	/* --gpu: a lookup not followed, a launch unnamed */ \
	X(STAT_CHILDREN, "children followed")	/* a target's child made a target at fork */ \
	LOSS(STAT_CHILDREN_FULL, "children not followed (target set full)") \
	X(STAT_PY_FRAMES, "python frames")	/* CPython frames put in user stacks */ \
	X(STAT_PY_CUT, "python walks cut short")	/* a read failed, a foreign thread state, a full stack */ \
	X(STAT_LOCK_NESTED, "nested lock waits (in the outer's time)")	/* a wait begun inside another */ \
	LOSS(STAT_SLEEP_STALE, "sleeps whose switch-in went unseen")	/* lib/sched.bpf.h */

#define APERTURE_STAT_ENUM(id, what) id,
enum aperture_stat {
	APERTURE_STATS(APERTURE_STAT_ENUM, APERTURE_STAT_ENUM)
	STAT_MAX,
};

/*
 * Records to user space through the one `events` ring buffer, each starting
 * with struct aperture_event: new-process notifications, and the raw events
 * of the event stream (`record --events FILE`) when control.raw_events is set.
 */
enum aperture_event_type {
	EVENT_NEW_PROCESS = 1,	/* first event of a tgid (or first after exec): read its maps now */
	EVENT_CPU_SAMPLE = 2,	/* struct aperture_raw_event: one on-CPU sample */
	EVENT_LOCK = 3,		/* a lock wait above the threshold */
	EVENT_SYSCALL = 4,	/* a syscall slower than the threshold */
	EVENT_UNWIND_MISS = 5,	/* a pc outside the mappings the unwinder knows: re-read them */
	EVENT_GPU_KERNEL = 6,	/* struct gpu_raw_event (bpf/include/gpu.h): one kernel launch (--gpu-events) */
	EVENT_PY_STACK = 7,	/* struct aperture_py_event: a new stack with CPython frames: name them now */
};

struct aperture_event {
	__u32 type;		/* enum aperture_event_type */
	__u32 tgid;
};

/*
 * A stack stored for the first time with CPython frames in it: its frames, so
 * that the loader reads the code objects' names while the process still has
 * them (a drain may come after it exited).  Rare: only new stacks.
 */
struct aperture_py_event {
	struct aperture_event hdr;	/* EVENT_PY_STACK, tgid */
	__u32 depth;
	__u32 pad;
	__u64 ips[APERTURE_MAX_DEPTH];
};

/* Size of `events`; raw events leave APERTURE_EVENTS_HEADROOM of it to notifications. */
#define APERTURE_EVENTS_RING_BYTES (1024 * 1024)
#define APERTURE_EVENTS_HEADROOM (64 * 1024)

/*
 * One raw event.  Stacks travel as ids into the emitting profiler's stacks
 * map (the walk is done for the aggregation key anyway, and stacks are never
 * deleted during a record): 80 bytes instead of up to 2 KiB of frames.
 */
struct aperture_raw_event {
	struct aperture_event hdr;	/* type, tgid */
	__u32 tid;
	__u32 cpu;
	__u64 timestamp;	/* bpf_ktime_get_ns(): CLOCK_MONOTONIC; a wait's or call's start */
	__u64 user_stack_id;	/* 0: none; APERTURE_STACK_LOST: not stored */
	__u64 kernel_stack_id;
	__u64 object;		/* lock address, syscall number */
	__u64 duration_ns;	/* lock wait, syscall latency */
	union {
		__s64 ret;		/* syscall return value */
		__u64 hold_ns;		/* lock hold (--lock-hold), 0: not measured */
	};
	char comm[APERTURE_COMM_LEN];
};

/* User space and the BPF programs must agree on these to the byte. */
_Static_assert(sizeof(struct sample_key) == 48, "sample_key layout");
_Static_assert(sizeof(struct aperture_control) == 40, "aperture_control layout");
_Static_assert(sizeof(struct aperture_stack) == 8 + 8 * APERTURE_MAX_DEPTH, "aperture_stack layout");
_Static_assert(sizeof(struct aperture_event) == 8, "aperture_event layout");
_Static_assert(sizeof(struct aperture_raw_event) == 80, "aperture_raw_event layout");

#endif /* APERTURE_H */
