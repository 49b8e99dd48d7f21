/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Lookups in an ELF file already opened with libelf: symbols by name (the
 * CPython finder) or by address (the data symbolizer), the link-time address
 * of the first PT_LOAD, and bytes at a link-time address.  One walk of the
 * symbol sections for both directions.
 */
#ifndef ELFSCAN_H
#define ELFSCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <gelf.h>

/*
 * Each symbol of the sections of @type (SHT_SYMTAB or SHT_DYNSYM; 0: both,
 * in section order) with its name ("" when it has none) to @fn, until @fn
 * returns non-zero: that value, or 0 at the end.
 */
int elf_each_symbol(Elf *e, GElf_Word type, int (*fn)(const GElf_Sym *sym, const char *name, void *ctx),
		    void *ctx);

/* A symbol looked up by name: the first defined one (value not 0) of .symtab or .dynsym. */
struct elf_wanted {
	const char *name;
	uint64_t value;
	uint64_t size;
	bool found;
};

/* Fills each of @want (@nwant) found in .symtab or .dynsym (either may be missing: Debian strips .symtab). */
void elf_find_symbols(Elf *e, struct elf_wanted *want, int nwant);

/* The lowest PT_LOAD's address less its file offset: what maps to file offset 0 (0 in a PIE or library). */
bool elf_first_load_vaddr(Elf *e, uint64_t *vaddr);

/* @len bytes at link-time address @vaddr of the file @fd (@e's), read from a PT_LOAD's file bytes. */
bool elf_read_vaddr(Elf *e, int fd, uint64_t vaddr, void *buf, size_t len);

#endif /* ELFSCAN_H */
