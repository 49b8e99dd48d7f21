// SPDX-License-Identifier: GPL-2.0
/*
 * .eh_frame -> unwind rows.  This file lists the functions (from
 * .eh_frame_hdr's sorted table, which every linker writes for x86_64
 * binaries, or from the entries themselves) and makes one table of their
 * rows: each FDE's rows from cfaprog.c (its CFA program run once), a gap
 * row where a function's rows end before the next, the entry point as the
 * outermost frame, and whether every call site keeps frame pointers.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <dwarf.h>
#include <gelf.h>
#include "cfaprog.h"
#include "cfi.h"
#include "util.h"

static bool rows_alike(const struct unwind_row *a, const struct unwind_row *b)
{
	return a->cfa_rule == b->cfa_rule && a->cfa_off == b->cfa_off && a->rbp_rule == b->rbp_rule &&
	       a->rbp_off == b->rbp_off;
}

static int row_push(struct cfi_table *t, size_t *cap, uint64_t pc, const struct unwind_row *rules)
{
	if (pc > UINT32_MAX)
		return -ERANGE;
	if (t->nrows && rows_alike(&t->rows[t->nrows - 1], rules))
		return 0;	/* the same rules continue: one row covers both */
	if (t->nrows && t->rows[t->nrows - 1].pc == pc) {
		t->rows[t->nrows - 1] = *rules;	/* an empty range: the later rules win */
		t->rows[t->nrows - 1].pc = (uint32_t)pc;
		return 0;
	}
	if (array_reserve((void **)&t->rows, cap, t->nrows, sizeof(*t->rows), 1024))
		return -ENOMEM;
	t->rows[t->nrows] = *rules;
	t->rows[t->nrows++].pc = (uint32_t)pc;
	return 0;
}

/* cfa_fde_rows' sink: each row into the table. */
struct row_sink {
	struct cfi_table *t;
	size_t *cap;
	int rows;
};

static int sink_row(void *ctx, uint64_t pc, const struct unwind_row *row)
{
	struct row_sink *sink = ctx;

	sink->rows++;
	return sink->t ? row_push(sink->t, sink->cap, pc, row) : 0;
}

/*
 * The rows of the FDE holding @start, from @start up to @limit (the next
 * function) and CFI_MAX_FUNCTION_ROWS: into @t, or only counted when @t is
 * NULL.  *@stopped: where they stopped.
 */
static int fde_rows(const struct cfa_index *ix, struct cfi_table *t, size_t *cap, uint64_t start,
		    uint64_t limit, size_t *work, size_t *unsupported, struct row_sink *sink, uint64_t *stopped)
{
	const struct cfa_fde *fde = cfa_fde_at(ix, start);
	struct cfa_walk w = {
		.start = start, .limit = limit, .max_rows = CFI_MAX_FUNCTION_ROWS, .work = work,
		.max_work = CFI_MAX_FILE_WORK, .unsupported = unsupported, .fn = sink_row, .ctx = sink,
	};

	*sink = (struct row_sink){ .t = t, .cap = cap };
	*stopped = start;
	return fde ? cfa_fde_rows(ix, fde, &w, stopped) : 0;
}

/* Rows of the function starting at @start, up to @limit and CFI_MAX_FUNCTION_ROWS, then a gap row. */
static int rows_of_function(const struct cfa_index *ix, uint64_t start, uint64_t limit, struct cfi_table *t,
			    size_t *cap)
{
	static const struct unwind_row gap = { .cfa_rule = UNWIND_CFA_NONE };
	struct row_sink sink;
	uint64_t addr;
	int err = fde_rows(ix, t, cap, start, limit, &t->work, &t->unsupported, &sink, &addr);

	if (!err && addr < limit)
		err = row_push(t, cap, addr, &gap);
	return err;
}

/*
 * The entry point (_start, of a program or of ld.so) is the outermost frame
 * whatever its CFI says: above it are argc and argv, not a return address.
 * (glibc's _start marks its return address undefined; ld.so's does not.)
 * One outermost row over the rows its FDE has, then a gap.
 */
