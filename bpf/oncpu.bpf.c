// SPDX-License-Identifier: GPL-2.0
/*
 * On-CPU profiler: a perf_event program on the CPU clock, one event per CPU,
 * counting samples per (tgid, pid, comm, user stack, kernel stack) in the
 * kernel.  User space only ever sees aggregated counts.
 */
#define PROFILER_ID PROFILER_ONCPU
#define COUNTS_VALUE struct oncpu_value
#include "common.bpf.h"

SEC("perf_event")
int oncpu_sample(struct bpf_perf_event_data *ctx)
{
	static const struct oncpu_value zero_value;
	struct aperture_control *ctl = control_get();
	__u64 id = bpf_get_current_pid_tgid();
	struct sample_key key = {};
	struct oncpu_value *value;

	if (!ctl)
		return 0;
	key.tgid = id >> 32;
	key.pid = (__u32)id;
	if (key.pid == 0 && !ctl->include_idle)
		return 0;
	if (!task_wanted(ctl, key.tgid))
		return 0;
	stat_inc(STAT_EVENTS);
	process_seen(key.tgid);
	bpf_get_current_comm(key.comm, sizeof(key.comm));
	stacks_fill(ctx, ctl, &key);
	value = counts_slot(live_counts(), &key, &zero_value);
	if (value)
		__sync_fetch_and_add(&value->samples, 1);
	if (!ctl->keep_totals)
		return 0;
	value = counts_slot(&totals, &key, &zero_value);
	if (value)
		__sync_fetch_and_add(&value->samples, 1);
	return 0;
}

/* After exec the maps are new: announce the process again. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(oncpu_exec, struct task_struct *task)
{
	__u32 tgid = task->tgid;

	bpf_map_delete_elem(&seen_tgids, &tgid);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
