/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Raw events: one record per event of the current task into the `events`
 * ring (bpf/lib/notify.bpf.h), for a reader that wants every event rather
 * than the counts (control.raw_events), kept from crowding out the
 * new-process notifications that share the ring.
 */
#ifndef LIB_RAW_EVENTS_BPF_H
#define LIB_RAW_EVENTS_BPF_H

#include "lib/stats.bpf.h"
#include "lib/notify.bpf.h"

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

#endif /* LIB_RAW_EVENTS_BPF_H */
