/* SPDX-License-Identifier: GPL-2.0 */
/*
 * DWARF CFI unwinding tables, shared between the loader (user/unwind/) that
 * builds them from .eh_frame and the BPF walk (bpf/unwind/dwarf.bpf.h).
 *
 * unwind_rows: one big array of rows; each file's rows are a sorted run
 * [first, first + count) in it, shared by every process that maps the file,
 * and before it (index_rows slots) the file's page index: which rows each
 * page of 2^shift bytes of its code starts with, so that a pc's row is
 * searched among a page's few rows, not among all (as the OpenTelemetry
 * profiler pages its stack deltas).
 * unwind_procs: per tgid, its executable mappings sorted by start, each with
 * the run of rows of its file (count 0: no table, walk frame pointers) and
 * the id of the file in unwind_files (0: none), whose path the pinned
 * iterator prints as FILE+0xADDRESS (bpf/iter.bpf.c).
 */
#ifndef UNWIND_TABLES_H
#define UNWIND_TABLES_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* How to find the CFA (the caller's stack pointer) at a pc. */
enum unwind_cfa_rule {
	UNWIND_CFA_NONE = 0,	/* no information (gap between FDEs, unsupported expression): stop */
	UNWIND_CFA_RSP = 1,	/* rsp + cfa_off */
	UNWIND_CFA_RBP = 2,	/* rbp + cfa_off */
	/* The classic PLT expression: rsp + 8, + 8 more when (rip & 15) >= cfa_off. */
	UNWIND_CFA_PLT = 3,
	/* __restore_rt: rsp points at the ucontext; the interrupted registers are in it. */
	UNWIND_CFA_SIGNAL = 4,
	UNWIND_CFA_END = 5,	/* the return address is undefined: the outermost frame (_start, clone) */
};

/* Where the caller's rbp is. */
enum unwind_rbp_rule {
	UNWIND_RBP_SAME = 0,	/* not saved by this frame */
	UNWIND_RBP_OFFSET = 1,	/* saved at CFA + rbp_off */
};

/* One row: its rules hold from pc up to the next row's pc. */
struct unwind_row {
	__u32 pc;		/* ELF virtual address (file-relative: the mapping's bias removed) */
	__s32 cfa_off;
	__s16 rbp_off;
	__u8 cfa_rule;		/* enum unwind_cfa_rule */
	__u8 rbp_rule;		/* enum unwind_rbp_rule */
};

/* Executable mappings per process the walk knows; more are counted and walked with frame pointers. */
#define UNWIND_MAX_MAPPINGS 128

struct unwind_mapping {
	__u64 start;
	__u64 end;
	__u64 bias;		/* pc - bias = the ELF virtual address the rows use */
	__u32 first_row;
	__u32 nrows;		/* 0: no table for this file: frame pointers */
	__u32 file_id;		/* key in unwind_files; 0: no file (anonymous code, a path refused) */
	__u32 index_rows;	/* slots of the page index before first_row; 0: none (search all rows) */
	__u32 flags;		/* UNWIND_MAPPING_ */
	__u32 pad;
};

/*
 * unwind_mapping.flags: its file's rows keep rbp a frame pointer wherever a
 * call can be (user/unwind/cfi.h: cfi_table.fp_frames), so a caller's frame
 * in it (a return address) is stepped by frame pointers without a row search.
 */
#define UNWIND_MAPPING_FP_FRAMES 1

/*
 * A file's page index: a head, then one entry per page (3 to a slot of
 * unwind_rows, sizeof(struct unwind_row) bytes each): entry p is the number
 * of rows whose pc is below the page's start, base + (p << shift), so that
 * the row of a pc in page p is among rows [entry p - 1, entry p + 1) and
 * only [entry p, entry p + 1) needs a search (the row before them covers the
 * page's first bytes).  Entry npages is the row count.
 */
struct unwind_page_head {
	__u32 base;		/* the first row's pc, rounded down to a page */
	__u32 shift;		/* log2 of the page size in bytes */
	__u32 npages;
};

#define UNWIND_PAGE_PER_SLOT 3

struct unwind_page_slot {
	__u32 first[UNWIND_PAGE_PER_SLOT];
};

/* unwind_proc.flags */
#define UNWIND_PROC_PYTHON 1	/* a CPython process: python_procs has its entry */

struct unwind_proc {
	__u32 nmappings;
	__u32 flags;
	/*
	 * When the walk last met a pc in no mapping (a library loaded since) and
	 * asked user space to re-read the maps (rate-limited).
	 */
	__u64 miss_ns;
	struct unwind_mapping mappings[UNWIND_MAX_MAPPINGS];
};

/*
 * unwind_files: what the iterator prints for a file, so that a folded stack
 * names it without the process.  The path is the mapping's (its
 * /proc/PID/map_files link: in the process's mount namespace, " (deleted)"
 * appended for a deleted file), with every byte that could break a folded
 * line or be read two ways ('%', ';', space, control and non-ASCII bytes)
 * written as %XX; a path longer than this once escaped gets no entry.
 */
#define UNWIND_FILE_PATH_MAX 256
#define UNWIND_FILE_BUILD_ID_MAX 48	/* hex, NUL-terminated: 20 bytes (GNU's SHA-1) and more */

struct unwind_file_info {
	char path[UNWIND_FILE_PATH_MAX];
	char build_id[UNWIND_FILE_BUILD_ID_MAX];	/* "" when the file has none */
};

/*
 * A frame the walk put where unwinding stopped before the end of the stack
 * (no table row, an unreadable stack, the depth limit): user space shows it
 * as "[truncated]"; no frame is ever made up.
 */
#define APERTURE_IP_TRUNCATED 0xfffffffffffffffeULL
/*
 * The outermost frame of a stack walked by frame pointers because DWARF
 * unwinding is on but the process's tables were not built yet (its first
 * samples): user space shows "[before-unwind-tables]", so that nobody takes
 * such a walk of code without frame pointers for a whole stack.
 */
#define APERTURE_IP_NO_TABLES 0xfffffffffffffffcULL

_Static_assert(sizeof(struct unwind_row) == 12, "unwind_row layout");
_Static_assert(sizeof(struct unwind_mapping) == 48, "unwind_mapping layout");
_Static_assert(sizeof(struct unwind_page_head) == sizeof(struct unwind_row), "a page head fills a row slot");
_Static_assert(sizeof(struct unwind_page_slot) == sizeof(struct unwind_row), "page entries fill a row slot");
_Static_assert(sizeof(struct unwind_file_info) == 304, "unwind_file_info layout");

#endif /* UNWIND_TABLES_H */
