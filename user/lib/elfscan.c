// SPDX-License-Identifier: GPL-2.0
/*
 * Lookups in an ELF file opened with libelf, shared by the CPython finder
 * (lib/cpython.c) and the data symbolizer (symbolize/datasym.c): see elfscan.h.
 */
#include <string.h>
#include <unistd.h>
#include "elfscan.h"

int elf_each_symbol(Elf *e, GElf_Word type, int (*fn)(const GElf_Sym *sym, const char *name, void *ctx),
		    void *ctx)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn))) {
		Elf_Data *data;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || !sh.sh_entsize ||
		    (type ? sh.sh_type != type : sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *name;
			int ret;

			if (!gelf_getsym(data, (int)i, &sym))
				continue;
			name = elf_strptr(e, sh.sh_link, sym.st_name);
			ret = fn(&sym, name ? name : "", ctx);
			if (ret)
				return ret;
		}
	}
	return 0;
}

struct wanted_list {
	struct elf_wanted *want;
	int nwant;
};

static int wanted_take(const GElf_Sym *sym, const char *name, void *ctx)
{
	struct wanted_list *l = ctx;

	if (!sym->st_value)
		return 0;
	for (int w = 0; w < l->nwant; w++)
		if (!l->want[w].found && strcmp(name, l->want[w].name) == 0) {
			l->want[w].value = sym->st_value;
			l->want[w].size = sym->st_size;
			l->want[w].found = true;
		}
	return 0;
}

void elf_find_symbols(Elf *e, struct elf_wanted *want, int nwant)
{
	struct wanted_list l = { .want = want, .nwant = nwant };

	elf_each_symbol(e, 0, wanted_take, &l);
}

bool elf_first_load_vaddr(Elf *e, uint64_t *vaddr)
{
	size_t n;

	if (elf_getphdrnum(e, &n))
		return false;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD) {
			*vaddr = ph.p_vaddr - ph.p_offset;
			return true;
		}
	}
	return false;
}

bool elf_read_vaddr(Elf *e, int fd, uint64_t vaddr, void *buf, size_t len)
{
	size_t n;

	if (elf_getphdrnum(e, &n))
		return false;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD || vaddr < ph.p_vaddr ||
		    vaddr + len > ph.p_vaddr + ph.p_filesz)
			continue;
		return pread(fd, buf, len, (off_t)(ph.p_offset + vaddr - ph.p_vaddr)) == (ssize_t)len;
	}
	return false;
}
