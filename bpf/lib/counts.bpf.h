/* SPDX-License-Identifier: GPL-2.0 */
/* Counting: the double-buffered counts maps, the totals map and record_event(), the one way an event is counted. */
#ifndef LIB_COUNTS_BPF_H
#define LIB_COUNTS_BPF_H

#include "lib/control.bpf.h"

#if !defined(COUNTS_VALUE) || !defined(COUNTS_VALUE_ADD)
#error "define COUNTS_VALUE (the value struct) and COUNTS_VALUE_ADD(slot, delta) first"
#endif
/* What one event adds; a kind with a big value (a histogram) passes something smaller. */
#ifndef COUNTS_DELTA
#define COUNTS_DELTA COUNTS_VALUE
#endif

/*
 * Double-buffered aggregation (define COUNTS_VALUE to the value struct before
 * including this header).  The programs write into whichever counts map
 * the one-slot ARRAY_OF_MAPS `active_counts` holds.  To snapshot, user space
 * swaps the other (empty) map into the slot: the kernel answers that update
 * only after synchronize_rcu() (maybe_wait_bpf_programs() in
 * kernel/bpf/syscall.c), so when the syscall returns no program can still be
 * writing into the old map.  User space then drains the old map at leisure
 * with no writer racing it: no sample that arrives during a snapshot is lost or
 * counted twice.
 */
struct counts_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);	/* resized by the loader */
	__type(key, struct sample_key);
	__type(value, COUNTS_VALUE);
} counts_0 SEC(".maps"), counts_1 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, struct counts_map);
} active_counts SEC(".maps") = { .values = { &counts_0 } };

/*
 * Cumulative counts, never drained: filled only while control.keep_totals is
 * set (a pinned daemon), so that `cat` on a pinned iterator and bpftool see
 * the aggregate since start however often the loader drains the live map.
 */
struct counts_map totals SEC(".maps");

static __always_inline void *live_counts(void)
{
	__u32 zero = 0;
	void *counts = bpf_map_lookup_elem(&active_counts, &zero);

	if (!counts)
		stat_inc(STAT_NO_COUNTS_MAP);
	return counts;
}

/*
 * Returns the value slot for @key in @counts, inserting a zeroed one when it
 * is new; NULL (counted as @full_stat) when the map is full.
 */
static __always_inline void *counts_slot(void *counts, const struct sample_key *key,
					 const void *zero_value, __u32 full_stat)
{
	void *slot;
	/*
	 * int, not long: before 6.4 ("bpf: return long from bpf_map_ops funcs") the
	 * inlined map op returned int, so -EEXIST arrived as 0xffffffef with the upper
	 * half zero and never equalled a long -EEXIST (seen on 6.1).
	 */
	int err;

	if (!counts)
		return NULL;
	slot = bpf_map_lookup_elem(counts, key);
	if (slot)
		return slot;
	err = bpf_map_update_elem(counts, key, zero_value, BPF_NOEXIST);
	if (err && err != -EEXIST) {
		stat_inc(err == -E2BIG || err == -ENOMEM ? full_stat : STAT_OTHER);
		return NULL;
	}
	slot = bpf_map_lookup_elem(counts, key);
	if (!slot)
		stat_inc(STAT_OTHER);
	return slot;
}

/*
 * The one way an event is counted: @delta is added (COUNTS_VALUE_ADD) to
 * @key's slot in the live generation and, for a pinned daemon, in the totals.
 */
static __always_inline void record_event(const struct aperture_control *ctl,
					 const struct sample_key *key, const COUNTS_DELTA *delta)
{
	static const COUNTS_VALUE zero_value;
	COUNTS_VALUE *slot;

	stat_inc(STAT_EVENTS);
	slot = counts_slot(live_counts(), key, &zero_value, STAT_COUNTS_FULL);
	if (slot)
		COUNTS_VALUE_ADD(slot, delta);
	if (!ctl->keep_totals)
		return;
	slot = counts_slot(&totals, key, &zero_value, STAT_TOTALS_FULL);
	if (slot)
		COUNTS_VALUE_ADD(slot, delta);
}

#endif /* LIB_COUNTS_BPF_H */