static int rows_of_entry(const struct cfa_index *ix, uint64_t start, uint64_t limit, struct cfi_table *t,
			 size_t *cap)
{
	static const struct unwind_row outermost = { .cfa_rule = UNWIND_CFA_END };
	static const struct unwind_row gap = { .cfa_rule = UNWIND_CFA_NONE };
	struct row_sink sink;
	size_t uncounted = 0;	/* its rows are not the table's */
	uint64_t end;
	int err = fde_rows(ix, NULL, NULL, start, limit, &t->work, &uncounted, &sink, &end);

	if (err || !sink.rows)
		return err ?: rows_of_function(ix, start, limit, t, cap);
	err = row_push(t, cap, start, &outermost);
	if (!err && end < limit)
		err = row_push(t, cap, end, &gap);
	return err;
}

static Elf_Scn *section_named(Elf *elf, const char *want, GElf_Shdr *shdr)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;

		if (!gelf_getshdr(scn, shdr) || shdr->sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, shdr->sh_name);
		if (name && strcmp(name, want) == 0)
			return scn;
	}
	return NULL;
}

/*
 * Function starts from .eh_frame_hdr's search table.  Only the layout every
 * x86_64 linker writes is read (version 1, table of datarel sdata4 pairs).
 */
/*
 * The end of the FDE at @fde_vaddr, if it starts at @start: its pc_begin and
 * pc_range read as the 4-byte pcrel forms every x86_64 toolchain writes
 * (augmentation "zR", 0x1b); checked against @start, 0 when they do not fit.
 */
static uint64_t fde_end(Elf_Data *eh, uint64_t eh_vaddr, uint64_t fde_vaddr, uint64_t start)
{
	uint64_t off = fde_vaddr - eh_vaddr;
	const uint8_t *fde = eh->d_buf;
	int32_t begin_rel;
	uint32_t length, range;

	/* off + 16 could wrap (an .eh_frame at address 0, an entry just below it): compare without adding. */
	if (fde_vaddr < eh_vaddr || off > eh->d_size || eh->d_size - off < 16)
		return 0;
	memcpy(&length, fde + off, 4);
	if (length == 0xffffffff || length < 12)
		return 0;	/* 64-bit DWARF or too short: not the common form */
	memcpy(&begin_rel, fde + off + 8, 4);
	memcpy(&range, fde + off + 12, 4);
	if (fde_vaddr + 8 + (int64_t)begin_rel != start)
		return 0;
	return start + range;
}

static int fde_starts_from_hdr(Elf *elf, uint64_t **starts, uint64_t **ends, size_t *nstarts);

/* ---- functions listed from .eh_frame itself (static binaries have no .eh_frame_hdr) ---- */

static int fde_starts_of_index(const struct cfa_index *ix, uint64_t **starts, uint64_t **ends, size_t *nstarts)
{
	*starts = malloc(ix->nfdes * sizeof(**starts));
	*ends = malloc(ix->nfdes * sizeof(**ends));
	if (!*starts || !*ends) {
		free(*starts);
		free(*ends);
		*starts = *ends = NULL;
		return -ENOMEM;
	}
	for (size_t i = 0; i < ix->nfdes; i++) {
		(*starts)[i] = ix->fdes[i].start;
		(*ends)[i] = ix->fdes[i].end;
	}
	*nstarts = ix->nfdes;
	return 0;
}

/* The FDEs of @elf's .eh_frame: -ENOENT without one. */
static int index_of(Elf *elf, struct cfa_index *ix, size_t *work)
{
	GElf_Shdr shdr;
	Elf_Scn *scn = section_named(elf, ".eh_frame", &shdr);
	Elf_Data *data = scn ? elf_getdata(scn, NULL) : NULL;

	if (!data)
		return -ENOENT;
	return cfa_index_build(elf, data, shdr.sh_addr, ix, work, CFI_MAX_FILE_WORK);
}

int cfi_fde_starts(Elf *elf, uint64_t **starts, uint64_t **ends, size_t *nstarts)
{
	struct cfa_index ix;
	size_t work = 0;
	int err = fde_starts_from_hdr(elf, starts, ends, nstarts);

	if (err != -ENOENT)
		return err;
	err = index_of(elf, &ix, &work);
	if (err)
		return err;
	err = fde_starts_of_index(&ix, starts, ends, nstarts);
	cfa_index_free(&ix);
	return err;
}

