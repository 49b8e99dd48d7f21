// SPDX-License-Identifier: GPL-2.0
/*
 * .eh_frame -> unwind rows.  libdw interprets the CFI (CIE initial
 * instructions, FDE programs, remember/restore state); this file only lists
 * the functions (from .eh_frame_hdr's sorted table, which every linker
 * writes for x86_64 binaries) and turns each row's rules into the few forms
 * the BPF walk follows: CFA = rsp/rbp + offset, the PLT expression, the
 * signal trampoline; rbp saved at CFA + offset; return address at CFA - 8.
 * Anything else becomes a row where the walk stops, never a guess.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <dwarf.h>
#include <gelf.h>
#include <elfutils/libdw.h>
#include "cfi.h"
#include "util.h"

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

static void row_cfa(Dwarf_Frame *frame, bool signal, struct unwind_row *row)
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
static int saved_at(Dwarf_Frame *frame, int regno, int64_t *off)
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
static void row_from_frame(Dwarf_Frame *frame, bool signal, struct unwind_row *row, size_t *unsupported)
{
	int64_t off;
	int ra = saved_at(frame, X86_64_RA, &off);

	row_cfa(frame, signal, row);
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
	if (saved_at(frame, X86_64_RBP, &off) == 1 && off >= INT16_MIN && off <= INT16_MAX) {
		row->rbp_rule = UNWIND_RBP_OFFSET;
		row->rbp_off = (int16_t)off;
	}
}

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

/*
 * Rows of the function starting at @start, up to @limit (the next function)
 * and CFI_MAX_FUNCTION_ROWS, then a gap row.
 */
static int rows_of_function(Dwarf_CFI *cfi, uint64_t start, uint64_t limit, struct cfi_table *t,
			    size_t *cap)
{
	static const struct unwind_row gap = { .cfa_rule = UNWIND_CFA_NONE };
	uint64_t addr = start;
	int err = 0;

	for (int n = 0; addr < limit && !err && n < CFI_MAX_FUNCTION_ROWS; n++) {
		Dwarf_Frame *frame;
		Dwarf_Addr lo, hi;
		bool signal = false;
		struct unwind_row row = { 0 };

		/* libdw replays the FDE from its start for each row: row n costs n + 1 steps. */
		t->work += (size_t)n + 1;
		if (t->work > CFI_MAX_FILE_WORK)
			return -E2BIG;
		if (dwarf_cfi_addrframe(cfi, addr, &frame))
			break;	/* past the FDE's end */
		dwarf_frame_info(frame, &lo, &hi, &signal);
		row_from_frame(frame, signal, &row, &t->unsupported);
		free(frame);
		err = row_push(t, cap, addr, &row);
		if (hi <= addr)
			break;	/* malformed: never loop */
		addr = hi;
	}
	if (!err && addr < limit)
		err = row_push(t, cap, addr, &gap);
	return err;
}

/*
 * The end of the FDE whose first row ends at @hi: its last row's end, found by
 * walking its rows, up to @limit and as many rows as a function's at most.
 */
static Dwarf_Addr fde_rows_end(Dwarf_CFI *cfi, Dwarf_Addr hi, uint64_t limit)
{
	Dwarf_Frame *frame;

	for (int n = 1; hi < limit && n < CFI_MAX_FUNCTION_ROWS && !dwarf_cfi_addrframe(cfi, hi, &frame); n++) {
		Dwarf_Addr lo, next_hi;

		dwarf_frame_info(frame, &lo, &next_hi, NULL);
		free(frame);
		if (next_hi <= hi)
			break;
		hi = next_hi;
	}
	return hi;
}

/*
 * The entry point (_start, of a program or of ld.so) is the outermost frame
 * whatever its CFI says: above it are argc and argv, not a return address.
 * (glibc's _start marks its return address undefined; ld.so's does not.)
 */
static int rows_of_entry(Dwarf_CFI *cfi, uint64_t start, uint64_t limit, struct cfi_table *t, size_t *cap)
{
	static const struct unwind_row outermost = { .cfa_rule = UNWIND_CFA_END };
	static const struct unwind_row gap = { .cfa_rule = UNWIND_CFA_NONE };
	Dwarf_Frame *frame;
	Dwarf_Addr lo, hi;
	int err;

	if (dwarf_cfi_addrframe(cfi, start, &frame))
		return rows_of_function(cfi, start, limit, t, cap);
	dwarf_frame_info(frame, &lo, &hi, NULL);
	free(frame);
	err = row_push(t, cap, start, &outermost);
	if (!err)
		hi = fde_rows_end(cfi, hi, limit);
	if (!err && hi < limit)
		err = row_push(t, cap, hi, &gap);
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

/* Bytes of an encoded pointer's value (DW_EH_PE_* low nibble); 0: not one we read. */
static size_t eh_pe_size(uint8_t enc)
{
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr: case DW_EH_PE_udata8: case DW_EH_PE_sdata8: return 8;
	case DW_EH_PE_udata4: case DW_EH_PE_sdata4: return 4;
	case DW_EH_PE_udata2: case DW_EH_PE_sdata2: return 2;
	default: return 0;
	}
}

