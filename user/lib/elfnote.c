// SPDX-License-Identifier: GPL-2.0
/* ELF notes: the GNU build ID (the symbolizer's debug-file search, the unwinder's files map). */
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <gelf.h>
#include "elfnote.h"

/* The NT_GNU_BUILD_ID note in @data, its length (0: none). */
static size_t build_id_note(Elf_Data *data, const void **id)
{
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nh;

	while (data && (next = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == sizeof(ELF_NOTE_GNU) &&
		    !memcmp((const char *)data->d_buf + name_off, ELF_NOTE_GNU, sizeof(ELF_NOTE_GNU)) &&
		    nh.n_descsz) {
			*id = (const char *)data->d_buf + desc_off;
			return nh.n_descsz;
		}
		off = next;
	}
	return 0;
}

/*
 * The GNU build ID of @e, from its SHT_NOTE sections or, in a file without
 * section headers, its PT_NOTE segments: what dwelf_elf_gnu_build_id() finds,
 * whose object would link libdwfl, and through it bzip2 (about 90 KB).
 */
static ssize_t elf_build_id(Elf *e, const void **id)
{
	Elf_Scn *scn = elf_nextscn(e, NULL);
	size_t i, n, len = 0;

	if (scn) {
		for (; scn && !len; scn = elf_nextscn(e, scn)) {
			GElf_Shdr sh;

			if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_NOTE)
				len = build_id_note(elf_getdata(scn, NULL), id);
		}
		return len;
	}
	if (elf_getphdrnum(e, &n))
		return -1;
	for (i = 0; i < n && !len; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_NOTE)
			len = build_id_note(elf_getdata_rawchunk(e, (int64_t)ph.p_offset, ph.p_filesz,
								 ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR), id);
	}
	return len;
}

void elf_build_id_hex(Elf *e, char *hex, size_t hexlen)
{
	const unsigned char *id;
	const void *raw;
	ssize_t i, n = elf_build_id(e, &raw);

	hex[0] = '\0';
	if (n <= 0 || (size_t)(2 * n + 1) > hexlen)
		return;
	id = raw;
	for (i = 0; i < n; i++)
		sprintf(hex + 2 * i, "%02x", id[i]);
}
