// SPDX-License-Identifier: GPL-2.0
/*
 * The CFA programs of one .eh_frame, each run once from its FDE's start to
 * its end.  libdw reads the entries (dwarf_next_cfi); the instructions are
 * executed here as libdw's own interpreter does (elfutils libdw/cfi.c,
 * execute_cfi, and dwarf_frame_register/dwarf_frame_cfa for what a rule
 * reads as): its x86_64 ABI defaults (rbp and the return address column the
 * same value), remember/restore of the whole state, the CFA included.  Only
 * the CFA, rbp (6) and the return address (16) are followed; the other
 * registers' operands are read and skipped.  Asked address by address, libdw
 * replays an FDE from its start for each row and finds the FDE in a tree each
 * time: n^2/2 steps for a function of n rows, most of a Python process's
 * table building (libpython3.8: 50 ms).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <dwarf.h>
#include <gelf.h>
#include <elfutils/libdw.h>
#include "cfaprog.h"
#include "util.h"

#define X86_64_RBP 6
#define X86_64_RSP 7
#define X86_64_RA 16		/* the return address column */
#define STATE_STACK 16		/* remember_state depth (GCC nests 1 or 2) */

enum cfa_rule { CFA_UNDEFINED, CFA_REG_OFFSET, CFA_INVALID, CFA_EXPR };
enum reg_rule { REG_UNDEFINED, REG_SAME, REG_OFFSET, REG_VAL_OFFSET, REG_REGISTER, REG_EXPR, REG_VAL_EXPR };

struct reg_state {
	uint8_t rule;			/* enum reg_rule */
	int64_t off;			/* REG_OFFSET, REG_VAL_OFFSET: CFA + off */
	const uint8_t *expr;		/* REG_EXPR, REG_VAL_EXPR: the block */
	uint64_t len;
};

struct cfa_state {
	uint8_t cfa;			/* enum cfa_rule */
	uint64_t cfa_reg;
	int64_t cfa_off;
	const uint8_t *cfa_expr;
	uint64_t cfa_len;
	struct reg_state rbp, ra;
};

struct cfa_cie {
	Dwarf_Off offset;		/* in .eh_frame: what an FDE's CIE pointer names */
	uint64_t code_align;
	int64_t data_align;
	int fde_encoding;		/* -1: not one read here */
	bool sized_aug;			/* 'z': an FDE's augmentation data starts with its length */
	uint64_t fde_aug_size;		/* without 'z': its size */
	bool signal;			/* 'S': a signal trampoline's frames */
	bool valid;			/* its initial instructions ran */
	struct cfa_state initial;
};

/* ---- encoded values (DW_EH_PE_*) ---- */

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

/* ---- LEB128, bounded ---- */

/* A LEB128's bits and their count (for a sign's extension): false when it runs past @end. */
static bool read_leb(const uint8_t **p, const uint8_t *end, uint64_t *out, unsigned int *bits, uint8_t *last)
{
	uint64_t v = 0;
	unsigned int shift = 0;

	while (*p < end) {
		uint8_t b = *(*p)++;

		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			*out = v;
			*bits = shift;
			*last = b;
			return true;
		}
	}
	return false;
}

static bool read_uleb(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
	unsigned int bits;
	uint8_t last;

	return read_leb(p, end, out, &bits, &last);
}

static bool read_sleb(const uint8_t **p, const uint8_t *end, int64_t *out)
{
	unsigned int bits;
	uint64_t v;
	uint8_t last;

	if (!read_leb(p, end, &v, &bits, &last))
		return false;
	if (bits < 64 && (last & 0x40))
		v |= ~(uint64_t)0 << bits;
	*out = (int64_t)v;
	return true;
}

/* ---- the interpreter ---- */

/* The state of the two registers followed; NULL for any other (its rule is not kept). */
static struct reg_state *reg_of(struct cfa_state *s, uint64_t regno)
{
	return regno == X86_64_RBP ? &s->rbp : regno == X86_64_RA ? &s->ra : NULL;
}

