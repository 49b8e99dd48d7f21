// SPDX-License-Identifier: GPL-2.0
/* The on-CPU profiler built for kernels without bpf_loop (5.10-5.16): lib/kernel.bpf.h. */
#define APERTURE_COMPAT 1
#include "oncpu.bpf.c"
