// SPDX-License-Identifier: GPL-2.0
/*
 * Off-CPU profiler: time between a thread's switch-out and its next switch-in,
 * summed per (tgid, pid, comm, user stack, kernel stack) with a switch count,
 * all in the kernel.  tp_btf/sched_switch only: no kprobes needed.
 *
 * Hot path, per context switch:
 *  - switch-out of prev: control lookup, state check, PID/cgroup filter; only a
 *    thread that passes all three pays for the two stack walks and one
 *    task-storage write.  The stacks must be taken here: after the switch,
 *    prev is no longer current and the kernel cannot walk another task's user
 *    stack.
 *  - switch-in of next: one task-storage lookup (no slot for every thread
 *    that was filtered out), and for a pending one the min/max check and one
 *    counts update.
 * The start lives in task storage (as perf's off_cpu.bpf.c keeps it): it goes
 * with its task, so there is no exit program and no reused-tid check.  The
 * build for older kernels (offcpu_compat.bpf.c) keeps it by thread id and
 * frees it at the thread's exit (bpf/lib/kernel.bpf.h).
 */
#include "vmlinux.h"
#include "offcpu.h"
#define PROFILER_ID PROFILER_OFFCPU
#define PROFILER_CONFIG struct offcpu_config
#define COUNTS_VALUE struct offcpu_value
#define COUNTS_VALUE_ADD(slot, delta) do {					\
	__sync_fetch_and_add(&(slot)->switch_count, (delta)->switch_count);	\
	__sync_fetch_and_add(&(slot)->offcpu_ns, (delta)->offcpu_ns);		\
} while (0)
#include "events/profiler.bpf.h"
#include "lib/sched.bpf.h"

#define TASK_INTERRUPTIBLE	0x0001
#define TASK_UNINTERRUPTIBLE	0x0002

THREAD_STATE_MAP(offcpu_start, struct offcpu_start);

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
				       const struct offcpu_config *cfg, struct task_struct *prev,
				       __u32 state)
{
	struct offcpu_start *start;

	if (prev->pid == 0 || !(state & cfg->state_mask))
		return;
	/* At sched_switch, current is still prev: the current-task helpers apply. */
	if (!task_wanted(ctl, prev->tgid))
		return;
	start = THREAD_STATE_GET(offcpu_start, prev, struct offcpu_start, true);
	if (!start) {
		stat_inc(STAT_START_FULL);
		return;
	}
	key_fill_current(ctx, ctl, &start->key, 0);
	start->switches = task_switches(prev);
	start->switch_out_ns = bpf_ktime_get_ns();
}

static __always_inline void switch_in(const struct aperture_control *ctl,
				      const struct offcpu_config *cfg, struct task_struct *next)
{
	struct offcpu_start *start = THREAD_STATE_GET(offcpu_start, next, struct offcpu_start, false);
	struct offcpu_value delta = { .switch_count = 1 };

	if (!start || !start->switch_out_ns)
		return;
	delta.offcpu_ns = bpf_ktime_get_ns() - start->switch_out_ns;
	start->switch_out_ns = 0;
	if (start->switches != task_switches(next)) {
		stat_inc(STAT_SLEEP_STALE);
		return;
	}
	if (delta.offcpu_ns < cfg->min_block_ns || (cfg->max_block_ns && delta.offcpu_ns > cfg->max_block_ns))
		return;
	record_event(ctl, &start->key, &delta);
}

SCHED_SWITCH_PROG(offcpu_switch)
{
	struct aperture_control *ctl = control_get();
	struct offcpu_config *cfg = config_get();

	if (!ctl || !cfg)
		return 0;
	switch_out(ctx, ctl, cfg, prev, prev_block_state(preempt, SCHED_SWITCH_PREV_STATE));
	switch_in(ctl, cfg, next);
	return 0;
}

/* The older build's per-thread start freed with its thread (every thread's exit). */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(offcpu_thread_exit, struct task_struct *task)
{
	THREAD_STATE_FREE(offcpu_start, task);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