static void reg_set(struct cfa_state *s, uint64_t regno, uint8_t rule, int64_t off)
{
	struct reg_state *r = reg_of(s, regno);

	if (r)
		*r = (struct reg_state){ .rule = rule, .off = off };
}

/* A DW_FORM_block: a ULEB128 length, then that many bytes, all inside the program. */
static bool read_block(const uint8_t **p, const uint8_t *end, const uint8_t **block, uint64_t *len)
{
	if (!read_uleb(p, end, len) || *len > (uint64_t)(end - *p))
		return false;
	*block = *p;
	*p += *len;
	return true;
}

struct exec {
	const struct cfa_cie *cie;		/* the factors and encoding */
	bool in_cie;				/* running the CIE's own instructions: no advance, no restore */
	uint64_t eh_vaddr;			/* .eh_frame's address, and its data: pcrel set_loc */
	const uint8_t *eh_data;
	struct cfa_state stack[STATE_STACK];	/* remember_state's */
	int depth;
};

enum step { STEP_RULE, STEP_ADVANCE, STEP_INVALID };

/* DW_CFA_set_loc: a pointer in the CIE's FDE encoding (absolute or pc-relative). */
static bool read_set_loc(const struct exec *x, const uint8_t **p, const uint8_t *end, uint64_t *loc)
{
	int enc = x->cie->fde_encoding;
	size_t size = enc < 0 ? 0 : eh_pe_size((uint8_t)enc);
	uint64_t at;

	if (!size || (enc & 0x70) > DW_EH_PE_pcrel || (size_t)(end - *p) < size)
		return false;
	at = x->eh_vaddr + (uint64_t)(*p - x->eh_data);
	*loc = (uint64_t)eh_pe_value(*p, (uint8_t)enc) + ((enc & 0x70) == DW_EH_PE_pcrel ? at : 0);
	*p += size;
	return true;
}

/* The CFA rule's register, for def_cfa_register and def_cfa_offset: libdw's require_cfa_offset. */
static void cfa_require_offset(struct cfa_state *s)
{
	if (s->cfa != CFA_REG_OFFSET)
		s->cfa = CFA_INVALID;
}

/* Register rules (every opcode that names a register and a rule). */
static enum step step_register(struct exec *x, struct cfa_state *s, uint8_t op, const uint8_t **p,
			       const uint8_t *end)
{
	int64_t daf = x->cie->data_align, soff;
	uint64_t regno, uoff;
	const uint8_t *block;

	switch (op) {
	case DW_CFA_offset_extended:
		if (!read_uleb(p, end, &regno) || !read_uleb(p, end, &uoff))
			return STEP_INVALID;
		reg_set(s, regno, REG_OFFSET, (int64_t)(uoff * (uint64_t)daf));
		return STEP_RULE;
	case DW_CFA_offset_extended_sf:
	case DW_CFA_val_offset_sf:
		if (!read_uleb(p, end, &regno) || !read_sleb(p, end, &soff))
			return STEP_INVALID;
		reg_set(s, regno, op == DW_CFA_val_offset_sf ? REG_VAL_OFFSET : REG_OFFSET,
			(int64_t)((uint64_t)soff * (uint64_t)daf));
		return STEP_RULE;
	case DW_CFA_GNU_negative_offset_extended:
		if (!read_uleb(p, end, &regno) || !read_uleb(p, end, &uoff))
			return STEP_INVALID;
		reg_set(s, regno, REG_OFFSET, (int64_t)((0 - uoff) * (uint64_t)daf));
		return STEP_RULE;
	case DW_CFA_val_offset:
		if (!read_uleb(p, end, &regno) || !read_uleb(p, end, &uoff))
			return STEP_INVALID;
		reg_set(s, regno, REG_VAL_OFFSET, (int64_t)(uoff * (uint64_t)daf));
		return STEP_RULE;
	case DW_CFA_undefined:
	case DW_CFA_same_value:
		if (!read_uleb(p, end, &regno))
			return STEP_INVALID;
		reg_set(s, regno, op == DW_CFA_undefined ? REG_UNDEFINED : REG_SAME, 0);
		return STEP_RULE;
	case DW_CFA_register:
		if (!read_uleb(p, end, &regno) || !read_uleb(p, end, &uoff))
			return STEP_INVALID;
		reg_set(s, regno, REG_REGISTER, 0);
		return STEP_RULE;
	case DW_CFA_expression:
	case DW_CFA_val_expression:
		if (!read_uleb(p, end, &regno) || !read_block(p, end, &block, &uoff))
			return STEP_INVALID;
		if (reg_of(s, regno))
			*reg_of(s, regno) = (struct reg_state){ .rule = op == DW_CFA_expression ? REG_EXPR : REG_VAL_EXPR,
								.expr = block, .len = uoff };
		return STEP_RULE;
	default:
		return STEP_INVALID;
	}
}

