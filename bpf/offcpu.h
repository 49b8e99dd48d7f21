/* SPDX-License-Identifier: GPL-2.0 */
/* Off-CPU profiler structs shared with user space. */
#ifndef OFFCPU_H
#define OFFCPU_H

#include "aperture.h"

/* Written at switch-out, consumed at the next switch-in of the same thread. */
struct offcpu_start {
	__u64 switch_out_ns;	/* bpf_ktime_get_ns() at switch-out */
	__u64 task_start_ns;	/* task->start_time: tells a reused pid apart */
	struct sample_key key;	/* who blocked and where */
};

#endif /* OFFCPU_H */
