// SPDX-License-Identifier: GPL-2.0
/*
 * cfitest FILE...: builds each file's unwind table with the unwinder's own
 * code (user/unwind/cfi.c) and prints one line per file:
 *   FILE <tab> ok fdes=N rows=N work=N sum=HEX ms=N
 *   FILE <tab> error=MESSAGE ms=N
 * sum hashes every row and function start, so that two builds of the same
 * code (with and without .eh_frame_hdr) can be compared.  index= checks the
 * page index (user/unwind/rowindex.c) against a search of all rows at every
 * row's pc, the byte before it and every page's first and last byte:
 *   index=ok slots=N pages=N checked=N   or   index=WRONG pc=HEX want=N got=N
 * For tests/unit/cfi.t.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <gelf.h>
#include "cfi.h"
#include "rowindex.h"

static uint64_t mix(uint64_t h, uint64_t v)
{
	return (h ^ v) * 0x100000001b3ull;	/* FNV-1a over 64-bit words */
}

/* The last row whose pc <= @pc among all @rows, or -1: what the index must agree with. */
static long row_of(const struct unwind_row *rows, size_t nrows, uint64_t pc)
{
	size_t lo = 0, hi = nrows;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (rows[mid].pc <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (long)lo - 1;
}

/* 1 and the first pc @index answers wrongly (in *@bad), or 0; *@checked pcs asked. */
static int index_wrong_at(const struct unwind_row *index, uint32_t nslots, const struct cfi_table *t, uint64_t pc,
			  uint64_t *bad, size_t *checked)
{
	(*checked)++;
	if (rowindex_find(index, nslots, t->rows, (uint32_t)t->nrows, pc) == row_of(t->rows, t->nrows, pc))
		return 0;
	*bad = pc;
	return 1;
}

/* Prints the index= part of the line for @t: 0, or 1 when the index gives a wrong row. */
static int index_check(const struct cfi_table *t)
{
	struct unwind_row *index;
	struct unwind_page_head head = {};
	uint32_t nslots;
	uint64_t bad = 0;
	size_t checked = 0;
	int wrong = 0;

	if (rowindex_build(t->rows, t->nrows, &index, &nslots)) {
		printf(" index=ENOMEM");
		return 1;
	}
	if (nslots)
		memcpy(&head, &index[0], sizeof(head));
	for (size_t i = 0; i < t->nrows && !wrong; i++) {
		wrong |= index_wrong_at(index, nslots, t, t->rows[i].pc, &bad, &checked);
		wrong |= !wrong && t->rows[i].pc && index_wrong_at(index, nslots, t, t->rows[i].pc - 1, &bad, &checked);
	}
	for (uint64_t p = 0; p <= head.npages + 1 && nslots && !wrong; p++) {
		uint64_t start = head.base + (p << head.shift);

		wrong |= index_wrong_at(index, nslots, t, start, &bad, &checked);
		wrong |= !wrong && index_wrong_at(index, nslots, t, start + (1ull << head.shift) - 1, &bad, &checked);
	}
	if (wrong)
		printf(" index=WRONG pc=%" PRIx64 " want=%ld got=%ld", bad, row_of(t->rows, t->nrows, bad),
		       rowindex_find(index, nslots, t->rows, (uint32_t)t->nrows, bad));
	else
		printf(" index=ok slots=%u pages=%u checked=%zu", nslots, head.npages, checked);
	free(index);
	return wrong;
}

static double ms_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (t1.tv_sec - t0->tv_sec) * 1e3 + (t1.tv_nsec - t0->tv_nsec) / 1e6;
}

static int one(const char *path)
{
	struct cfi_table t;
	struct timespec t0;
	uint64_t sum = 0xcbf29ce484222325ull;
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;
	Elf *elf;

	if (fd < 0) {
		printf("%s\terror=%s ms=0\n", path, strerror(errno));
		return 1;
	}
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	err = elf ? cfi_table_build(elf, &t) : -EINVAL;
	if (err) {
		printf("%s\terror=%s ms=%.0f\n", path, strerror(-err), ms_since(&t0));
	} else {
		for (size_t i = 0; i < t.nrows; i++) {
			const struct unwind_row *r = &t.rows[i];

			sum = mix(sum, r->pc);
			sum = mix(sum, ((uint64_t)r->cfa_rule << 32) | (uint32_t)r->cfa_off);
			sum = mix(sum, ((uint64_t)r->rbp_rule << 32) | (uint16_t)r->rbp_off);
		}
		for (size_t i = 0; i < t.nfdes; i++)
			sum = mix(sum, t.fde_starts[i]);
		printf("%s\tok fdes=%zu rows=%zu work=%zu sum=%016" PRIx64 " ms=%.0f fp=%d", path, t.nfdes, t.nrows,
		       t.work, sum, ms_since(&t0), t.fp_frames);
		err = index_check(&t) ? -EDOM : 0;
		printf("\n");
		cfi_table_free(&t);
	}
	elf_end(elf);
	close(fd);
	return err != 0;
}

int main(int argc, char **argv)
{
	int failed = 0;

	elf_version(EV_CURRENT);
	for (int i = 1; i < argc; i++)
		failed |= one(argv[i]);
	return failed;
}