static int64_t eh_pe_value(const uint8_t *p, uint8_t enc)
{
	int16_t s16; int32_t s32; uint16_t u16; uint32_t u32; uint64_t u64;

	switch (enc & 0x0f) {
	case DW_EH_PE_udata2: memcpy(&u16, p, 2); return u16;
	case DW_EH_PE_sdata2: memcpy(&s16, p, 2); return s16;
	case DW_EH_PE_udata4: memcpy(&u32, p, 4); return u32;
	case DW_EH_PE_sdata4: memcpy(&s32, p, 4); return s32;
	default: memcpy(&u64, p, 8); return (int64_t)u64;
	}
}

/*
 * The FDE pointer encoding a CIE's augmentation ("zR", "zPLR", ...) names;
 * absptr without 'z'.  Every read stays inside the augmentation data: libdw
 * checked it against its own idea of a 'P' pointer's size, which differs
 * from ours for absptr in a 32-bit file (4 bytes, not 8).
 */
static int cie_fde_encoding(const Dwarf_CIE *cie)
{
	const uint8_t *data = cie->augmentation_data;
	const uint8_t *end = data + cie->augmentation_data_size;
	const char *aug = cie->augmentation;

	if (!aug || aug[0] != 'z')
		return aug && aug[0] ? -1 : DW_EH_PE_absptr;
	for (const char *c = aug + 1; *c; c++) {
		size_t size;

		switch (*c) {
		case 'R':
			return data < end ? *data : -1;
		case 'P':
			size = data < end ? eh_pe_size(*data) : 0;
			if (!size || (size_t)(end - data) < 1 + size)
				return -1;
			data += 1 + size;
			break;
		case 'L':
			if (data == end)
				return -1;
			data++;
			break;
		case 'S': case 'B':
			break;
		default:
			return -1;
		}
	}
	return DW_EH_PE_absptr;
}

struct fde_range {
	uint64_t start, end;
};

