/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What a profiler's BPF program includes: define PROFILER_ID, PROFILER_CONFIG
 * (its config struct, if any), COUNTS_VALUE and COUNTS_VALUE_ADD first.  An
 * event is then key_fill_current() + record_event().
 */
#ifndef EVENTS_PROFILER_BPF_H
#define EVENTS_PROFILER_BPF_H

#include "lib/stats.bpf.h"
#include "lib/control.bpf.h"
#include "unwind/walk.bpf.h"
#include "lib/notify.bpf.h"
#include "lib/raw_events.bpf.h"
#include "lib/counts.bpf.h"

/*
 * Where (key_fill_stacks) and who and where (key_fill_current), for the
 * current task: the stacks that control.stack_mode asks for (the kernel's
 * only when @in_kernel: see stacks_fill), and ids and comm.  The process is announced to user space (an
 * LRU lookup) only when its user stack was to be walked, whatever the walk
 * gave (the announcement is also what builds its unwind tables): user space
 * reads the maps on it, and a kernel-only key needs none of them.
 */
static __always_inline void key_fill_stacks(void *ctx, const struct aperture_control *ctl,
					    struct sample_key *key, bool in_kernel)
{
	bool user = stacks_user(ctl);

	stacks_fill(ctx, ctl, key, user, in_kernel);
	if (user)
		process_seen(ctl, bpf_get_current_pid_tgid() >> 32);
}

/*
 * Who (key_fill_who): ids, comm and @object of the current task, no stacks,
 * for a kind that picks its own stacks (a uprobe's kernel stack is the trap
 * path) or fills who and where at different times (locks).
 */
static __always_inline void key_fill_who(struct sample_key *key, __u64 object)
{
	__u64 id = bpf_get_current_pid_tgid();

	key->tgid = id >> 32;
	key->pid = (__u32)id;
	key->object = object;
	bpf_get_current_comm(key->comm, sizeof(key->comm));
}

/*
 * key_fill_who() for the current task when the program holds it already
 * (bpf_get_current_task_btf()): its fields read directly, no helper call
 * (each a call and a mitigated return, ~10 ns on this kind of VM).  The
 * comm is copied whole: the kernel pads it with zeros (strscpy_pad in
 * __set_task_comm) as bpf_get_current_comm() does.
 */
static __always_inline void key_fill_task(struct sample_key *key, struct task_struct *task, __u64 object)
{
	key->tgid = task->tgid;
	key->pid = task->pid;
	key->object = object;
	__builtin_memcpy(key->comm, task->comm, sizeof(key->comm));
}

/* Who and where: the whole key of an event of the current task. */
static __always_inline void key_fill_current(void *ctx, const struct aperture_control *ctl,
					     struct sample_key *key, __u64 object)
{
	key_fill_who(key, object);
	key_fill_stacks(ctx, ctl, key, true);
}

/* Who and where of a perf event's sample: no kernel walk for one that interrupted user mode. */
static __always_inline void key_fill_perf_sample(struct bpf_perf_event_data *ctx,
						 const struct aperture_control *ctl, struct sample_key *key)
{
	key_fill_who(key, 0);
	key_fill_stacks(ctx, ctl, key, !perf_sample_in_user_mode(ctx));
}

#endif /* EVENTS_PROFILER_BPF_H */
