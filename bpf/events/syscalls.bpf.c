// SPDX-License-Identifier: GPL-2.0
/*
 * Syscall profiler: per (process, syscall, errno) the calls, total and max
 * latency and a log2 latency histogram, all in the kernel (the histogram is
 * slots of the map value: no per-call user-space work).  tp_btf sys_enter /
 * sys_exit; the user stack only for calls slower than stack_min_ns.
 */
#include "vmlinux.h"
#include "syscalls.h"
#define PROFILER_ID PROFILER_SYSCALLS
#define PROFILER_CONFIG struct syscalls_config
#define COUNTS_VALUE struct syscalls_value
#define COUNTS_DELTA struct syscalls_delta
#define COUNTS_VALUE_ADD(slot, delta) syscalls_value_add(slot, delta)

/* What one call adds. */
struct syscalls_delta {
	__u64 ns;
	__u32 slot;
	__u32 error;
};

static inline __attribute__((always_inline)) void syscalls_value_add(struct syscalls_value *slot,
								     const struct syscalls_delta *delta);
#include "events/profiler.bpf.h"
#include "lib/syscall.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct syscalls_start);
} syscall_start SEC(".maps");

static inline __attribute__((always_inline)) void syscalls_value_add(struct syscalls_value *slot,
								     const struct syscalls_delta *delta)
{
	__u32 i = delta->slot;

	__sync_fetch_and_add(&slot->calls, 1);
	__sync_fetch_and_add(&slot->total_ns, delta->ns);
	if (delta->error)
		__sync_fetch_and_add(&slot->errors, 1);
	if (delta->ns > slot->max_ns)	/* racy max: one of two concurrent raises wins */
		slot->max_ns = delta->ns;
	if (i < SYSCALL_HIST_SLOTS)
		__sync_fetch_and_add(&slot->hist[i], 1);
}

/* floor(log2(ns)) by halving (6 steps, not a loop of up to 35), capped to the last slot. */
static __always_inline __u32 hist_slot(__u64 ns)
{
	__u32 slot = 0;

	if (ns >> 32) {
		ns >>= 32;
		slot += 32;
	}
	if (ns >> 16) {
		ns >>= 16;
		slot += 16;
	}
	if (ns >> 8) {
		ns >>= 8;
		slot += 8;
	}
	if (ns >> 4) {
		ns >>= 4;
		slot += 4;
	}
	if (ns >> 2) {
		ns >>= 2;
		slot += 2;
	}
	if (ns >> 1)
		slot += 1;
	return slot < SYSCALL_HIST_SLOTS ? slot : SYSCALL_HIST_SLOTS - 1;
}

/* --syscall-filter: is syscall @id one of those kept? */
static __always_inline bool syscall_kept(const struct syscalls_config *cfg, long id)
{
	if (!cfg->only_set)
		return true;
	__u64 nr = (__u64)id;	/* a negative id becomes huge: not kept */

	if (nr >= SYSCALL_FILTER_NRS)
		return false;
	return (cfg->only[(nr / 64) & (SYSCALL_FILTER_NRS / 64 - 1)] >> (nr % 64)) & 1;
}

/*
 * With a pid filter, the last task found not to be a target on this CPU,
 * named by its pt_regs (the tracepoints' first argument: the top of its
 * kernel stack, one per live task): the first test of both programs, so
 * that a task that is not a target costs an array slot and three compares
 * per program, no helper call (bpf_get_current_task_btf() alone costs
 * ~10 ns a program on this kind of VM: a call and a mitigated return), no
 * storage and no set lookup.  Sound because a task's answer changes only
 * when user space changes target_pids (and then bumps control.cache_gen,
 * in the note) or when the kernel adds a child at fork or removes one at
 * its exit (a task that is gone); and a dead task's stack goes to a new
 * task only at a fork, which bumps fork_gen (in the note) before the new
 * task first runs.  Per task: threads of one process that take turns on a
 * CPU each miss once per turn, and then the process note below answers.
 */
