/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Function symbols of one ELF file: .symtab, .dynsym, .gnu_debugdata
 * (minidebuginfo) and separate debug files (build-id and .gnu_debuglink).
 */
#ifndef ELFSYMS_H
#define ELFSYMS_H

#include <stdbool.h>
#include <stdint.h>
#include "symtab.h"

#define ELFSYMS_BUILD_ID_HEX 129	/* up to 64 bytes of build id */

struct elf_load {		/* one PT_LOAD: file offset <-> link-time address */
	uint64_t vaddr;
	uint64_t offset;
	uint64_t filesz;
};

struct elf_syms {
	struct symtab tab;		/* keyed by link-time address (st_value) */
	struct elf_load *loads;
	size_t nloads;
	char build_id[ELFSYMS_BUILD_ID_HEX];	/* hex, "" when none */
	uint64_t *fde_starts;		/* functions' starts from .eh_frame_hdr: names unsymbolized code */
	uint64_t *fde_ends;
	size_t nfdes;
	size_t nsynthetic;		/* of tab.nsyms, names made up here (_start at the entry point) */
	bool xz_refused;		/* .gnu_debugdata needed more memory to inflate than allowed */
};

/*
 * Reads the ELF open at @fd.  @path is the file's path as seen from the root
 * directory @root_fd (safe_open.h's target_root_open of a process that maps
 * it): its debug files are looked for in that root only, none when @root_fd
 * is -1.
 * Returns 0 or -errno; on error @es is empty but safe to use and free.
 */
int elf_syms_load(struct elf_syms *es, int fd, const char *path, int root_fd);
void elf_syms_free(struct elf_syms *es);

/* File offset -> link-time address through the PT_LOAD holding it. */
bool elf_syms_vaddr(const struct elf_syms *es, uint64_t file_off, uint64_t *vaddr);

#endif /* ELFSYMS_H */
