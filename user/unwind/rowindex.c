// SPDX-License-Identifier: GPL-2.0
/*
 * Builds the page index of one file's rows: per page of 2^shift bytes of
 * code, how many rows start below it, the shift chosen so that a page holds
 * ROWINDEX_ROWS_PER_PAGE rows on average (an index of about a twelfth of
 * the rows' size).  rowindex_find() is the BPF walk's lookup on arrays, for
 * the tests.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "rowindex.h"

/* The smallest page shift whose index has at most nrows / ROWINDEX_ROWS_PER_PAGE pages. */
static uint32_t page_shift(uint32_t span, size_t nrows)
{
	uint64_t want = nrows / ROWINDEX_ROWS_PER_PAGE;
	uint32_t shift = 4;

	while (shift < 31 && ((uint64_t)span >> shift) + 1 > want)
		shift++;
	return shift;
}

static void slot_entry_set(struct unwind_row *slots, uint32_t p, uint32_t value)
{
	struct unwind_page_slot slot;

	memcpy(&slot, &slots[1 + p / UNWIND_PAGE_PER_SLOT], sizeof(slot));
	slot.first[p % UNWIND_PAGE_PER_SLOT] = value;
	memcpy(&slots[1 + p / UNWIND_PAGE_PER_SLOT], &slot, sizeof(slot));
}

static uint32_t slot_entry(const struct unwind_row *slots, uint32_t p)
{
	struct unwind_page_slot slot;

	memcpy(&slot, &slots[1 + p / UNWIND_PAGE_PER_SLOT], sizeof(slot));
	return slot.first[p % UNWIND_PAGE_PER_SLOT];
}

int rowindex_build(const struct unwind_row *rows, size_t nrows, struct unwind_row **slots, uint32_t *nslots)
{
	struct unwind_page_head head;
	struct unwind_row *out;
	uint32_t span, n;
	size_t r = 0;

	*slots = NULL;
	*nslots = 0;
	if (nrows < ROWINDEX_MIN_ROWS || nrows > UINT32_MAX)
		return 0;
	head.shift = page_shift(rows[nrows - 1].pc - (rows[0].pc & ~0xfu), nrows);
	head.base = rows[0].pc & ~(uint32_t)((1ull << head.shift) - 1);
	span = rows[nrows - 1].pc - head.base;
	head.npages = (span >> head.shift) + 1;
	n = 1 + (head.npages + 1 + UNWIND_PAGE_PER_SLOT - 1) / UNWIND_PAGE_PER_SLOT;
	out = calloc(n, sizeof(*out));
	if (!out)
		return -ENOMEM;
	memcpy(&out[0], &head, sizeof(head));
	for (uint32_t p = 0; p < head.npages; p++) {
		uint64_t start = head.base + ((uint64_t)p << head.shift);

		while (r < nrows && rows[r].pc < start)
			r++;
		slot_entry_set(out, p, (uint32_t)r);
	}
	slot_entry_set(out, head.npages, (uint32_t)nrows);
	*slots = out;
	*nslots = n;
	return 0;
}

long rowindex_find(const struct unwind_row *slots, uint32_t nslots, const struct unwind_row *rows, uint32_t nrows,
		   uint64_t pc)
{
	struct unwind_page_head head;
	uint32_t lo = 0, hi = nrows, p;

	if (nslots >= 2) {
		memcpy(&head, &slots[0], sizeof(head));
		if (pc < head.base)
			return -1;
		p = (uint32_t)((pc - head.base) >> (head.shift & 63));
		if ((uint64_t)(pc - head.base) >> (head.shift & 63) > head.npages)
			p = head.npages;
		lo = slot_entry(slots, p);
		hi = p < head.npages ? slot_entry(slots, p + 1) : nrows;
		if (hi > nrows)
			hi = nrows;
		if (lo > hi)
			lo = hi;
	}
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (rows[mid].pc <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (long)lo - 1;
}