struct not_target_note {
	__u64 regs;
	__u32 cache_gen;	/* control.cache_gen + 1: 0 is never written */
	__u32 fork_gen;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct not_target_note);
} not_target SEC(".maps");

/* The loader attached syscall_fork (tp_btf/sched_process_fork): without it the note is never used. */
const volatile bool forks_counted = false;
/* Forks of the machine since load (syscall_fork); any change makes every note stale. */
__u32 fork_gen = 0;

/* The last process found not to be a target on this CPU: a miss of the task note above. */
LAST_SEEN_NOTE(not_target_process);

/* The current task, whose pt_regs are @regs, is this CPU's noted non-target. */
static __always_inline bool not_target_noted(const struct aperture_control *ctl, const void *regs)
{
	__u32 zero = 0;
	struct not_target_note *note;

	if (!forks_counted)
		return false;
	note = bpf_map_lookup_elem(&not_target, &zero);
	return note && note->regs == (__u64)regs && note->cache_gen == ctl->cache_gen + 1 &&
	       note->fork_gen == fork_gen;
}

/* The current task, whose pt_regs are @regs, is this CPU's noted non-target from now. */
static __always_inline void not_target_note(const void *regs, __u32 cache_gen, __u32 forks)
{
	__u32 zero = 0;
	struct not_target_note *note = bpf_map_lookup_elem(&not_target, &zero);

	if (!note)
		return;
	note->regs = (__u64)regs;
	note->cache_gen = cache_gen;
	note->fork_gen = forks;
}

/*
 * With a pid filter: the current task's storage if its process is a target,
 * else NULL.  Decided once per task and kept in its storage while
 * control.cache_gen stays the same (user space bumps it after changing
 * target_pids; a child the kernel adds at fork is a new task, with nothing
 * cached); a task found not to be one is this CPU's not_target note (and
 * its process the not_target_process note) and gets no storage.  The
 * generations are read before the set: a change made meanwhile is seen on
 * the next call.
 */
static __always_inline struct syscalls_start *syscall_target(const struct aperture_control *ctl,
							     const void *regs)
{
	__u32 forks = *(volatile __u32 *)&fork_gen;	/* before anything is decided, as cache_gen */
	__u32 cache_gen = ctl->cache_gen + 1;
	struct syscalls_start *start;
	struct task_struct *task;
	struct last_seen now;
	__u8 *profilers;
	bool wanted;

	if (not_target_noted(ctl, regs))
		return NULL;
	task = bpf_get_current_task_btf();
	/*
	 * A target's task has its decision in its storage: the process note
	 * (three loads from the task, one of them through its leader) only for
	 * others.
	 */
	start = bpf_task_storage_get(&syscall_start, task, NULL, 0);
	if (start && start->cache_gen == cache_gen) {
		if (start->wanted)
			return start;
		not_target_note(regs, cache_gen, forks);
		return NULL;
	}
	last_seen_of(ctl, task, &now);
	if (last_seen_hit(&not_target_process, &now)) {
		not_target_note(regs, now.cache_gen, forks);
		return NULL;
	}
	profilers = bpf_map_lookup_elem(&target_pids, &now.tgid);
	wanted = profilers && (*profilers & (1u << PROFILER_ID));
	if (!wanted) {
		last_seen_set(&not_target_process, &now);
		not_target_note(regs, now.cache_gen, forks);
	}
	if (!wanted && !start)
		return NULL;	/* not a target, and no storage made for it */
	if (!start)
		start = bpf_task_storage_get(&syscall_start, task, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!start) {
		stat_inc(STAT_START_FULL);
		return NULL;
	}
	start->wanted = wanted;
	start->cache_gen = now.cache_gen;	/* 0 is a fresh storage's: never decided */
	return wanted ? start : NULL;
}

