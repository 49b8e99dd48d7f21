/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Data symbols: the name of the global variable at a user address (a
 * `static pthread_mutex_t big_lock` in .data or .bss of a binary or library).
 */
#ifndef DATASYM_H
#define DATASYM_H

#include <stddef.h>
#include <stdint.h>

/*
 * Names @addr of process @tgid from the ELF symbols (.symtab, else .dynsym)
 * of the file mapped just below it: "big_lock" or "big_lock+0x8".  The
 * process must be alive.  0, or -ENOENT when no symbol covers it (a heap or
 * stack address), or another -errno.
 */
int data_symbol_name(uint32_t tgid, uint64_t addr, char *out, size_t len);

#endif /* DATASYM_H */
