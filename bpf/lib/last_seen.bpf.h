/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A per-CPU note of the last process found announced on this CPU, checked
 * before the seen_tgids LRU lookup: consecutive events of one CPU are mostly
 * one process's, and the note costs an array slot and three loads from the
 * current task instead of a hash lookup.
 */
#ifndef LIB_LAST_SEEN_BPF_H
#define LIB_LAST_SEEN_BPF_H

#include "lib/control.bpf.h"

/*
 * Who the note is about.  The pid alone would pass a new process given a
 * dead one's pid, or an exec's new maps, for the announced one: the leader's
 * start time tells processes apart, the exec count (self_exec_id, inherited
 * by the threads an image starts) images.  cache_gen is control.cache_gen
 * + 1 (0: never written): user space bumps it after it empties seen_tgids
 * (a takeover), so every CPU's note is stale then.
 */
struct last_seen {
	__u64 start_time;
	__u64 exec_id;
	__u32 tgid;
	__u32 cache_gen;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct last_seen);
} last_seen SEC(".maps");

/*
 * The current process as a note, in @now; false when @tgid is not the
 * current task's (a caller announcing another process: no note) or the
 * control map is missing.  The generation is read before the caller's
 * seen_tgids lookup: emptied after it was read, the next event sees it.
 */
static __always_inline bool last_seen_now(__u32 tgid, struct last_seen *now)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct aperture_control *ctl;
	__u32 zero = 0;

	if (task->tgid != tgid)
		return false;
	ctl = bpf_map_lookup_elem(&control, &zero);
	if (!ctl)
		return false;
	now->start_time = task->group_leader->start_time;
	now->exec_id = task->self_exec_id;
	now->tgid = tgid;
	now->cache_gen = ctl->cache_gen + 1;
	return true;
}

/* This CPU's note is @now: the process was announced (or found announced) here before. */
static __always_inline bool last_seen_hit(const struct last_seen *now)
{
	__u32 zero = 0;
	struct last_seen *last = bpf_map_lookup_elem(&last_seen, &zero);

	return last && last->tgid == now->tgid && last->start_time == now->start_time &&
	       last->exec_id == now->exec_id && last->cache_gen == now->cache_gen;
}

/* @now is announced: the note for this CPU's next events. */
static __always_inline void last_seen_set(const struct last_seen *now)
{
	__u32 zero = 0;
	struct last_seen *last = bpf_map_lookup_elem(&last_seen, &zero);

	if (last)
		*last = *now;
}

#endif /* LIB_LAST_SEEN_BPF_H */
