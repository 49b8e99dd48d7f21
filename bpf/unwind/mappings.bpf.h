/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Each process's executable mappings, as the loader (user/unwind/) writes
 * them: the DWARF walk (dwarf.bpf.h) finds a pc's table in them, the pinned
 * iterator (iter.bpf.c) a frame's file.
 */
#ifndef UNWIND_MAPPINGS_BPF_H
#define UNWIND_MAPPINGS_BPF_H

#include "unwind_tables.h"
#include "lib/kernel.bpf.h"

/* Sized by the loader (1 entry each when dwarf unwinding is off). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct unwind_proc);
} unwind_procs SEC(".maps");

/* File id (unwind_mapping.file_id) -> its path and build id. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct unwind_file_info);
} unwind_files SEC(".maps");

/* ceil(log2(n + 1)) steps of the search below. */
#define UNWIND_MAPPING_STEPS 8		/* UNWIND_MAX_MAPPINGS 128 */

/*
 * A global function: the verifier checks it once on its own, instead of
 * every path through it times every path of the caller.  Its step takes no
 * branch on which half to keep: with `if (addr < start) hi = mid; else lo =
 * mid + 1`, each of the 8 steps doubled the states the verifier walked (it
 * tracks lo and hi exactly, as they index the mappings): 6946 instructions
 * for this function alone, against 863 so.
 */

/* Index of the mapping of @proc holding @addr, or -1. */
APERTURE_SUBPROG int unwind_mapping_index(struct unwind_proc *proc, __u64 addr)
{
	__u32 lo = 0, hi, below;

	if (!proc)
		return -1;
	hi = proc->nmappings;
	if (hi > UNWIND_MAX_MAPPINGS)
		hi = UNWIND_MAX_MAPPINGS;
	for (int i = 0; i < UNWIND_MAPPING_STEPS && lo < hi; i++) {
		__u32 mid = ((lo + hi) / 2) & (UNWIND_MAX_MAPPINGS - 1);
		struct unwind_mapping *m = &proc->mappings[mid];

		if (addr >= m->start && addr < m->end)
			return mid;
		/*
		 * 0xffffffff when @addr is below the mapping (then hi = mid),
		 * else 0 (lo = mid + 1): user addresses are below 2^63, so the
		 * difference's sign says which (an address above 2^63 is in no
		 * mapping and ends as -1 whichever way it goes).
		 */
		below = -(__u32)((addr - m->start) >> 63);
		barrier_var(below);	/* kept as arithmetic, not turned back into a branch */
		hi -= (hi - mid) & below;
		lo += (mid + 1 - lo) & ~below;
	}
	return -1;
}

/*
 * Whether a mapping of @proc overlaps [@addr, @addr + @len): the last one
 * that starts below the range's end, if any, ends above its start (they are
 * sorted and apart).  The search's half chosen by arithmetic, as above.
 */
APERTURE_SUBPROG int unwind_range_mapped(struct unwind_proc *proc, __u64 addr, __u64 len)
{
	__u32 lo = 0, hi, below;
	__u64 last = addr + len - 1;

	if (!proc || !len)
		return 0;
	hi = proc->nmappings;
	if (hi > UNWIND_MAX_MAPPINGS)
		hi = UNWIND_MAX_MAPPINGS;
	/* lo ends as the number of mappings that start at or below @last */
	for (int i = 0; i < UNWIND_MAPPING_STEPS && lo < hi; i++) {
		__u32 mid = ((lo + hi) / 2) & (UNWIND_MAX_MAPPINGS - 1);

		below = -(__u32)((last - proc->mappings[mid].start) >> 63);	/* ~0: starts above @last */
		barrier_var(below);
		hi -= (hi - mid) & below;
		lo += (mid + 1 - lo) & ~below;
	}
	if (!lo)
		return 0;
	return proc->mappings[(lo - 1) & (UNWIND_MAX_MAPPINGS - 1)].end > addr;
}

#endif /* UNWIND_MAPPINGS_BPF_H */
