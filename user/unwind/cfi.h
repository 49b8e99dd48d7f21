/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One ELF file's .eh_frame turned into the compact rows the BPF walk
 * searches (bpf/unwind/dwarf.h), read with libdw's CFI interpreter.
 */
#ifndef UNWIND_CFI_H
#define UNWIND_CFI_H

#include <stddef.h>
#include <stdint.h>
#include <libelf.h>
#include "unwind_tables.h"

struct cfi_table {
	struct unwind_row *rows;	/* sorted by pc, no two neighbours alike */
	size_t nrows;
	uint64_t *fde_starts;		/* sorted start addresses of the functions (FDEs) */
	uint64_t *fde_ends;		/* their ends (0: not known) */
	size_t nfdes;
	size_t eh_frame_bytes;		/* size of .eh_frame, for the memory report */
	size_t unsupported;		/* rows whose CFA rule the walk cannot follow (it stops there) */
};

/*
 * The rows read from one function at most.  libdw replays an FDE's program
 * from its start for every address asked, so a function of n rows costs
 * n^2/2 steps: a hostile binary's FDE of 64k rows held the table builder for
 * seconds, and one of a million for hours.  Real code has far fewer (the most
 * in libLLVM-14, 110 MB: 574).  Past the bound, a gap row: the walk stops there.
 */
#define CFI_MAX_FUNCTION_ROWS 1024

/*
 * Builds @t from the ELF @elf.  Returns 0, -ENOENT when the file has no
 * .eh_frame/.eh_frame_hdr the walk can use, -ERANGE when its addresses do not
 * fit the rows' 32 bits, or -ENOMEM.  @t is empty but safe to free on error.
 */
int cfi_table_build(Elf *elf, struct cfi_table *t);
void cfi_table_free(struct cfi_table *t);

/*
 * The functions' start addresses from .eh_frame_hdr's sorted table, and their
 * ends (0 where the FDE is not in the usual form), into malloc'd arrays:
 * 0, -ENOENT (no table in a layout we read) or -ENOMEM.
 */
int cfi_fde_starts(Elf *elf, uint64_t **starts, uint64_t **ends, size_t *nstarts);

/* The start of the function holding @addr: the last of @starts <= @addr, if @addr is before its end; else 0. */
uint64_t cfi_function_start(const uint64_t *starts, const uint64_t *ends, size_t nstarts, uint64_t addr);

#endif /* UNWIND_CFI_H */
