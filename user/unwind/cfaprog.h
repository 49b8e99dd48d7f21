/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The CFA programs of one .eh_frame: every FDE with its CIE, found by
 * address, and run once from its start to its end, row by row, as the rules
 * the BPF walk follows (bpf/include/unwind_tables.h).
 */
#ifndef UNWIND_CFAPROG_H
#define UNWIND_CFAPROG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <libelf.h>
#include "unwind_tables.h"

struct cfa_cie;

struct cfa_fde {
	uint64_t start, end;			/* the code it covers: [start, end) */
	const uint8_t *insns, *insns_end;	/* its program, inside the section's data */
	uint32_t cie;				/* index of its CIE */
};

struct cfa_index {
	struct cfa_cie *cies;
	size_t ncies;
	struct cfa_fde *fdes;			/* sorted by start */
	size_t nfdes;
	uint64_t eh_vaddr;			/* .eh_frame's address and data (DW_CFA_set_loc's pcrel) */
	const uint8_t *eh_data;
};

/*
 * Every CIE and FDE of @elf's .eh_frame (@data, at @eh_vaddr), each entry one
 * step of *@work: 0, -ENOENT (no FDE read here), -EINVAL (an entry that goes
 * back), -E2BIG (past @max_work) or -ENOMEM.  @ix is empty on error.
 */
int cfa_index_build(Elf *elf, Elf_Data *data, uint64_t eh_vaddr, struct cfa_index *ix, size_t *work,
		    size_t max_work);
void cfa_index_free(struct cfa_index *ix);

/* The FDE whose range holds @addr (the last to start at or before it), or NULL. */
const struct cfa_fde *cfa_fde_at(const struct cfa_index *ix, uint64_t addr);

/* Called with each row; a non-zero return stops the walk and is returned. */
typedef int (*cfa_row_fn)(void *ctx, uint64_t pc, const struct unwind_row *row);

struct cfa_walk {
	uint64_t start, limit;	/* rows from start (inside the FDE), while below limit */
	int max_rows;
	size_t *work;		/* one step per instruction and per row */
	size_t max_work;	/* past it: -E2BIG */
	size_t *unsupported;	/* rows whose rules the walk cannot follow */
	cfa_row_fn fn;		/* NULL: only find where the rows end */
	void *ctx;
};

/*
 * Runs @fde's program once and gives the row at @w->start and each later one
 * (at most @w->max_rows, below @w->limit) to @w->fn: what libdw's
 * dwarf_cfi_addrframe says at each of those addresses.  *@stopped: where the
 * rows stopped (the FDE's end, the limit, the row bound, or an instruction
 * that is not valid: a gap begins there).  Returns 0 or @w->fn's error.
 */
int cfa_fde_rows(const struct cfa_index *ix, const struct cfa_fde *fde, const struct cfa_walk *w,
		 uint64_t *stopped);

#endif /* UNWIND_CFAPROG_H */
