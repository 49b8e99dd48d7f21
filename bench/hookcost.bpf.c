// SPDX-License-Identifier: GPL-2.0
/*
 * Bench-only empty programs on sched_switch (--locks and --offcpu both have
 * one there) and sys_enter / sys_exit (the syscall path, for comparison), for
 * bench/hookcost.sh: what one more program on a hook costs, that is what a
 * shared dispatcher (one program per hook calling each kind) could save at
 * most.  Each program only keeps a per-CPU run count, so that it is not
 * optimized away and its runs can be checked.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 10);
	__type(key, __u32);
	__type(value, __u64);
} runs SEC(".maps");

static __always_inline int ran(__u32 slot)
{
	__u64 *count = bpf_map_lookup_elem(&runs, &slot);

	if (count)
		(*count)++;
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(switch0) { return ran(0); }
SEC("tp_btf/sched_switch")
int BPF_PROG(switch1) { return ran(1); }
SEC("tp_btf/sched_switch")
int BPF_PROG(switch2) { return ran(2); }
SEC("tp_btf/sys_enter")
int BPF_PROG(enter0) { return ran(4); }
SEC("tp_btf/sys_enter")
int BPF_PROG(enter1) { return ran(5); }
SEC("tp_btf/sys_enter")
int BPF_PROG(enter2) { return ran(6); }
SEC("tp_btf/sys_exit")
int BPF_PROG(exit0) { return ran(7); }
/*
 * The same pair on the classic tracepoints (syscount's hooks): the kernel
 * fills a trace record for them before the program runs, which bpf_stats
 * does not count.
 */
SEC("tracepoint/raw_syscalls/sys_enter")
int tpenter0(void *ctx) { return ran(8); }
SEC("tracepoint/raw_syscalls/sys_exit")
int tpexit0(void *ctx) { return ran(9); }

char LICENSE[] SEC("license") = "GPL";
