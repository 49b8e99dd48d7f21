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
 * CFITEST_LIBDW=1 also checks every row against libdw's frame at its pc
 * (libdw=ok checked=N, or libdw=WRONG pc=HEX want=.. got=..): the table as
 * libdw reads the CFI, address by address (slow: n^2/2 a function).
 * CFITEST_ROWS=1 also writes every row to stderr ("pc cfa_rule cfa_off
 * rbp_rule rbp_off", hex pc), so that two builds' tables can be compared.
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
#include <dwarf.h>
#include <elfutils/libdw.h>
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

/*
 * ---- libdw's answer, row by row ----
 * What the table builder did until session 17 (dwarf_cfi_addrframe at each
 * address, libdw's rules read back): kept here as the reference the
 * one-pass interpreter (user/unwind/cfaprog.c) must agree with.
 */
#define X86_64_RBP 6
#define X86_64_RSP 7
#define X86_64_RA 16	/* the return address column */

/* The PLT's CFA: rsp + 8 + ((rip & 15) >= N) << 3, N 11 (.plt) or 10 (older .plt.got). */
static const uint8_t plt_atoms[] = {
	DW_OP_breg7, DW_OP_breg16, DW_OP_lit15, DW_OP_and, 0 /* lit N */, DW_OP_ge,
	DW_OP_lit3, DW_OP_shl, DW_OP_plus,
};

static bool ops_is_plt(const Dwarf_Op *ops, size_t nops, int32_t *threshold)
{
	if (nops != sizeof(plt_atoms) || ops[0].number != 8 || ops[1].number != 0)
		return false;
	for (size_t i = 0; i < nops; i++)
		if (i != 4 && ops[i].atom != plt_atoms[i])
			return false;
	if (ops[4].atom < DW_OP_lit0 || ops[4].atom > DW_OP_lit31)
		return false;
	*threshold = ops[4].atom - DW_OP_lit0;
	return true;
}

/* glibc's __restore_rt: CFA = *(rsp + 160), the saved rsp in the ucontext on the stack. */
static bool ops_is_sigframe(const Dwarf_Op *ops, size_t nops)
{
	return nops == 2 && ops[0].atom == DW_OP_breg7 && ops[0].number == 160 &&
	       ops[1].atom == DW_OP_deref;
}

/* A register plus a constant, as libdw spells DW_CFA_def_cfa: bregN or bregx. */
static bool ops_reg_offset(const Dwarf_Op *ops, size_t nops, int *reg, int64_t *off)
{
	if (nops != 1)
		return false;
	if (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31) {
		*reg = ops[0].atom - DW_OP_breg0;
		*off = (int64_t)ops[0].number;
		return true;
	}
	if (ops[0].atom == DW_OP_bregx) {
		*reg = (int)ops[0].number;
		*off = (int64_t)ops[0].number2;
		return true;
	}
	return false;
}

static void libdw_row_cfa(Dwarf_Frame *frame, bool signal, struct unwind_row *row)
{
	Dwarf_Op *ops;
	size_t nops;
	int64_t off;
	int32_t threshold;
	int reg;

	row->cfa_rule = UNWIND_CFA_NONE;
	if (dwarf_frame_cfa(frame, &ops, &nops) || !nops)
		return;
	if (ops_reg_offset(ops, nops, &reg, &off) && (reg == X86_64_RSP || reg == X86_64_RBP) &&
	    off >= INT32_MIN && off <= INT32_MAX) {
		row->cfa_rule = reg == X86_64_RSP ? UNWIND_CFA_RSP : UNWIND_CFA_RBP;
		row->cfa_off = (int32_t)off;
	} else if (ops_is_plt(ops, nops, &threshold)) {
		row->cfa_rule = UNWIND_CFA_PLT;
		row->cfa_off = threshold;
	} else if (signal && ops_is_sigframe(ops, nops)) {
		row->cfa_rule = UNWIND_CFA_SIGNAL;
	}
}

/*
 * Where a register was saved, as "CFA + offset": libdw spells it
 * DW_OP_call_frame_cfa [DW_OP_plus_uconst N].  1: saved there, 0: same value
 * (not saved), -1: undefined or a rule the walk does not follow.
 */
static int libdw_saved_at(Dwarf_Frame *frame, int regno, int64_t *off)
{
	Dwarf_Op mem[3], *ops;
	size_t nops;

	if (dwarf_frame_register(frame, regno, mem, &ops, &nops))
		return -1;
	if (!nops)
		return ops ? -1 : 0;	/* ops == mem: undefined; NULL: same value */
	if (ops[0].atom != DW_OP_call_frame_cfa)
		return -1;
	if (nops == 1) {
		*off = 0;
		return 1;
	}
	if (nops == 2 && ops[1].atom == DW_OP_plus_uconst) {
		*off = (int64_t)ops[1].number;
		return 1;
	}
	return -1;
}

/* The rules of one row from libdw's frame state. */
static void libdw_row_from_frame(Dwarf_Frame *frame, bool signal, struct unwind_row *row, size_t *unsupported)
{
	int64_t off;
	int ra = libdw_saved_at(frame, X86_64_RA, &off);

	libdw_row_cfa(frame, signal, row);
	row->rbp_rule = UNWIND_RBP_SAME;
	row->rbp_off = 0;
	if (row->cfa_rule == UNWIND_CFA_SIGNAL)
		return;	/* the walk reads every register from the ucontext */
	if (ra == -1) {
		Dwarf_Op mem[3], *ops;
		size_t nops;

		/* An undefined return address marks the outermost frame. */
		if (!dwarf_frame_register(frame, X86_64_RA, mem, &ops, &nops) && !nops && ops)
			row->cfa_rule = UNWIND_CFA_END;
		else
			row->cfa_rule = UNWIND_CFA_NONE;
	} else if (ra != 1 || off != -8) {
		row->cfa_rule = UNWIND_CFA_NONE;
	}
	if (row->cfa_rule == UNWIND_CFA_NONE) {
		(*unsupported)++;
		return;
	}
	if (libdw_saved_at(frame, X86_64_RBP, &off) == 1 && off >= INT16_MIN && off <= INT16_MAX) {
		row->rbp_rule = UNWIND_RBP_OFFSET;
		row->rbp_off = (int16_t)off;
	}
}


/*
 * libdw= checks every row the table has against libdw's frame at its pc
 * (rows at the entry point and gap rows, which the builder makes itself,
 * are left out): libdw=ok checked=N, or libdw=WRONG pc=HEX.
 */
static int libdw_check(Elf *elf, const struct cfi_table *t)
{
	Dwarf_CFI *cfi = dwarf_getcfi_elf(elf);
	GElf_Ehdr ehdr;
	uint64_t entry = gelf_getehdr(elf, &ehdr) ? ehdr.e_entry : 0;
	size_t checked = 0, unsupported = 0;

	if (!cfi) {
		printf(" libdw=none");
		return 0;
	}
	for (size_t i = 0; i < t->nrows; i++) {
		const struct unwind_row *r = &t->rows[i];
		struct unwind_row want = { 0 };
		Dwarf_Frame *frame;
		Dwarf_Addr lo, hi;
		bool signal = false;

		if (r->pc == entry || dwarf_cfi_addrframe(cfi, r->pc, &frame))
			continue;
		dwarf_frame_info(frame, &lo, &hi, &signal);
		libdw_row_from_frame(frame, signal, &want, &unsupported);
		free(frame);
		if (r->cfa_rule == UNWIND_CFA_NONE && want.cfa_rule == UNWIND_CFA_NONE)
			continue;	/* a gap and an unsupported rule read the same */
		if (want.cfa_rule != r->cfa_rule || want.cfa_off != r->cfa_off || want.rbp_rule != r->rbp_rule ||
		    want.rbp_off != r->rbp_off) {
			printf(" libdw=WRONG pc=%" PRIx32 " want=%d/%d/%d/%d got=%d/%d/%d/%d", r->pc, want.cfa_rule,
			       want.cfa_off, want.rbp_rule, want.rbp_off, r->cfa_rule, r->cfa_off, r->rbp_rule,
			       r->rbp_off);
			dwarf_cfi_end(cfi);
			return 1;
		}
		checked++;
	}
	dwarf_cfi_end(cfi);
	printf(" libdw=ok checked=%zu", checked);
	return 0;
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
		for (size_t i = 0; getenv("CFITEST_ROWS") && i < t.nrows; i++)	/* one line a row, to compare */
			fprintf(stderr, "%" PRIx32 " %d %d %d %d\n", t.rows[i].pc, t.rows[i].cfa_rule, t.rows[i].cfa_off,
				t.rows[i].rbp_rule, t.rows[i].rbp_off);
		printf("%s\tok fdes=%zu rows=%zu work=%zu sum=%016" PRIx64 " ms=%.0f fp=%d", path, t.nfdes, t.nrows,
		       t.work, sum, ms_since(&t0), t.fp_frames);
		err = index_check(&t) ? -EDOM : 0;
		if (!err && getenv("CFITEST_LIBDW") && libdw_check(elf, &t))
			err = -EDOM;
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