/* The CFA's rule. */
static enum step step_cfa(struct exec *x, struct cfa_state *s, uint8_t op, const uint8_t **p, const uint8_t *end)
{
	int64_t soff;
	uint64_t regno, uoff;

	switch (op) {
	case DW_CFA_def_cfa:
		if (!read_uleb(p, end, &regno) || !read_uleb(p, end, &uoff))
			return STEP_INVALID;
		s->cfa = CFA_REG_OFFSET;
		s->cfa_reg = regno;
		s->cfa_off = (int64_t)uoff;
		return STEP_RULE;
	case DW_CFA_def_cfa_sf:
		if (!read_uleb(p, end, &regno) || !read_sleb(p, end, &soff))
			return STEP_INVALID;
		s->cfa = CFA_REG_OFFSET;
		s->cfa_reg = regno;
		s->cfa_off = (int64_t)((uint64_t)soff * (uint64_t)x->cie->data_align);
		return STEP_RULE;
	case DW_CFA_def_cfa_register:
		if (!read_uleb(p, end, &regno))
			return STEP_INVALID;
		cfa_require_offset(s);
		s->cfa_reg = regno;
		return STEP_RULE;
	case DW_CFA_def_cfa_offset:
		if (!read_uleb(p, end, &uoff))
			return STEP_INVALID;
		cfa_require_offset(s);
		s->cfa_off = (int64_t)uoff;
		return STEP_RULE;
	case DW_CFA_def_cfa_offset_sf:
		if (!read_sleb(p, end, &soff))
			return STEP_INVALID;
		cfa_require_offset(s);
		s->cfa_off = (int64_t)((uint64_t)soff * (uint64_t)x->cie->data_align);
		return STEP_RULE;
	case DW_CFA_def_cfa_expression:
		if (!read_block(p, end, &s->cfa_expr, &s->cfa_len))
			return STEP_INVALID;
		s->cfa = CFA_EXPR;
		return STEP_RULE;
	default:
		return step_register(x, s, op, p, end);
	}
}

/* DW_CFA_restore(_extended): the CIE's initial rule; not valid in the CIE's own instructions. */
static enum step step_restore(struct exec *x, struct cfa_state *s, uint64_t regno)
{
	if (x->in_cie)
		return STEP_INVALID;
	if (regno == X86_64_RBP)
		s->rbp = x->cie->initial.rbp;
	else if (regno == X86_64_RA)
		s->ra = x->cie->initial.ra;
	return STEP_RULE;
}

/* One instruction at *@p: a rule changed (or none), the location moved (*@loc), or not valid. */
static enum step step(struct exec *x, struct cfa_state *s, const uint8_t **p, const uint8_t *end, uint64_t *loc)
{
	uint8_t op = *(*p)++;
	uint64_t operand = op & 0x3f, caf = x->cie->code_align;
	uint16_t u16;
	uint32_t u32;

