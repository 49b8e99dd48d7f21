/* SPDX-License-Identifier: GPL-2.0 */
/* ELF notes: the GNU build ID of an ELF file, as hex. */
#ifndef ELFNOTE_H
#define ELFNOTE_H

#include <stddef.h>
#include <libelf.h>

/* @e's GNU build ID as hex into @hex; "" when it has none or it does not fit. */
void elf_build_id_hex(Elf *e, char *hex, size_t hexlen);

#endif /* ELFNOTE_H */
