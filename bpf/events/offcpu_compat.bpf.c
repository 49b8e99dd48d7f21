// SPDX-License-Identifier: GPL-2.0
/* The off-CPU profiler built for kernels without bpf_loop, sched_switch's prev_state or task storage (5.10-5.17): lib/kernel.bpf.h. */
#define APERTURE_COMPAT 1
#include "offcpu.bpf.c"
