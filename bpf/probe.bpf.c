// SPDX-License-Identifier: GPL-2.0
/*
 * Feature probes: one tiny program per kernel feature aperture relies on.
 * user/core/kernel_features.c loads each on its own (a bpf_object load is all or
 * nothing), so one refusal says exactly which feature is missing.  Each
 * program exercises its feature the way the real programs do: the
 * sched_switch probe reads the fourth argument (prev_state, 5.18+) as
 * offcpu.bpf.c does.  (The map-element iterator probe loads the real
 * iterator of iter.bpf.c.)
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "lib/syscall.bpf.h"

__u64 probe_hits;

SEC("perf_event")
int probe_perf_event(struct bpf_perf_event_data *ctx)
{
	return 0;
}

SEC("perf_event")
int probe_cookie(struct bpf_perf_event_data *ctx)
{
	return bpf_get_attach_cookie(ctx) != 0;
}

SEC("perf_event")
int probe_ns_pid(struct bpf_perf_event_data *ctx)
{
	struct bpf_pidns_info ns;

	return bpf_get_ns_current_pid_tgid(0, 0, &ns, sizeof(ns)) == 0;
}

/* Refused at load under lockdown=confidentiality (LOCKDOWN_BPF_READ_KERNEL). */
SEC("perf_event")
int probe_read_kernel(struct bpf_perf_event_data *ctx)
{
	__u64 word = 0;

	return bpf_probe_read_kernel(&word, sizeof(word), ctx) == 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(probe_sched_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next, unsigned int prev_state)
{
	return prev_state != 0 && prev->pid != next->pid;
}

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} probe_task_store SEC(".maps");

/* As offcpu.bpf.c keeps its switch-out time. */
SEC("tp_btf/sched_switch")
int BPF_PROG(probe_task_storage, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u64 *slot = bpf_task_storage_get(&probe_task_store, prev, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (slot)
		*slot += 1;
	return 0;
}

/*
 * Hash maps that allocate at insert (BPF_F_NO_PREALLOC) from a perf_event
 * program: 6.1+ (the BPF memory allocator); before, the verifier refuses
 * them ("perf_event programs can only use preallocated hash map").
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} probe_alloc_hash SEC(".maps");

SEC("perf_event")
int probe_hash_alloc(struct bpf_perf_event_data *ctx)
{
	__u32 key = 0;
	__u64 one = 1;

	return bpf_map_update_elem(&probe_alloc_hash, &key, &one, BPF_ANY) == 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(probe_sched_process_exec, struct task_struct *task)
{
	return task->tgid != 0;
}

/* As control.bpf.h's target_fork reads both tasks. */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(probe_sched_process_fork, struct task_struct *parent, struct task_struct *child)
{
	return parent->tgid != child->tgid;
}

SEC("tp_btf/contention_begin")
int BPF_PROG(probe_contention, void *lock, unsigned int flags)
{
	return flags != 0;
}

/* As locks.bpf.c's lock_rq_collect finds a CPU's runqueue: through the current task. */
SEC("raw_tp")
int probe_rq_locks(void *ctx)
{
	struct cfs_rq *cfs_rq = bpf_get_current_task_btf()->se.cfs_rq;

	return cfs_rq && BPF_CORE_READ(cfs_rq, rq) != 0;
}

static long probe_loop_step(__u64 index, void *arg)
{
	*(__u64 *)arg += index;
	return 0;
}

/* A global function with a pointer argument (5.12+), as bpf/lib/kernel.bpf.h's APERTURE_SUBPROG. */
__noinline int probe_subprog(__u64 *sum)
{
	return sum ? *sum != 0 : 0;
}

/*
 * What every program of the 6.1+ build needs (bpf/lib/kernel.bpf.h): a
 * bpf_loop callback, a global function taking a pointer and the current
 * task by BTF.  Where this fails, the build for older kernels is loaded.
 */
SEC("perf_event")
int probe_bpf_loop(struct bpf_perf_event_data *ctx)
{
	__u64 sum = bpf_get_current_task_btf()->pid;

	bpf_loop(4, probe_loop_step, &sum, 0);
	return probe_subprog(&sum);
}

/*
 * What the DWARF walk (bpf/unwind/dwarf.bpf.h) needs: the user registers,
 * bpf_loop and bpf_probe_read_user.  Under lockdown=confidentiality libbpf's
 * own probe of bpf_probe_read_kernel fails, so it rewrites
 * bpf_probe_read_user into the old bpf_probe_read, which lockdown denies:
 * this probe then fails as the walk would, and stacks are frame-pointer walks.
 */
SEC("perf_event")
int probe_dwarf_unwind(struct bpf_perf_event_data *ctx)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	__u64 sum = regs ? regs->sp : 0, word = 0;	/* a direct load, as the walk does */

	bpf_loop(4, probe_loop_step, &sum, 0);
	bpf_probe_read_user(&word, sizeof(word), (const void *)sum);
	return sum + word != 0;
}

/* The raw syscall tracepoints, reading the user registers as syscalls.bpf.c does. */
SEC("tp_btf/sys_enter")
int BPF_PROG(probe_sys_enter, struct pt_regs *regs, long id)
{
	return id == 0 && PT_REGS_PARM3(regs) == 2;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(probe_sys_exit, struct pt_regs *regs, long ret)
{
	return SYSCALL_NR(regs) == 0 && ret == 0;
}

SEC("iter/task")
int probe_iter_task(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;

	if (task)
		BPF_SEQ_PRINTF(ctx->meta->seq, "%d\n", task->pid);
	return 0;
}

/* Attached by the loader to a function of its own (user/core/kernel_features.c). */
SEC("uprobe")
int probe_uprobe(struct pt_regs *ctx)
{
	__sync_fetch_and_add(&probe_hits, 1);
	return 0;
}

/*
 * As locks.bpf.c's --lock-hold programs attach: the lock's address through
 * bpf_get_func_arg() (5.17+), and 0 returned, as the verifier requires of an
 * fentry program (anything else: EINVAL).
 */
SEC("fentry/mutex_unlock")
int BPF_PROG(probe_fentry)
{
	__u64 lock = 0;

	if (bpf_get_func_arg(ctx, 0, &lock) == 0 && lock)
		probe_hits++;
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
