/* SPDX-License-Identifier: GPL-2.0 */
/* Off-CPU profiler structs shared with user space. */
#ifndef OFFCPU_H
#define OFFCPU_H

#include "aperture.h"

/* Value of the off-CPU counts maps: what EBPFOffCPUProfiling carries. */
struct offcpu_value {
	__u64 switch_count;
	__u64 offcpu_ns;
};

/* Task states an off-CPU switch may be counted in (bits of offcpu_config.state_mask). */
enum offcpu_state {
	BLOCK_STATE_RUNNING = 1 << 0,		/* preempted while runnable */
	BLOCK_STATE_INTERRUPTIBLE = 1 << 1,	/* TASK_INTERRUPTIBLE (S) */
	BLOCK_STATE_UNINTERRUPTIBLE = 1 << 2,	/* TASK_UNINTERRUPTIBLE (D) */
};

/* offcpu_config: the off-CPU profiler's own settings (pinned, bpftool-writable). */
struct offcpu_config {
	__u64 min_block_ns;	/* shorter blocks are ignored */
	__u64 max_block_ns;	/* longer blocks are ignored (0: no limit) */
	__u32 state_mask;	/* enum offcpu_state bits */
	__u32 pad;
};

/* Per-task storage: written at switch-out, consumed at the next switch-in. */
struct offcpu_start {
	__u64 switch_out_ns;	/* bpf_ktime_get_ns() at switch-out; 0: none pending */
	__u32 switches;		/* task_switches() at switch-out */
	__u32 pad;
	struct sample_key key;	/* who blocked and where */
};

_Static_assert(sizeof(struct offcpu_config) == 24, "offcpu_config layout");

#endif /* OFFCPU_H */
