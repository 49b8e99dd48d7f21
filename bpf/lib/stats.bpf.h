/* SPDX-License-Identifier: GPL-2.0 */
/* Per-CPU loss and activity counters (enum aperture_stat). */
#ifndef LIB_STATS_BPF_H
#define LIB_STATS_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "aperture.h"

#ifndef E2BIG
#define E2BIG 7
#endif
#ifndef ENOMEM
#define ENOMEM 12
#endif
#ifndef EEXIST
#define EEXIST 17
#endif

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

static __always_inline void stat_inc(__u32 idx)
{
	__u64 *slot = bpf_map_lookup_elem(&stats, &idx);

	if (slot)
		*slot += 1;	/* per-CPU slot: no atomic needed */
}

static __always_inline void stat_add(__u32 idx, __u64 n)
{
	__u64 *slot = bpf_map_lookup_elem(&stats, &idx);

	if (slot)
		*slot += n;
}

#endif /* LIB_STATS_BPF_H */
