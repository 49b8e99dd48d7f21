// SPDX-License-Identifier: GPL-2.0
/*
 * Kernel addresses named by the kernel: the loader (user/symbolize/kernel_names.c)
 * writes up to KSYM_BATCH addresses into ksym_addrs and runs ksym_name with
 * BPF_PROG_TEST_RUN; each comes back as %pS prints it, "func+0xOFF/0xSIZE"
 * (" [module]" after a module's), in ksym_text.  Never attached.
 *
 * Why: reading /proc/kallsyms whole (~120k lines formatted by the kernel, a
 * table of ~5 MiB built) was a third of a short record's CPU; the kernel's own
 * lookup costs a few microseconds an address and no table.  No CO-RE and no
 * vmlinux types here, so libbpf does not parse the kernel's BTF to load this.
 */
#include <linux/types.h>
#include <bpf/bpf_helpers.h>
#include "ksym.h"

__u64 ksym_addrs[KSYM_BATCH];
__u32 ksym_count;
__s32 ksym_len[KSYM_BATCH];
char ksym_text[KSYM_BATCH][KSYM_TEXT];

SEC("raw_tp")
int ksym_name(void *ctx)
{
	__u32 n = ksym_count;

	for (__u32 i = 0; i < KSYM_BATCH && i < n; i++) {
		__u64 args[1] = { ksym_addrs[i] };

		/* The length %pS wanted, its NUL included: > KSYM_TEXT means cut. */
		ksym_len[i] = bpf_snprintf(ksym_text[i], KSYM_TEXT, "%pS", args, sizeof(args));
	}
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