static int range_cmp(const void *a, const void *b)
{
	const struct fde_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

struct cie_encoding {
	Dwarf_Off offset;
	int encoding;
};

/*
 * By binary search: the CIEs are appended as the walk meets them, and the
 * walk's offsets only grow (each entry's next is past its own length), so
 * the array is sorted.  A linear search made a file of a million CIEs and
 * FDEs 1e12 steps.
 */
static int cie_encoding_of(const struct cie_encoding *cies, size_t ncies, Dwarf_Off offset)
{
	size_t lo = 0, hi = ncies;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cies[mid].offset == offset)
			return cies[mid].encoding;
		if (cies[mid].offset < offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/*
 * The [start, end) of @fde, its pointers in the CIE's encoding @enc (-1:
 * unknown); false for an encoding not read here or an empty FDE (a discarded
 * function names nothing).
 */
static bool fde_range_of(const Dwarf_FDE *fde, int enc, uint64_t eh_vaddr, const Elf_Data *data,
			 struct fde_range *out)
{
	size_t size = enc < 0 ? 0 : eh_pe_size((uint8_t)enc);
	const uint8_t *field = fde->start;
	uint64_t at, start, range;

	if (!size || (enc & 0x70) > DW_EH_PE_pcrel || field + 2 * size > fde->end)
		return false;
	at = eh_vaddr + (uint64_t)(field - (const uint8_t *)data->d_buf);
	start = (uint64_t)eh_pe_value(field, (uint8_t)enc) + ((enc & 0x70) == DW_EH_PE_pcrel ? at : 0);
	range = (uint64_t)eh_pe_value(field + size, (uint8_t)(enc & 0x07));
	*out = (struct fde_range){ start, start + range };
	return range != 0;
}

/*
 * Every FDE's [start, end) from .eh_frame, sorted: the walk every static
 * binary needs.  Each entry costs @work one step; -E2BIG past CFI_MAX_FILE_WORK.
 */
static int fde_ranges_scan(Elf *elf, struct fde_range **out, size_t *nout, size_t *work)
{
	GElf_Shdr shdr;
	Elf_Scn *scn = section_named(elf, ".eh_frame", &shdr);
	Elf_Data *data = scn ? elf_getdata(scn, NULL) : NULL;
	const unsigned char *ident = (const unsigned char *)elf_getident(elf, NULL);
	struct cie_encoding *cies = NULL;
	struct fde_range *ranges = NULL, range;
	size_t ncies = 0, cies_cap = 0, nranges = 0, cap = 0;
	Dwarf_Off off = 0, next;
	Dwarf_CFI_Entry entry;
	int err = 0;

	if (!data || !ident)
		return -ENOENT;
	while (!err && dwarf_next_cfi(ident, data, true, off, &next, &entry) == 0) {
		if (++*work > CFI_MAX_FILE_WORK || next <= off) {
			err = next <= off ? -EINVAL : -E2BIG;	/* (libdw never goes back: checked) */
		} else if (dwarf_cfi_cie_p(&entry)) {
			err = array_reserve((void **)&cies, &cies_cap, ncies, sizeof(*cies), 16);
			if (!err)
				cies[ncies++] = (struct cie_encoding){ off, cie_fde_encoding(&entry.cie) };
		} else if (fde_range_of(&entry.fde, cie_encoding_of(cies, ncies, entry.fde.CIE_pointer),
					 shdr.sh_addr, data, &range)) {
			err = array_reserve((void **)&ranges, &cap, nranges, sizeof(*ranges), 256);
			if (!err)
				ranges[nranges++] = range;
		}
		off = next;
	}
	free(cies);
	if (!err && !nranges)
		err = -ENOENT;
	if (err) {
		free(ranges);
		return err;
	}
	qsort(ranges, nranges, sizeof(*ranges), range_cmp);
	*out = ranges;
	*nout = nranges;
	return 0;
}

static int fde_starts_scan(Elf *elf, uint64_t **starts, uint64_t **ends, size_t *nstarts, size_t *work)
{
	struct fde_range *ranges;
	size_t n;
	int err = fde_ranges_scan(elf, &ranges, &n, work);

	if (err)
		return err;
	*starts = malloc(n * sizeof(**starts));
	*ends = malloc(n * sizeof(**ends));
	if (!*starts || !*ends) {
		free(*starts);
		free(*ends);
		free(ranges);
		*starts = *ends = NULL;
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		(*starts)[i] = ranges[i].start;
		(*ends)[i] = ranges[i].end;
	}
	*nstarts = n;
	free(ranges);
	return 0;
}

static int fde_starts(Elf *elf, uint64_t **starts, uint64_t **ends, size_t *nstarts, size_t *work)
{
	int err = fde_starts_from_hdr(elf, starts, ends, nstarts);

	return err == -ENOENT ? fde_starts_scan(elf, starts, ends, nstarts, work) : err;
}

int cfi_fde_starts(Elf *elf, uint64_t **starts, uint64_t **ends, size_t *nstarts)
{
	size_t work = 0;

	return fde_starts(elf, starts, ends, nstarts, &work);
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
	GElf_Shdr shdr;
	GElf_Ehdr ehdr;
	Dwarf_CFI *cfi;
	uint64_t entry;
	size_t cap = 0;
	int err;

	memset(t, 0, sizeof(*t));
	entry = gelf_getehdr(elf, &ehdr) ? ehdr.e_entry : 0;
	if (!section_named(elf, ".eh_frame", &shdr))
		return -ENOENT;
	t->eh_frame_bytes = shdr.sh_size;
	err = fde_starts(elf, &t->fde_starts, &t->fde_ends, &t->nfdes, &t->work);
	if (err)
		return err;
	cfi = dwarf_getcfi_elf(elf);
	if (!cfi) {
		cfi_table_free(t);
		return -ENOENT;
	}
	for (size_t i = 0; i < t->nfdes && !err; i++) {
		uint64_t start = t->fde_starts[i], limit = i + 1 < t->nfdes ? t->fde_starts[i + 1] : UINT64_MAX;

		if (start == entry)
			err = rows_of_entry(cfi, start, limit, t, &cap);
		else
			err = rows_of_function(cfi, start, limit, t, &cap);
		/* An entry point without CFI (ld.so's _start): outermost up to the next function. */
		if (!err && entry > start && entry < limit && t->nrows &&
		    t->rows[t->nrows - 1].cfa_rule == UNWIND_CFA_NONE && t->rows[t->nrows - 1].pc <= entry) {
			static const struct unwind_row outermost = { .cfa_rule = UNWIND_CFA_END };

			err = row_push(t, &cap, entry, &outermost);
		}
	}
	dwarf_cfi_end(cfi);
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
