/* SPDX-License-Identifier: GPL-2.0 */
/*
 * New-process notifications to user space, so that a process's memory maps
 * are read while it lives: one that exits before the next snapshot is still
 * symbolized.  The maps are shared by the profilers of a run, and so is the
 * exec program: every kind's object has it, only the first one loads it.
 * The `events` ring that carries them carries every other message to user
 * space too (unwind misses, Python stacks, raw events: raw_events.bpf.h).
 */
#ifndef LIB_NOTIFY_BPF_H
#define LIB_NOTIFY_BPF_H

#include "lib/stats.bpf.h"
#include "lib/kernel.bpf.h"
#include "lib/control.bpf.h"
#include "lib/last_seen.bpf.h"

/*
 * tgids already announced to user space.  LRU: an evicted tgid is announced
 * again, which only costs user space a cheap "already tracked" check.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, __u8);
} seen_tgids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, APERTURE_EVENTS_RING_BYTES);
} events SEC(".maps");

/*
 * Announces @tgid the first time it shows up; @ctl: the caller's control map.
 * Returns 0.  A global function, checked once: inlined, the verifier walked
 * it (and its search of the kernel's BTF for task->group_leader) once per
 * path of the stack walks before it.
 */
APERTURE_SUBPROG int process_seen(const struct aperture_control *ctl, __u32 tgid)
{
	struct aperture_event *event;
	struct last_seen now;
	bool noted;
	__u8 one = 1;

	if (!ctl)
		return 0;
	noted = last_seen_now(ctl, tgid, &now);
	if (noted && last_seen_hit(&last_seen, &now))
		return 0;
	if (bpf_map_lookup_elem(&seen_tgids, &tgid)) {
		if (noted)
			last_seen_set(&last_seen, &now);
		return 0;
	}
	bpf_map_update_elem(&seen_tgids, &tgid, &one, BPF_ANY);
	event = bpf_ringbuf_reserve(&events, sizeof(*event), 0);
	if (!event) {
		/* Not announced: its next event tries again (else no tables, no names, for its life). */
		bpf_map_delete_elem(&seen_tgids, &tgid);
		stat_inc(STAT_EVENTS_LOST);
		return 0;
	}
	event->type = EVENT_NEW_PROCESS;
	event->tgid = tgid;
	bpf_ringbuf_submit(event, 0);
	if (noted)
		last_seen_set(&last_seen, &now);
	return 0;
}

/*
 * A process that exits is forgotten: the next process its pid is given to
 * is announced (its own maps read) instead of passing for the old one.  The
 * leader's exit stands for the process's; threads left behind, if any, are
 * announced again, which costs user space one "already tracked" check.
 * A followed child leaves the target set with its last thread (target_exit).
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(process_exit, struct task_struct *task)
{
	__u32 tgid = task->tgid;

	if (task->pid == tgid)
		bpf_map_delete_elem(&seen_tgids, &tgid);
	target_exit(task);
	return 0;
}

/* After exec the maps are new: announce the process again. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(process_exec, struct task_struct *task)
{
	__u32 tgid = task->tgid;

	bpf_map_delete_elem(&seen_tgids, &tgid);
	return 0;
}

#endif /* LIB_NOTIFY_BPF_H */
