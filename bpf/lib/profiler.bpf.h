/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What a profiler's BPF program includes: define PROFILER_ID, PROFILER_CONFIG
 * (its config struct, if any), COUNTS_VALUE and COUNTS_VALUE_ADD first.  An
 * event is then key_fill_current() + record_event().
 */
#ifndef LIB_PROFILER_BPF_H
#define LIB_PROFILER_BPF_H

#include "lib/stats.bpf.h"
#include "lib/control.bpf.h"
#include "unwind/stacks.bpf.h"
#include "lib/notify.bpf.h"
#include "lib/counts.bpf.h"

/*
 * Who and where, for the current task: ids, comm and the stacks that
 * control.stack_mode asks for; announces the process to user space.
 */
static __always_inline void key_fill_current(void *ctx, const struct aperture_control *ctl,
					     struct sample_key *key, __u64 object)
{
	__u64 id = bpf_get_current_pid_tgid();

	key->tgid = id >> 32;
	key->pid = (__u32)id;
	key->object = object;
	process_seen(key->tgid);
	bpf_get_current_comm(key->comm, sizeof(key->comm));
	stacks_fill(ctx, ctl, key);
}

#endif /* LIB_PROFILER_BPF_H */
