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
 * targets; 0xff means every profiler.  Consulted when control.filter_pids is set.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
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
