/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-CPU notes of the last process found to be something on this CPU
 * (announced: last_seen; not a target: a kind's own note), checked before
 * the hash lookup that would say it again: consecutive events of one CPU are
 * mostly one process's, and a note costs an array slot and three loads from
 * the current task instead of a hash lookup.
 */
#ifndef LIB_LAST_SEEN_BPF_H
#define LIB_LAST_SEEN_BPF_H

#include "lib/control.bpf.h"
#include "lib/kernel.bpf.h"

/*
 * Who a note is about.  The pid alone would pass a new process given a
 * dead one's pid, or an exec's new maps, for the noted one: the leader's
 * start time tells processes apart, the exec count (self_exec_id, inherited
 * by the threads an image starts) images.  cache_gen is control.cache_gen
 * + 1 (0: never written): user space bumps it after it empties seen_tgids
 * (a takeover) or changes target_pids, so every CPU's note is stale then.
 */
struct last_seen {
	__u64 start_time;
	__u64 exec_id;
	__u32 tgid;
	__u32 cache_gen;
};

/* A per-CPU note: one slot of struct last_seen. */
#define LAST_SEEN_NOTE(name)						\
	struct {							\
		__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);		\
		__uint(max_entries, 1);					\
		__type(key, __u32);					\
		__type(value, struct last_seen);			\
	} name SEC(".maps")

/* The last process found announced (process_seen). */
LAST_SEEN_NOTE(last_seen);

/* @task's process as a note, in @now; @ctl: the caller's control map. */
static __always_inline void last_seen_of(const struct aperture_control *ctl, struct task_struct *task,
					 struct last_seen *now)
{
	now->start_time = task->group_leader->start_time;
	now->exec_id = task->self_exec_id;
	now->tgid = task->tgid;
	now->cache_gen = ctl->cache_gen + 1;
}

/*
 * The current process as a note, in @now; false when @tgid is not the
 * current task's (a caller announcing another process: no note) or the
 * task cannot be read (current_identity).  @ctl is read before the caller's
 * seen_tgids lookup: emptied after it was read, the next event sees it.
 */
static __always_inline bool last_seen_now(const struct aperture_control *ctl, __u32 tgid,
					  struct last_seen *now)
{
	if (!current_identity(&now->start_time, &now->exec_id, &now->tgid))
		return false;
	now->cache_gen = ctl->cache_gen + 1;
	return now->tgid == tgid;
}

/* This CPU's note in @note (a LAST_SEEN_NOTE map) is @now. */
static __always_inline bool last_seen_hit(void *note, const struct last_seen *now)
{
	__u32 zero = 0;
	struct last_seen *last = bpf_map_lookup_elem(note, &zero);

	return last && last->tgid == now->tgid && last->start_time == now->start_time &&
	       last->exec_id == now->exec_id && last->cache_gen == now->cache_gen;
}

/* @now is this CPU's note in @note, for its next events. */
static __always_inline void last_seen_set(void *note, const struct last_seen *now)
{
	__u32 zero = 0;
	struct last_seen *last = bpf_map_lookup_elem(note, &zero);

	if (last)
		*last = *now;
}

#endif /* LIB_LAST_SEEN_BPF_H */
