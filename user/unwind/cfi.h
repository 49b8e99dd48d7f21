/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One ELF file's .eh_frame turned into the compact rows the BPF walk
 * searches (bpf/include/unwind_tables.h): x86_64 files only.
 */
#ifndef UNWIND_CFI_H
#define UNWIND_CFI_H

#include <stdbool.h>
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
	/*
	 * Every row where a function can make a call keeps the frame-pointer
	 * convention: CFA = rbp + 16 with rbp saved at CFA - 16.  Other rows may
	 * only be a function's entry or return (CFA = rsp + 8), the prologue
	 * from `push %rbp` to `mov %rsp,%rbp` (CFA = rsp + 16, rbp saved, then
	 * CFA = rbp + 16), PLT stubs (in .plt, .plt.sec, .plt.got), gaps and the
	 * outermost frame: no call is made under them, so no return address is
	 * in them.  A file built with frame pointers has it (a caller's frame in
	 * it is then stepped by frame pointers, no row searched: its row says
	 * that anyway); one function without (-fomit-frame-pointer, a `sub
	 * $8,%rsp` before a call, an expression the walk cannot follow) takes it
	 * away.
	 */
	bool fp_frames;
	size_t work;			/* steps taken to build it (see CFI_MAX_FILE_WORK) */
};
/* What @t's arrays take on the heap. */
size_t cfi_table_bytes(const struct cfi_table *t);

/*
 * The rows read from one function at most.  Real code has far fewer (the
 * most in libLLVM-14, 110 MB: 574); a hostile FDE may have millions, and each
 * row is an entry of the shared rows map.  Past the bound, a gap row: the
 * walk stops there.  (It also bounded libdw's replay of an FDE from its start
 * for every row, n^2/2 steps, before cfaprog.c ran each program once.)
 */
#define CFI_MAX_FUNCTION_ROWS 1024

/*
 * The steps one file may take, past which it gets no table (-E2BIG): each
 * .eh_frame entry, each CFA instruction run and each row is one.  The largest
 * real file here, libclang-cpp.so.14 (59 MB, 83k functions, 1M rows), takes
 * 3.3M (~120 ms); tests/tools/gen_ehframe.py's 34 FDEs of a million
 * DW_CFA_nop each are refused at the bound.
 */
#define CFI_MAX_FILE_WORK ((size_t)32 << 20)

/*
 * Builds @t from the ELF @elf.  Returns 0, -ENOENT when the file has no
 * .eh_frame/.eh_frame_hdr the walk can use, -ERANGE when its addresses do not
 * fit the rows' 32 bits, -E2BIG past CFI_MAX_FILE_WORK, or -ENOMEM.  @t is empty but safe to free on error.
 */
int cfi_table_build(Elf *elf, struct cfi_table *t);
void cfi_table_free(struct cfi_table *t);

/*
 * The functions' start addresses from .eh_frame_hdr's sorted table, and their
 * ends (0 where the FDE is not in the usual form), into malloc'd arrays:
 * 0, -ENOENT (no table in a layout we read), -E2BIG (.eh_frame walked for
 * want of the table, past CFI_MAX_FILE_WORK entries) or -ENOMEM.
 */
int cfi_fde_starts(Elf *elf, uint64_t **starts, uint64_t **ends, size_t *nstarts);

/* The start of the function holding @addr: the last of @starts <= @addr, if @addr is before its end; else 0. */
uint64_t cfi_function_start(const uint64_t *starts, const uint64_t *ends, size_t nstarts, uint64_t addr);

#endif /* UNWIND_CFI_H */
