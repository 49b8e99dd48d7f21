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
	size_t nfdes;
	size_t eh_frame_bytes;		/* size of .eh_frame, for the memory report */
	size_t unsupported;		/* rows whose CFA rule the walk cannot follow (it stops there) */
};

/*
 * Builds @t from the ELF @elf.  Returns 0, -ENOENT when the file has no
 * .eh_frame/.eh_frame_hdr the walk can use, -ERANGE when its addresses do not
 * fit the rows' 32 bits, or -ENOMEM.  @t is empty but safe to free on error.
 */
int cfi_table_build(Elf *elf, struct cfi_table *t);
void cfi_table_free(struct cfi_table *t);

/* Start of the function (FDE) holding @addr (an ELF virtual address), or 0 when none does. */
uint64_t cfi_function_start(const struct cfi_table *t, uint64_t addr);

#endif /* UNWIND_CFI_H */
