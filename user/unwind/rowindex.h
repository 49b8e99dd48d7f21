/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The page index of one file's rows (bpf/include/unwind_tables.h): built
 * here, written before the rows, read by the BPF walk to search a pc's row
 * among one page's rows instead of all the file's.
 */
#ifndef UNWIND_ROWINDEX_H
#define UNWIND_ROWINDEX_H

#include <stddef.h>
#include <stdint.h>
#include "unwind_tables.h"

/* Files with fewer rows get no index: a search of them is as short. */
#define ROWINDEX_MIN_ROWS 16
/* Pages are sized so that they hold this many rows on average (the search: about 2 steps). */
#define ROWINDEX_ROWS_PER_PAGE 4

/*
 * The index of @rows (@nrows, sorted by pc) as slots of unwind_rows into a
 * malloc'd *@slots (a head, then the entries) and their count *@nslots: 0;
 * 0 with no slots for a file too small to need one; -ENOMEM.
 */
int rowindex_build(const struct unwind_row *rows, size_t nrows, struct unwind_row **slots, uint32_t *nslots);

/*
 * What the BPF walk finds with the index: the position in @rows of the last
 * row whose pc <= @pc, or -1.  For the tests: the walk's search, on arrays.
 */
long rowindex_find(const struct unwind_row *slots, uint32_t nslots, const struct unwind_row *rows, uint32_t nrows,
		   uint64_t pc);

#endif /* UNWIND_ROWINDEX_H */