/* From .eh_frame_hdr's search table (sorted already): what every dynamic binary has. */
static int fde_starts_from_hdr(Elf *elf, uint64_t **starts, uint64_t **ends, size_t *nstarts)
{
	GElf_Shdr shdr, eh_shdr;
	Elf_Scn *scn = section_named(elf, ".eh_frame_hdr", &shdr);
	Elf_Scn *eh_scn = section_named(elf, ".eh_frame", &eh_shdr);
	Elf_Data *data = scn ? elf_getdata(scn, NULL) : NULL;
	Elf_Data *eh = eh_scn ? elf_getdata(eh_scn, NULL) : NULL;
	const uint8_t *hdr;
	uint32_t count;

	if (!data || data->d_size < 12)
		return -ENOENT;
	hdr = data->d_buf;
	/* version, eh_frame_ptr enc (any 4-byte form), fde_count enc udata4, table enc datarel|sdata4 */
	if (hdr[0] != 1 || (hdr[1] & 0x0f) != DW_EH_PE_sdata4 || hdr[2] != DW_EH_PE_udata4 ||
	    hdr[3] != (DW_EH_PE_datarel | DW_EH_PE_sdata4))
		return -ENOENT;
	memcpy(&count, hdr + 8, sizeof(count));
	if (!count || (data->d_size - 12) / 8 < count)
		return -ENOENT;
	*starts = malloc(count * sizeof(**starts));
	*ends = calloc(count, sizeof(**ends));
	if (!*starts || !*ends) {
		free(*starts);
		free(*ends);
		*starts = *ends = NULL;
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < count; i++) {
		int32_t loc_rel, fde_rel;

		memcpy(&loc_rel, hdr + 12 + (size_t)i * 8, sizeof(loc_rel));
		memcpy(&fde_rel, hdr + 16 + (size_t)i * 8, sizeof(fde_rel));
		(*starts)[i] = shdr.sh_addr + (int64_t)loc_rel;
		if (eh)
			(*ends)[i] = fde_end(eh, eh_shdr.sh_addr, shdr.sh_addr + (int64_t)fde_rel, (*starts)[i]);
	}
	*nstarts = count;
	return 0;
}

#define PLT_SECTIONS 3

/* Where the PLT stubs are: calls jump through them, never return into them. */
struct plt_ranges {
	uint64_t lo[PLT_SECTIONS], hi[PLT_SECTIONS];
	int n;
};

static void plt_ranges_of(Elf *elf, struct plt_ranges *plt)
{
	static const char *const names[PLT_SECTIONS] = { ".plt", ".plt.sec", ".plt.got" };
	GElf_Shdr shdr;

	plt->n = 0;
	for (int i = 0; i < PLT_SECTIONS; i++) {
		if (!section_named(elf, names[i], &shdr))
			continue;
		plt->lo[plt->n] = shdr.sh_addr;
		plt->hi[plt->n++] = shdr.sh_addr + shdr.sh_size;
	}
}

static bool in_plt(const struct plt_ranges *plt, uint64_t pc)
{
	for (int i = 0; i < plt->n; i++)
		if (pc >= plt->lo[i] && pc < plt->hi[i])
			return true;
	return false;
}

/* Row @i of @t is the frame-pointer body's, or one no call is made under (see cfi_table.fp_frames). */
static bool row_keeps_fp(const struct cfi_table *t, size_t i, const struct plt_ranges *plt)
{
	const struct unwind_row *r = &t->rows[i];
	bool rbp_saved = r->rbp_rule == UNWIND_RBP_OFFSET && r->rbp_off == -16;

	if (in_plt(plt, r->pc))
		return true;
	switch (r->cfa_rule) {
	case UNWIND_CFA_RBP:
		return r->cfa_off == 16 && rbp_saved;
	case UNWIND_CFA_RSP:
		if (r->cfa_off == 8)
			return true;	/* entry or return: a call here would leave the stack misaligned */
		/* After `push %rbp`, up to `mov %rsp,%rbp` (the scheduler may put other moves between, never a call). */
		return r->cfa_off == 16 && rbp_saved && i + 1 < t->nrows &&
		       t->rows[i + 1].cfa_rule == UNWIND_CFA_RBP && t->rows[i + 1].cfa_off == 16;
	case UNWIND_CFA_NONE:
	case UNWIND_CFA_PLT:
	case UNWIND_CFA_END:
		return true;
	default:
		return false;	/* a signal frame */
	}
}

