/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What this kernel lets aperture do, probed once (each feature on first use)
 * by loading a tiny program of bpf/probe.bpf.c or by calling the syscall.
 * Every profiler, the pinning code and `aperture doctor` consult this one
 * table, so that an optional part missing degrades with one clear line and a
 * required one stops with one naming it.
 */
#ifndef KERNEL_FEATURES_H
#define KERNEL_FEATURES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum feature {
	FEAT_BTF,		/* /sys/kernel/btf/vmlinux: CO-RE and tp_btf */
	FEAT_PERF_EVENT_OPEN,	/* a software cpu-clock perf event per CPU */
	FEAT_PROG_PERF_EVENT,	/* BPF programs on perf events */
	FEAT_TP_SCHED_SWITCH,	/* tp_btf/sched_switch with prev_state (5.18+) */
	FEAT_TASK_STORAGE,	/* BPF task storage from tp_btf (5.11+) */
	FEAT_TP_SCHED_EXEC,	/* tp_btf/sched_process_exec */
	FEAT_RINGBUF,		/* BPF ring buffer */
	FEAT_BATCH_OPS,		/* lookup_and_delete_batch on hash maps */
	FEAT_ITER_TASK,		/* iter/task */
	FEAT_ITER_MAP_ELEM,	/* iter/bpf_map_elem */
	FEAT_COOKIE,		/* bpf_get_attach_cookie */
	FEAT_NS_PID,		/* bpf_get_ns_current_pid_tgid */
	FEAT_PROBE_READ_KERNEL,	/* bpf_probe_read_kernel (lockdown=confidentiality denies it) */
	FEAT_UPROBE,		/* uprobes through the uprobe PMU */
	FEAT_TP_CONTENTION,	/* tp_btf/contention_begin and _end (lock profiler) */
	FEAT_TP_SYS_ENTER,	/* tp_btf/sys_enter (raw syscalls) */
	FEAT_TP_SYS_EXIT,	/* tp_btf/sys_exit */
	FEAT_BPFFS,		/* bpffs mounted, or mountable */
	FEAT_TRACEFS,		/* tracefs mounted, or mountable */
	FEAT_FENTRY,		/* fentry programs (BPF trampolines), loaded and attached */
	FEAT_DWARF_UNWIND,	/* bpf_loop and bpf_task_pt_regs in perf_event programs (--unwind dwarf) */
	FEAT_RQ_LOCKS,		/* task->se.cfs_rq->rq from raw_tp: runqueue lock names */
	FEAT_TP_SCHED_FORK,	/* tp_btf/sched_process_fork: children of targets followed */
	FEAT_OPENAT2,		/* openat2 RESOLVE_IN_ROOT: a process's files opened inside its root (5.6+) */
	FEAT_HASH_ALLOC,	/* hash maps without preallocation in perf_event programs (6.1+) */
	FEAT_KSYM_NAMES,	/* kernel frames named by the kernel (%pS in a test-run program, 5.13+) */
	FEAT_BPF_LOOP,		/* bpf_loop, global functions with pointers, task by BTF: the 6.1+ build */
	FEAT_PERF_LINK,		/* BPF links of perf events (5.15+): pinnable on-CPU programs */
	FEAT_MAX,
};

#define FEAT_BIT(f) (1ull << (f))

struct feature_result {
	bool probed;
	bool ok;
	int err;		/* positive errno when !ok (0: switched off by the environment) */
	const char *step;	/* what failed: "load", "attach", ... */
	const char *note;	/* more, when there is: "/sys/fs/bpf" (where it is mounted) */
};

/* "iter_map_elem": the name doctor, --json and APERTURE_DISABLE_FEATURES use. */
const char *feature_name(enum feature f);
/* One line on what it is, for doctor. */
const char *feature_what(enum feature f);
/* Probes @f the first time it is asked; true when the kernel has it. */
bool feature_has(enum feature f);
/* Whether APERTURE_DISABLE_FEATURES names @f (for what is tried at first use, not probed ahead). */
bool feature_switched_off(enum feature f);
const struct feature_result *feature_get(enum feature f);
/* Probes every feature in @mask (FEAT_BIT()s), the common case in one load. */
void features_probe(uint64_t mask);
/* Why @f is missing, "EPERM at load", in @buf. */
const char *feature_why(enum feature f, char *buf, size_t len);
/* The same with its name, "iter_map_elem: EPERM at load", for messages about what it disables. */
const char *feature_missing(enum feature f, char *buf, size_t len);
/*
 * Checks every feature in @mask; for each one missing prints
 * "WHO: this kernel lacks FEATURE (WHY)" and returns false.
 */
bool features_require(const char *who, uint64_t mask);

#endif /* KERNEL_FEATURES_H */