/* Where this call's entry time goes: the task's storage, or NULL when the call is not counted. */
static __always_inline struct syscalls_start *syscall_start_of(const struct aperture_control *ctl,
								const void *regs)
{
	struct syscalls_start *start;

	if (ctl->cgroup_id && bpf_get_current_cgroup_id() != ctl->cgroup_id)
		return NULL;
	if (ctl->filter_pids)
		return syscall_target(ctl, regs);
	start = bpf_task_storage_get(&syscall_start, bpf_get_current_task_btf(), NULL,
				     BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!start)
		stat_inc(STAT_START_FULL);
	return start;
}

/* The target test first: a task that is not one costs what it takes to say so. */
SEC("tp_btf/sys_enter")
int BPF_PROG(syscall_enter, struct pt_regs *regs, long id)
{
	struct aperture_control *ctl = control_get();
	struct syscalls_start *start;
	struct syscalls_config *cfg;

	if (!ctl)
		return 0;
	start = syscall_start_of(ctl, regs);
	if (!start)
		return 0;	/* the entry time only for targets: the exit sees none */
	cfg = config_get();
	if (!cfg || !syscall_kept(cfg, id))
		return 0;
	start->nr = id;
	start->enter_ns = bpf_ktime_get_ns();
	return 0;
}

/* One call of a target ended after @ns: into its counts (and a stack, a raw event: see below). */
static __always_inline int syscall_count(void *ctx, struct aperture_control *ctl, struct task_struct *task,
					 struct syscalls_start *start, long ret)
{
	struct syscalls_config *cfg = config_get();
	struct syscalls_delta delta = {};
	struct sample_key key = {};
	bool failed = ret < 0 && ret >= -4095;
	__u64 enter_ns = start->enter_ns;

	delta.ns = bpf_ktime_get_ns() - enter_ns;
	if (!cfg)
		return 0;
	delta.slot = hist_slot(delta.ns);
	delta.error = failed;
	start->enter_ns = 0;
	key_fill_task(&key, task, SYSCALL_OBJECT(start->nr, failed ? -ret : 0));
	/*
	 * Per process, no stack: unless this call is slow enough to be worth a
	 * walk.  Only a stack needs the process's maps read (its announcement):
	 * the plain count skips that lookup on every call.
	 */
	if (cfg->stack_min_ns && delta.ns >= cfg->stack_min_ns) {
		process_seen(ctl, key.tgid);
		key.user_stack_id = stack_store(ctx, true);
	} else {
		key.pid = 0;
	}
	record_event(ctl, &key, &delta);
	if (cfg->raw_min_ns && delta.ns >= cfg->raw_min_ns) {
		key.object = (__u32)key.object;	/* the number; the return value says the error */
		raw_event_emit(ctl, EVENT_SYSCALL, &key, enter_ns, delta.ns, ret);
	}
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(syscall_exit, struct pt_regs *regs, long ret)
{
	struct aperture_control *ctl = control_get();
	struct syscalls_start *start;
	struct task_struct *task;

	if (!ctl)
		return 0;
	/*
	 * A process that is not a target: the note, as at the entry.  A call
	 * whose entry saw its process a target just before user space changed
	 * the set, before the bump, may be missed here: a change of targets
	 * takes effect within a call.
	 */
	if (ctl->filter_pids && not_target_noted(ctl, regs))
		return 0;
	task = bpf_get_current_task_btf();
	start = bpf_task_storage_get(&syscall_start, task, NULL, 0);
	/* exit and exit_group never return; execve returns in a new image (counted). */
	if (!start || !start->enter_ns || start->nr != (__u64)SYSCALL_NR(regs))
		return 0;
	return syscall_count(ctx, ctl, task, start, ret);
}

/* Any fork: a new task may have a dead task's kernel stack, so every not_target note is stale. */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(syscall_fork, struct task_struct *parent, struct task_struct *child)
{
	__sync_fetch_and_add(&fork_gen, 1);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