static bool rows_keep_fp(Elf *elf, const struct cfi_table *t)
{
	struct plt_ranges plt;

	if (!t->nrows || t->unsupported)
		return false;	/* an expression the walk cannot follow may be a frame without rbp (a realigned stack) */
	plt_ranges_of(elf, &plt);
	for (size_t i = 0; i < t->nrows; i++)
		if (!row_keeps_fp(t, i, &plt))
			return false;
	return true;
}

int cfi_table_build(Elf *elf, struct cfi_table *t)
{
	struct cfa_index ix;
	Elf_Data *data;
	Elf_Scn *scn;
	GElf_Shdr shdr;
	GElf_Ehdr ehdr;
	uint64_t entry;
	size_t cap = 0;
	int err;

	memset(t, 0, sizeof(*t));
	/* The rules read are x86_64's (rbp 6, rsp 7, return address 16, 8-byte pointers). */
	if (!gelf_getehdr(elf, &ehdr) || ehdr.e_machine != EM_X86_64 || gelf_getclass(elf) != ELFCLASS64)
		return -ENOENT;
	entry = ehdr.e_entry;
	scn = section_named(elf, ".eh_frame", &shdr);
	data = scn ? elf_getdata(scn, NULL) : NULL;
	if (!data)
		return -ENOENT;
	t->eh_frame_bytes = shdr.sh_size;
	err = cfa_index_build(elf, data, shdr.sh_addr, &ix, &t->work, CFI_MAX_FILE_WORK);
	if (err)
		return err;
	err = fde_starts_from_hdr(elf, &t->fde_starts, &t->fde_ends, &t->nfdes);
	if (err == -ENOENT)
		err = fde_starts_of_index(&ix, &t->fde_starts, &t->fde_ends, &t->nfdes);
	for (size_t i = 0; i < t->nfdes && !err; i++) {
		uint64_t start = t->fde_starts[i], limit = i + 1 < t->nfdes ? t->fde_starts[i + 1] : UINT64_MAX;

		if (start == entry)
			err = rows_of_entry(&ix, start, limit, t, &cap);
		else
			err = rows_of_function(&ix, start, limit, t, &cap);
		/* An entry point without CFI (ld.so's _start): outermost up to the next function. */
		if (!err && entry > start && entry < limit && t->nrows &&
		    t->rows[t->nrows - 1].cfa_rule == UNWIND_CFA_NONE && t->rows[t->nrows - 1].pc <= entry) {
			static const struct unwind_row outermost = { .cfa_rule = UNWIND_CFA_END };

			err = row_push(t, &cap, entry, &outermost);
		}
	}
	cfa_index_free(&ix);
	if (err)
		cfi_table_free(t);
	else
		t->fp_frames = rows_keep_fp(elf, t);
	return err;
}

size_t cfi_table_bytes(const struct cfi_table *t)
{
	return heap_bytes(t->rows) + heap_bytes(t->fde_starts) + heap_bytes(t->fde_ends);
}

void cfi_table_free(struct cfi_table *t)
{
	free(t->rows);
	free(t->fde_starts);
	free(t->fde_ends);
	memset(t, 0, sizeof(*t));
}

uint64_t cfi_function_start(const uint64_t *starts, const uint64_t *ends, size_t nstarts, uint64_t addr)
{
	size_t lo = 0, hi = nstarts;

	/* The last start <= addr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (starts[mid] <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || (ends && ends[lo - 1] && addr >= ends[lo - 1]))
		return 0;	/* in no function: between FDEs */
	return starts[lo - 1];
}