	switch (op & 0xc0) {
	case DW_CFA_advance_loc:
		*loc += operand * caf;
		return x->in_cie ? STEP_INVALID : STEP_ADVANCE;
	case DW_CFA_offset:
		if (!read_uleb(p, end, &operand))
			return STEP_INVALID;
		reg_set(s, op & 0x3f, REG_OFFSET, (int64_t)(operand * (uint64_t)x->cie->data_align));
		return STEP_RULE;
	case DW_CFA_restore:
		return step_restore(x, s, op & 0x3f);
	}
	switch (op) {
	case DW_CFA_nop:
	case DW_CFA_GNU_args_size:
		return op == DW_CFA_nop || read_uleb(p, end, &operand) ? STEP_RULE : STEP_INVALID;
	case DW_CFA_set_loc:
		if (!read_set_loc(x, p, end, loc))
			return STEP_INVALID;
		return x->in_cie ? STEP_INVALID : STEP_ADVANCE;
	case DW_CFA_advance_loc1:
	case DW_CFA_advance_loc2:
	case DW_CFA_advance_loc4:
		if ((size_t)(end - *p) < (op == DW_CFA_advance_loc1 ? 1u : op == DW_CFA_advance_loc2 ? 2u : 4u))
			return STEP_INVALID;
		if (op == DW_CFA_advance_loc1) {
			operand = *(*p)++;
		} else if (op == DW_CFA_advance_loc2) {
			memcpy(&u16, *p, 2);
			*p += 2;
			operand = u16;
		} else {
			memcpy(&u32, *p, 4);
			*p += 4;
			operand = u32;
		}
		*loc += operand * caf;
		return x->in_cie ? STEP_INVALID : STEP_ADVANCE;
	case DW_CFA_restore_extended:
		return read_uleb(p, end, &operand) ? step_restore(x, s, operand) : STEP_INVALID;
	case DW_CFA_remember_state:
		if (x->depth == STATE_STACK)
			return STEP_INVALID;
		x->stack[x->depth++] = *s;
		return STEP_RULE;
	case DW_CFA_restore_state:
		if (!x->depth)
			return STEP_INVALID;
		*s = x->stack[--x->depth];
		return STEP_RULE;
	case DW_CFA_GNU_window_save:	/* SPARC's; libdw reads it as CFA + (16 - 16) * 8 for column 16 */
		s->ra = (struct reg_state){ .rule = REG_OFFSET, .off = 0 };
		return STEP_RULE;
	default:
		return step_cfa(x, s, op, p, end);
	}
}

/* ---- what a state reads as, for the walk ---- */

/* One operation of a DWARF expression, as far as the two patterns below need. */
struct expr_op {
	uint8_t atom;
	int64_t number;
};

/* The expression's operations, up to @max; -1 when one is not of the few read here. */
static int expr_ops(const uint8_t *p, uint64_t len, struct expr_op *ops, int max)
{
	const uint8_t *end = p + len;
	int n = 0;

	while (p < end) {
		uint8_t atom = *p++;
		int64_t number = 0;
		uint64_t unumber;

		if (n == max)
			return -1;
		if (atom >= DW_OP_breg0 && atom <= DW_OP_breg31) {
			if (!read_sleb(&p, end, &number))
				return -1;
		} else if (atom == DW_OP_plus_uconst) {
			if (!read_uleb(&p, end, &unumber))
				return -1;
			number = (int64_t)unumber;
		} else if (!(atom >= DW_OP_lit0 && atom <= DW_OP_lit31) && atom != DW_OP_deref &&
			   atom != DW_OP_and && atom != DW_OP_ge && atom != DW_OP_shl && atom != DW_OP_plus) {
			return -1;
		}
		ops[n++] = (struct expr_op){ atom, number };
	}
	return n;
}

/* The PLT's CFA: rsp + 8 + ((rip & 15) >= N) << 3, N 11 (.plt) or 10 (older .plt.got). */
static bool expr_is_plt(const struct expr_op *ops, int n, int32_t *threshold)
{
	static const uint8_t atoms[] = {
		DW_OP_breg7, DW_OP_breg16, DW_OP_lit15, DW_OP_and, 0 /* lit N */, DW_OP_ge,
		DW_OP_lit3, DW_OP_shl, DW_OP_plus,
	};

	if (n != (int)sizeof(atoms) || ops[0].number != 8 || ops[1].number != 0)
		return false;
	for (int i = 0; i < n; i++)
		if (i != 4 && ops[i].atom != atoms[i])
			return false;
	if (ops[4].atom < DW_OP_lit0 || ops[4].atom > DW_OP_lit31)
		return false;
	*threshold = ops[4].atom - DW_OP_lit0;
	return true;
}

