/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Steering, read on every event: the control map and target set every
 * profiler of a run shares, and this kind's own config map (define
 * PROFILER_CONFIG to its struct before including).
 */
#ifndef LIB_CONTROL_BPF_H
#define LIB_CONTROL_BPF_H

#include "lib/stats.bpf.h"

#ifndef PROFILER_ID
#error "define PROFILER_ID (enum profiler_id) before including the profiler headers"
#endif

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct aperture_control);
} control SEC(".maps");

/*
 * Target processes: tgid -> bitmask of the profilers (1 << enum profiler_id)
 * that want it, so that one shared set serves profilers with different
 * targets; 0x7f means every profiler, TARGET_CHILD a child followed at fork.
 * Consulted when control.filter_pids is set.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, APERTURE_TARGETS_MAX);
	__type(key, __u32);
	__type(value, __u8);
} target_pids SEC(".maps");

/* NULL when this profiler is disabled, or the control map is another layout's. */
static __always_inline struct aperture_control *control_get(void)
{
	__u32 zero = 0;
	struct aperture_control *ctl = bpf_map_lookup_elem(&control, &zero);

	if (!ctl || !(ctl->enabled & (1u << PROFILER_ID)) ||
	    ctl->layout_version != APERTURE_LAYOUT_VERSION)
		return NULL;
	return ctl;
}

/* PID set and cgroup filters; both are about the current task. */
static __always_inline bool task_wanted(const struct aperture_control *ctl, __u32 tgid)
{
	if (ctl->filter_pids) {
		__u8 *profilers = bpf_map_lookup_elem(&target_pids, &tgid);

		if (!profilers || !(*profilers & (1u << PROFILER_ID)))
			return false;
	}
	if (ctl->cgroup_id && bpf_get_current_cgroup_id() != ctl->cgroup_id)
		return false;
	return true;
}

/*
 * A child of a target becomes a target at fork, before it first runs, for
 * the profilers of its parent: `record -- sh -c '...'` profiles what the
 * shell starts, as perf does.  Threads share their process's entry already.
 * Loaded once per run (its first profiler) where targets may be named: a
 * pid filter, or a pinned set (a takeover or SIGHUP can name them later);
 * control.follow_children switches it live (--no-children).  A child that
 * cannot be entered (set full) is counted: it runs unprofiled.
 */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(target_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 parent_tgid = parent->tgid, child_tgid = child->tgid, zero = 0;
	struct aperture_control *ctl;
	__u8 *profilers, followed;

	if (child_tgid == parent_tgid)
		return 0;
	ctl = bpf_map_lookup_elem(&control, &zero);
	if (!ctl || !ctl->filter_pids || !ctl->follow_children)
		return 0;
	profilers = bpf_map_lookup_elem(&target_pids, &parent_tgid);
	if (!profilers)
		return 0;
	followed = *profilers | TARGET_CHILD;
	if (bpf_map_update_elem(&target_pids, &child_tgid, &followed, BPF_ANY))
		stat_inc(STAT_CHILDREN_FULL);
	else
		stat_inc(STAT_CHILDREN);
	return 0;
}

/*
 * The last thread of @task's process exits: a child the kernel entered
 * leaves the set (its pid may go to an unrelated process).  The pids user
 * space gave stay: they are its to change.
 */
static __always_inline void target_exit(struct task_struct *task)
{
	__u32 tgid = task->tgid;
	__u8 *profilers;

	/*
	 * Read through the BTF pointer, not BPF_CORE_READ: under
	 * lockdown=confidentiality libbpf turns that into the denied
	 * bpf_probe_read, and every program holding it is refused.
	 */
	if (task->signal->live.counter != 0)
		return;	/* decremented before the tracepoint: 0 when the group is dead */
	profilers = bpf_map_lookup_elem(&target_pids, &tgid);
	if (profilers && (*profilers & TARGET_CHILD))
		bpf_map_delete_elem(&target_pids, &tgid);
}

#ifdef PROFILER_CONFIG
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, PROFILER_CONFIG);
} kind_config SEC(".maps");

static __always_inline PROFILER_CONFIG *config_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&kind_config, &zero);
}
#endif

#endif /* LIB_CONTROL_BPF_H */
