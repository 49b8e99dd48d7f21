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
 * Bump when any map's key/value layout or the control struct changes: a daemon
 * that finds pinned maps of another version refuses to mix them.
 */
#define APERTURE_LAYOUT_VERSION 2

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
	__u32 pad;
	__u64 ips[APERTURE_MAX_DEPTH];
};

/*
 * Stack id of a stack that was walked but could not be stored (map full, no
 * memory): the sample still counts, and user space shows the loss as a frame
 * instead of passing an incomplete stack off as a whole one.
 */
#define APERTURE_STACK_LOST (~0ULL)

/* Aggregation key shared by the on-CPU and off-CPU profilers. */
struct sample_key {
	__u32 tgid;
	__u32 pid;
	__u64 user_stack_id;	/* 0: none (kernel-only mode or error) */
	__u64 kernel_stack_id;	/* 0: none (user-only mode or error) */
	char comm[APERTURE_COMM_LEN];
};

/* Bit numbers in control.enabled; one per profiler. */
enum profiler_id {
	PROFILER_ONCPU = 0,
	PROFILER_OFFCPU = 1,
	PROFILER_MAX,
};

/* Which stacks to take. */
enum stack_mode {
	STACK_MODE_BOTH = 0,
	STACK_MODE_USER = 1,	/* -U */
	STACK_MODE_KERNEL = 2,	/* -K */
};

/* Task states an off-CPU switch may be counted in (bits of control.state_mask). */
enum offcpu_state {
	BLOCK_STATE_RUNNING = 1 << 0,		/* preempted while runnable */
	BLOCK_STATE_INTERRUPTIBLE = 1 << 1,	/* TASK_INTERRUPTIBLE (S) */
	BLOCK_STATE_UNINTERRUPTIBLE = 1 << 2,	/* TASK_UNINTERRUPTIBLE (D) */
};

/*
 * The control struct: one element of an ARRAY map, read by the BPF programs on
 * every event, so that writing it (from the loader or with bpftool) changes
 * behaviour live.
 */
struct aperture_control {
	__u32 layout_version;
	__u32 enabled;		/* bit (1 << enum profiler_id) set: that profiler counts */
	__u32 filter_pids;	/* 1: only tgids whose target_pids bits name the profiler */
	__u32 stack_mode;	/* enum stack_mode */
	__u64 cgroup_id;	/* 0: any cgroup */
	__u32 include_idle;	/* on-CPU: count the idle task (pid 0) */
	__u32 state_mask;	/* off-CPU: enum offcpu_state bits */
	__u64 min_block_ns;	/* off-CPU: shorter blocks are ignored */
	__u64 max_block_ns;	/* off-CPU: longer blocks are ignored (0: no limit) */
	__u32 keep_totals;	/* also add every event to the never-drained totals map */
	__u32 pad;
};

/* Loss and activity counters, one per-CPU array slot each. */
enum aperture_stat {
	STAT_EVENTS,		/* events that passed the filters */
	STAT_USTACK_FAULT,	/* user stack walk failed (-EFAULT etc.) */
	STAT_KSTACK_FAULT,	/* kernel stack walk failed */
	STAT_STACKS_FULL,	/* stacks map full: stack dropped */
	STAT_STACKS_NOMEM,	/* stacks map element allocation failed: stack dropped */
	STAT_COUNTS_FULL,	/* aggregation map full: sample dropped */
	STAT_START_FULL,	/* off-CPU: start map full: switch dropped */
	STAT_EVENTS_LOST,	/* ring buffer full: a notification to user space dropped */
	STAT_NO_COUNTS_MAP,	/* active generation map missing (never expected) */
	STAT_OTHER,		/* any other error */
	STAT_MAX,
};

/* Value of the on-CPU counts map. */
struct oncpu_value {
	__u64 samples;
};

/* Value of the off-CPU counts map: what EBPFOffCPUProfiling carries. */
struct offcpu_value {
	__u64 switch_count;
	__u64 offcpu_ns;
};

/* Notifications to user space through the `events` ring buffer. */
enum aperture_event_type {
	EVENT_NEW_PROCESS = 1,	/* first event of a tgid (or first after exec): read its maps now */
};

struct aperture_event {
	__u32 type;		/* enum aperture_event_type */
	__u32 tgid;
};

#endif /* APERTURE_H */