/* glibc's __restore_rt: CFA = *(rsp + 160), the saved rsp in the ucontext on the stack. */
static bool expr_is_sigframe(const struct expr_op *ops, int n)
{
	return n == 2 && ops[0].atom == DW_OP_breg7 && ops[0].number == 160 && ops[1].atom == DW_OP_deref;
}

static void row_cfa(const struct cfa_state *s, bool signal, struct unwind_row *row)
{
	struct expr_op ops[12];
	int32_t threshold;
	int n, reg;

	row->cfa_rule = UNWIND_CFA_NONE;
	if (s->cfa == CFA_REG_OFFSET) {
		reg = (int)s->cfa_reg;	/* as libdw's DW_OP_bregx reads back */
		if ((reg == X86_64_RSP || reg == X86_64_RBP) && s->cfa_off >= INT32_MIN && s->cfa_off <= INT32_MAX) {
			row->cfa_rule = reg == X86_64_RSP ? UNWIND_CFA_RSP : UNWIND_CFA_RBP;
			row->cfa_off = (int32_t)s->cfa_off;
		}
		return;
	}
	if (s->cfa != CFA_EXPR)
		return;
	n = expr_ops(s->cfa_expr, s->cfa_len, ops, (int)(sizeof(ops) / sizeof(ops[0])));
	if (expr_is_plt(ops, n, &threshold)) {
		row->cfa_rule = UNWIND_CFA_PLT;
		row->cfa_off = threshold;
	} else if (signal && expr_is_sigframe(ops, n)) {
		row->cfa_rule = UNWIND_CFA_SIGNAL;
	}
}

/*
 * Where a register was saved, as "CFA + offset" (libdw spells it
 * DW_OP_call_frame_cfa [DW_OP_plus_uconst N], an expression rule with the CFA
 * pushed first): 1, saved there; 0, same value (not saved); -1, undefined or
 * a rule the walk does not follow.
 */
static int saved_at(const struct reg_state *r, int64_t *off)
{
	struct expr_op ops[2];

	switch (r->rule) {
	case REG_SAME:
		return 0;
	case REG_OFFSET:
		*off = r->off;
		return 1;
	case REG_EXPR:
		if (!r->len) {
			*off = 0;
			return 1;
		}
		if (expr_ops(r->expr, r->len, ops, 1) == 1 && ops[0].atom == DW_OP_plus_uconst) {
			*off = ops[0].number;
			return 1;
		}
		return -1;
	default:
		return -1;
	}
}

static void row_of_state(const struct cfa_state *s, bool signal, struct unwind_row *row, size_t *unsupported)
{
	int64_t off = 0;
	int ra = saved_at(&s->ra, &off);

	*row = (struct unwind_row){ 0 };
	row_cfa(s, signal, row);
	row->rbp_rule = UNWIND_RBP_SAME;
	row->rbp_off = 0;
	if (row->cfa_rule == UNWIND_CFA_SIGNAL)
		return;	/* the walk reads every register from the ucontext */
	if (ra == -1)	/* an undefined return address marks the outermost frame */
		row->cfa_rule = s->ra.rule == REG_UNDEFINED ? UNWIND_CFA_END : UNWIND_CFA_NONE;
	else if (ra != 1 || off != -8)
		row->cfa_rule = UNWIND_CFA_NONE;
	if (row->cfa_rule == UNWIND_CFA_NONE) {
		(*unsupported)++;
		return;
	}
	if (saved_at(&s->rbp, &off) == 1 && off >= INT16_MIN && off <= INT16_MAX) {
		row->rbp_rule = UNWIND_RBP_OFFSET;
		row->rbp_off = (int16_t)off;
	}
}

/* ---- the index ---- */

