// SPDX-License-Identifier: GPL-2.0
/*
 * Off-CPU profiler: time between a thread's switch-out and its next switch-in,
 * summed per (tgid, pid, comm, user stack, kernel stack) with a switch count,
 * all in the kernel.  tp_btf/sched_switch only: no kprobes needed.
 *
 * Hot path, per context switch:
 *  - switch-out of prev: control lookup, state check, PID/cgroup filter; only a
 *    thread that passes all three pays for the two stack walks and one start-map
 *    update.  The stacks must be taken here: after the switch, prev is no
 *    longer current and the kernel cannot walk another task's user stack.
 *  - switch-in of next: one start-map lookup (a miss for every thread that was
 *    filtered out), and for a hit the min/max check and one counts update.
 */
#define PROFILER_ID PROFILER_OFFCPU
#define COUNTS_VALUE struct offcpu_value
#include "common.bpf.h"
#include "offcpu.h"

#define TASK_INTERRUPTIBLE	0x0001
#define TASK_UNINTERRUPTIBLE	0x0002

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);	/* resized by the loader */
	__type(key, __u32);		/* thread id */
	__type(value, struct offcpu_start);
} offcpu_start SEC(".maps");

static __always_inline __u32 prev_block_state(bool preempt, unsigned int prev_state)
{
	/* A task preempted between set_current_state() and schedule() is runnable. */
	if (preempt || prev_state == 0)
		return BLOCK_STATE_RUNNING;
	if (prev_state & TASK_INTERRUPTIBLE)
		return BLOCK_STATE_INTERRUPTIBLE;
	if (prev_state & TASK_UNINTERRUPTIBLE)
		return BLOCK_STATE_UNINTERRUPTIBLE;
	return 0;	/* dead, stopped, traced: not a wait we measure */
}

static __always_inline void switch_out(void *ctx, const struct aperture_control *ctl,
				       struct task_struct *prev, __u32 state)
{
	struct offcpu_start start = {};

	if (prev->pid == 0 || !(state & ctl->state_mask))
		return;
	start.key.tgid = prev->tgid;
	start.key.pid = prev->pid;
	/* At sched_switch, current is still prev: the current-task helpers apply. */
	if (!task_wanted(ctl, start.key.tgid))
		return;
	process_seen(start.key.tgid);
	bpf_get_current_comm(start.key.comm, sizeof(start.key.comm));
	stacks_fill(ctx, ctl, &start.key);
	start.task_start_ns = prev->start_time;
	start.switch_out_ns = bpf_ktime_get_ns();
	if (bpf_map_update_elem(&offcpu_start, &start.key.pid, &start, BPF_ANY))
		stat_inc(STAT_START_FULL);
}

static __always_inline void offcpu_value_add(struct offcpu_value *value, __u64 offcpu_ns)
{
	if (!value)
		return;
	__sync_fetch_and_add(&value->switch_count, 1);
	__sync_fetch_and_add(&value->offcpu_ns, offcpu_ns);
}

static __always_inline void switch_in(const struct aperture_control *ctl,
				      struct task_struct *next)
{
	static const struct offcpu_value zero_value;
	__u32 tid = next->pid;
	struct offcpu_start *start = bpf_map_lookup_elem(&offcpu_start, &tid);
	struct offcpu_value *value;
	struct sample_key key;
	__u64 offcpu_ns;

	if (!start)
		return;
	offcpu_ns = bpf_ktime_get_ns() - start->switch_out_ns;
	if (start->task_start_ns != next->start_time) {
		/* Stale entry of an exited thread whose id was reused. */
		bpf_map_delete_elem(&offcpu_start, &tid);
		return;
	}
	key = start->key;
	bpf_map_delete_elem(&offcpu_start, &tid);
	if (offcpu_ns < ctl->min_block_ns || (ctl->max_block_ns && offcpu_ns > ctl->max_block_ns))
		return;
	stat_inc(STAT_EVENTS);
	value = counts_slot(live_counts(), &key, &zero_value);
	offcpu_value_add(value, offcpu_ns);
	if (ctl->keep_totals)
		offcpu_value_add(counts_slot(&totals, &key, &zero_value), offcpu_ns);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(offcpu_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next, unsigned int prev_state)
{
	struct aperture_control *ctl = control_get();

	if (!ctl)
		return 0;
	switch_out(ctx, ctl, prev, prev_block_state(preempt, prev_state));
	switch_in(ctl, next);
	return 0;
}

/* A thread that exits leaves no start entry behind. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(offcpu_exit, struct task_struct *task)
{
	__u32 tid = task->pid;

	bpf_map_delete_elem(&offcpu_start, &tid);
	return 0;
}

/* After exec the maps are new: announce the process again. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(offcpu_exec, struct task_struct *task)
{
	__u32 tgid = task->tgid;

	bpf_map_delete_elem(&seen_tgids, &tgid);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
