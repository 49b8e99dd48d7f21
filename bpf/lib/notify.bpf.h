/* SPDX-License-Identifier: GPL-2.0 */
/*
 * New-process notifications to user space, so that a process's memory maps
 * are read while it lives: one that exits before the next snapshot is still
 * symbolized.  The maps are shared by the profilers of a run, and so is the
 * exec program: every kind's object has it, only the first one loads it.
 */
#ifndef LIB_NOTIFY_BPF_H
#define LIB_NOTIFY_BPF_H

#include "lib/stats.bpf.h"
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

/* Announces @tgid the first time it shows up. */
static __always_inline void process_seen(__u32 tgid)
{
	struct aperture_event *event;
	struct last_seen now;
	bool noted = last_seen_now(tgid, &now);
	__u8 one = 1;

	if (noted && last_seen_hit(&now))
		return;
	if (bpf_map_lookup_elem(&seen_tgids, &tgid)) {
		if (noted)
			last_seen_set(&now);
		return;
	}
	bpf_map_update_elem(&seen_tgids, &tgid, &one, BPF_ANY);
	event = bpf_ringbuf_reserve(&events, sizeof(*event), 0);
	if (!event) {
		/* Not announced: its next event tries again (else no tables, no names, for its life). */
		bpf_map_delete_elem(&seen_tgids, &tgid);
		stat_inc(STAT_EVENTS_LOST);
		return;
	}
	event->type = EVENT_NEW_PROCESS;
	event->tgid = tgid;
	bpf_ringbuf_submit(event, 0);
	if (noted)
		last_seen_set(&now);
}

/*
 * Room for one raw event of @size bytes in `events`, when a reader wants them
 * (control.raw_events).  A ring buffer with less than the headroom left
 * refuses it (counted), so that a flood never costs new-process notifications.
 */
static __always_inline void *raw_event_reserve(const struct aperture_control *ctl, __u64 size)
{
	void *ev;

	if (!ctl->raw_events)
		return NULL;
	if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >
	    APERTURE_EVENTS_RING_BYTES - APERTURE_EVENTS_HEADROOM) {
		stat_inc(STAT_RAW_LOST);
		return NULL;
	}
	ev = bpf_ringbuf_reserve(&events, size, 0);
	if (!ev)
		stat_inc(STAT_RAW_LOST);
	return ev;
}

/* The common part of a raw event of the current task (who and comm from @key). */
static __always_inline void raw_event_fill(struct aperture_raw_event *ev, __u32 type,
					   const struct sample_key *key, __u64 timestamp,
					   __u64 duration_ns, __s64 ret)
{
	ev->hdr.type = type;
	ev->hdr.tgid = key->tgid;
	ev->tid = (__u32)bpf_get_current_pid_tgid();
	ev->cpu = bpf_get_smp_processor_id();
	ev->timestamp = timestamp;
	ev->user_stack_id = key->user_stack_id;
	ev->kernel_stack_id = key->kernel_stack_id;
	ev->object = key->object;
	ev->duration_ns = duration_ns;
	ev->ret = ret;
	__builtin_memcpy(ev->comm, key->comm, sizeof(ev->comm));
}

/* No wakeup: the reader polls every 100 ms. */
static __always_inline void raw_event_submit(void *ev)
{
	bpf_ringbuf_submit(ev, BPF_RB_NO_WAKEUP);
	stat_inc(STAT_RAW_SENT);
}

/* One raw event of the current task into `events` (see raw_event_reserve). */
static __always_inline void raw_event_emit(const struct aperture_control *ctl, __u32 type,
					   const struct sample_key *key, __u64 timestamp,
					   __u64 duration_ns, __s64 ret)
{
	struct aperture_raw_event *ev = raw_event_reserve(ctl, sizeof(*ev));

	if (!ev)
		return;
	raw_event_fill(ev, type, key, timestamp, duration_ns, ret);
	raw_event_submit(ev);
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
