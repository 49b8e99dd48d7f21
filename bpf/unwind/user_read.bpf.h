/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The unwinders' one way to read user memory, allowed only where the loader
 * found bpf_probe_read_user loadable (the dwarf_unwind probe).  Under
 * lockdown=confidentiality libbpf rewrites bpf_probe_read_user into the
 * denied bpf_probe_read, and a program that still holds such a call is
 * refused (EINVAL).  A global function is verified on its own, without its
 * caller's checks, so each read tests the loader's constant itself: the
 * verifier then drops the call where it is 0.
 */
#ifndef UNWIND_USER_READ_BPF_H
#define UNWIND_USER_READ_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

/*
 * Set where bpf_loop and bpf_probe_read_user work (the dwarf_unwind probe):
 * frame-pointer walks are done here rather than by bpf_get_stack(), whose
 * kernel walk goes on through a garbage rbp past the last real frame (glibc's
 * start_thread has none) until a read faults: 5.5 us of a 9.2 us sample
 * against 1.8 us here (bench/unwind.sh, U4).  The DWARF and CPython walks
 * are set only with it.
 */
const volatile __u32 unwind_fp_in_bpf = 0;

/* bpf_probe_read_user where the loader allows it, else -1 (a read that failed). */
static __always_inline long user_read(void *dst, __u32 size, const void *src)
{
	if (!unwind_fp_in_bpf)
		return -1;
	return bpf_probe_read_user(dst, size, src);
}

#endif /* UNWIND_USER_READ_BPF_H */