/* The ABI's defaults (elfutils backends/x86_64_cfi.c): rbp and column 16 the same value; no CFA. */
static void cie_run_initial(struct cfa_cie *cie, const Dwarf_CIE *entry, uint64_t eh_vaddr, const uint8_t *eh_data)
{
	struct exec x = { .cie = cie, .in_cie = true, .eh_vaddr = eh_vaddr, .eh_data = eh_data };
	const uint8_t *p = entry->initial_instructions, *end = entry->initial_instructions_end;
	uint64_t loc = 0;

	cie->initial = (struct cfa_state){ .cfa = CFA_UNDEFINED, .rbp.rule = REG_SAME, .ra.rule = REG_SAME };
	cie->valid = true;
	while (p && p < end && cie->valid)
		cie->valid = step(&x, &cie->initial, &p, end, &loc) == STEP_RULE;
}

/* The CIE at @offset, by binary search (the walk appends them in offset order), or NULL. */
static const struct cfa_cie *cie_at(const struct cfa_index *ix, Dwarf_Off offset, uint32_t *index)
{
	size_t lo = 0, hi = ix->ncies;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ix->cies[mid].offset == offset) {
			*index = (uint32_t)mid;
			return &ix->cies[mid];
		}
		if (ix->cies[mid].offset < offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/*
 * @fde's range and program, its pointers in its CIE's encoding; false for an
 * encoding not read here, an empty FDE (a discarded function names nothing)
 * or augmentation data past its end.
 */
static bool fde_of(const Dwarf_FDE *entry, const struct cfa_cie *cie, uint64_t eh_vaddr, const Elf_Data *data,
		   struct cfa_fde *out)
{
	int enc = cie->fde_encoding;
	size_t size = enc < 0 ? 0 : eh_pe_size((uint8_t)enc);
	const uint8_t *field = entry->start, *end = entry->end, *p;
	uint64_t at, start, range, aug_len = cie->fde_aug_size;

	if (!size || (enc & 0x70) > DW_EH_PE_pcrel || (size_t)(end - field) < 2 * size)
		return false;
	at = eh_vaddr + (uint64_t)(field - (const uint8_t *)data->d_buf);
	start = (uint64_t)eh_pe_value(field, (uint8_t)enc) + ((enc & 0x70) == DW_EH_PE_pcrel ? at : 0);
	range = (uint64_t)eh_pe_value(field + size, (uint8_t)(enc & 0x07));
	p = field + 2 * size;
	if (cie->sized_aug && !read_uleb(&p, end, &aug_len))
		return false;
	if (aug_len > (uint64_t)(end - p))
		return false;
	*out = (struct cfa_fde){ .start = start, .end = start + range, .insns = p + aug_len, .insns_end = end };
	return range != 0;
}

static int fde_cmp(const void *a, const void *b)
{
	const struct cfa_fde *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static int cie_add(struct cfa_index *ix, size_t *cap, Dwarf_Off offset, const Dwarf_CIE *entry,
		   uint64_t eh_vaddr, const uint8_t *eh_data)
{
	struct cfa_cie *cie;

	if (array_reserve((void **)&ix->cies, cap, ix->ncies, sizeof(*ix->cies), 16))
		return -ENOMEM;
	cie = &ix->cies[ix->ncies++];
	*cie = (struct cfa_cie){
		.offset = offset,
		.code_align = entry->code_alignment_factor,
		.data_align = entry->data_alignment_factor,
		.fde_encoding = cie_fde_encoding(entry),
		.sized_aug = entry->augmentation && entry->augmentation[0] == 'z',
		.fde_aug_size = entry->fde_augmentation_data_size,
		.signal = entry->augmentation && strchr(entry->augmentation, 'S'),
	};
	cie_run_initial(cie, entry, eh_vaddr, eh_data);
	return 0;
}

static int fde_add(struct cfa_index *ix, size_t *cap, const Dwarf_FDE *entry, uint64_t eh_vaddr,
		   const Elf_Data *data)
{
	struct cfa_fde fde;
	uint32_t cie_index;
	const struct cfa_cie *cie = cie_at(ix, entry->CIE_pointer, &cie_index);

	if (!cie || !fde_of(entry, cie, eh_vaddr, data, &fde))
		return 0;	/* not read here: no rows, as libdw gives none */
	fde.cie = cie_index;
	if (array_reserve((void **)&ix->fdes, cap, ix->nfdes, sizeof(*ix->fdes), 256))
		return -ENOMEM;
	ix->fdes[ix->nfdes++] = fde;
	return 0;
}

int cfa_index_build(Elf *elf, Elf_Data *data, uint64_t eh_vaddr, struct cfa_index *ix, size_t *work,
		    size_t max_work)
{
	const unsigned char *ident = (const unsigned char *)elf_getident(elf, NULL);
	size_t cies_cap = 0, fdes_cap = 0;
	Dwarf_Off off = 0, next;
	Dwarf_CFI_Entry entry;
	int err = 0;

	memset(ix, 0, sizeof(*ix));
	if (!data || !ident)
		return -ENOENT;
	while (!err && dwarf_next_cfi(ident, data, true, off, &next, &entry) == 0) {
		if (++*work > max_work || next <= off)
			err = next <= off ? -EINVAL : -E2BIG;	/* (libdw never goes back: checked) */
		else if (dwarf_cfi_cie_p(&entry))
			err = cie_add(ix, &cies_cap, off, &entry.cie, eh_vaddr, data->d_buf);
		else
			err = fde_add(ix, &fdes_cap, &entry.fde, eh_vaddr, data);
		off = next;
	}
	if (!err && !ix->nfdes)
		err = -ENOENT;
	if (err) {
		cfa_index_free(ix);
		return err;
	}
	qsort(ix->fdes, ix->nfdes, sizeof(*ix->fdes), fde_cmp);
	ix->eh_vaddr = eh_vaddr;
	ix->eh_data = data->d_buf;
	return 0;
}

void cfa_index_free(struct cfa_index *ix)
{
	free(ix->cies);
	free(ix->fdes);
	memset(ix, 0, sizeof(*ix));
}

const struct cfa_fde *cfa_fde_at(const struct cfa_index *ix, uint64_t addr)
{
	size_t lo = 0, hi = ix->nfdes;

	while (lo < hi) {	/* the last start <= addr */
		size_t mid = lo + (hi - lo) / 2;

		if (ix->fdes[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && addr < ix->fdes[lo - 1].end ? &ix->fdes[lo - 1] : NULL;
}

/*
 * What libdw's dwarf_cfi_addrframe(a) gives is the state after every
 * instruction before the first advance past a, valid up to that advance's
 * location: so one run of the program gives each row in turn, the row at
 * `addr` ending at the first advance past it, where the next row begins.
 */
int cfa_fde_rows(const struct cfa_index *ix, const struct cfa_fde *fde, const struct cfa_walk *w,
		 uint64_t *stopped)
{
	const struct cfa_cie *cie = &ix->cies[fde->cie];
	struct exec x = { .cie = cie, .eh_vaddr = ix->eh_vaddr, .eh_data = ix->eh_data };
	const uint8_t *p = fde->insns;
	struct cfa_state s = cie->initial;
	struct unwind_row row;
	uint64_t addr = w->start, loc = fde->start;
	int rows = 0, err = 0;

	*stopped = addr;
	if (!cie->valid || addr < fde->start || addr >= fde->end)
		return 0;
	while (addr < w->limit && rows < w->max_rows) {
		uint64_t next = fde->end;	/* the program's end: the last row runs to the FDE's */

		if (p < fde->insns_end) {
			enum step st = step(&x, &s, &p, fde->insns_end, &loc);

			if (++*w->work > w->max_work)
				return -E2BIG;
			if (st == STEP_INVALID)
				break;	/* libdw gives no frame from here on */
			if (st == STEP_RULE || loc <= addr)
				continue;	/* the row at addr goes on */
			next = loc;
		}
		row_of_state(&s, cie->signal, &row, w->unsupported);
		rows++;
		++*w->work;
		if (w->fn && (err = w->fn(w->ctx, addr, &row)) != 0)
			return err;
		addr = next;
		if (addr >= fde->end)
			break;	/* past the FDE: libdw finds no frame there */
	}
	*stopped = addr;
	return 0;
}
