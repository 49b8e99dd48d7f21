// SPDX-License-Identifier: GPL-2.0
/*
 * One ELF file's function symbols.  A stripped file keeps .dynsym only; the
 * rest may be in a debug file (/usr/lib/debug/.build-id/xx/rest.debug, or
 * named by .gnu_debuglink) or, on Fedora-like systems, in .gnu_debugdata: an
 * xz-compressed ELF whose .symtab holds the functions missing from .dynsym.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <gelf.h>
#include <libelf.h>
#include <lzma.h>
#include <elfutils/libdwelf.h>
#include "cfi.h"
#include "elfnote.h"
#include "elfsyms.h"
#include "safe_open.h"
#include "util.h"

#define DEBUG_ROOT	"/usr/lib/debug"
#define MINIDEBUG_MAX	(256u << 20)	/* refuse to inflate anything larger */
/*
 * The most memory an xz decoder may take: what xz -9 needs (about 65 MiB).
 * Every preset fits; a stream that claims a larger dictionary (up to 4 GiB)
 * is refused, not obeyed.
 */
#define MINIDEBUG_MEMLIMIT	lzma_easy_decoder_memusage(9)

static void elf_init_once(void)
{
	static bool done;

	if (!done) {
		elf_version(EV_CURRENT);
		done = true;
	}
}

/* Global beats weak beats local; sized beats sizeless. */
static uint32_t sym_rank(const GElf_Sym *s)
{
	uint32_t rank;

	switch (GELF_ST_BIND(s->st_info)) {
	case STB_GLOBAL: rank = 0; break;
	case STB_WEAK: rank = 1; break;
	default: rank = 2; break;
	}
	return s->st_size ? rank : rank + 3;
}

static bool is_function(const GElf_Sym *s)
{
	int type = GELF_ST_TYPE(s->st_info);

	return (type == STT_FUNC || type == STT_GNU_IFUNC) &&
	       s->st_shndx != SHN_UNDEF && s->st_value;
}

static int add_section_symbols(struct symtab *tab, Elf *e, Elf_Scn *scn, const GElf_Shdr *sh)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t i, n;

	if (!data || !sh->sh_entsize || sh->sh_type == SHT_NOBITS)
		return 0;
	n = sh->sh_size / sh->sh_entsize;
	for (i = 0; i < n; i++) {
		GElf_Sym s;
		const char *name;

		if (!gelf_getsym(data, (int)i, &s) || !is_function(&s))
			continue;
		name = elf_strptr(e, sh->sh_link, s.st_name);
		if (!name || !*name)
			continue;
		if (symtab_add(tab, s.st_value, s.st_size, name, sym_rank(&s)))
			return -ENOMEM;
	}
	return 0;
}

/* Adds the function symbols of every section of @type; *found: one such section exists. */
static int add_symbols(struct symtab *tab, Elf *e, GElf_Word type, bool *found)
{
	Elf_Scn *scn = NULL;
	int err;

	*found = false;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != type)
			continue;
		*found = true;
		err = add_section_symbols(tab, e, scn, &sh);
		if (err)
			return err;
	}
	return 0;
}

static int read_loads(struct elf_syms *es, Elf *e)
{
	size_t i, n;

	if (elf_getphdrnum(e, &n) || !n)
		return 0;
	es->loads = calloc(n, sizeof(*es->loads));
	if (!es->loads)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		es->loads[es->nloads++] = (struct elf_load){
			.vaddr = ph.p_vaddr, .offset = ph.p_offset, .filesz = ph.p_filesz,
		};
	}
	return 0;
}

static Elf_Scn *find_section(Elf *e, const char *want)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(e, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(e, shstrndx, sh.sh_name);
		if (name && !strcmp(name, want))
			return scn;
	}
	return NULL;
}

/* Inflates one .xz stream into a malloc'd buffer; -E2BIG: it needs more than MINIDEBUG_MEMLIMIT. */
static int xz_decode(const uint8_t *in, size_t inlen, uint8_t **out, size_t *outlen)
{
	lzma_stream strm = LZMA_STREAM_INIT;
	size_t cap = inlen * 4 + 4096;
	uint8_t *buf = NULL, *nbuf;
	lzma_ret ret;
	int err = -EINVAL;

	if (lzma_stream_decoder(&strm, MINIDEBUG_MEMLIMIT, 0) != LZMA_OK)
		return -ENOMEM;
	strm.next_in = in;
	strm.avail_in = inlen;
	for (;;) {
		if (cap > MINIDEBUG_MAX || !(nbuf = realloc(buf, cap))) {
			err = -ENOMEM;
			goto out;
		}
		buf = nbuf;
		strm.next_out = buf + strm.total_out;
		strm.avail_out = cap - strm.total_out;
		ret = lzma_code(&strm, LZMA_FINISH);
		if (ret == LZMA_STREAM_END)
			break;
		if (ret == LZMA_MEMLIMIT_ERROR)
			err = -E2BIG;
		if (ret != LZMA_OK && ret != LZMA_BUF_ERROR)
			goto out;
		if (strm.avail_out)	/* stuck with room left: truncated input */
			goto out;
		cap *= 2;
	}
	*out = buf;
	*outlen = strm.total_out;
	buf = NULL;
	err = 0;
out:
	lzma_end(&strm);
	free(buf);
	return err;
}

/* .gnu_debugdata: the .symtab of an embedded xz-compressed ELF. */
static int add_minidebuginfo(struct elf_syms *es, Elf *e, const char *path)
{
	Elf_Scn *scn = find_section(e, ".gnu_debugdata");
	Elf_Data *data = scn ? elf_rawdata(scn, NULL) : NULL;
	uint8_t *image = NULL;
	size_t len;
	bool found;
	Elf *mini;
	int err;

	if (!data || !data->d_size)
		return 0;
	err = xz_decode(data->d_buf, data->d_size, &image, &len);
	if (err == -E2BIG) {
		es->xz_refused = true;
		log_warn("%s: .gnu_debugdata needs more than %" PRIu64 " MiB to inflate: refused (its names are "
			 "lost)", path, MINIDEBUG_MEMLIMIT >> 20);
	}
	if (err)
		return err == -ENOMEM ? err : 0;	/* a corrupt section only costs names */
	mini = elf_memory((char *)image, len);
	err = mini ? add_symbols(&es->tab, mini, SHT_SYMTAB, &found) : 0;
	if (mini)
		elf_end(mini);
	free(image);
	return err;
}

/* A debug file is mmapped, not read: bounded only against a sparse file of any size. */
#define MAX_DEBUG_FILE_SIZE	(4ull << 30)

/*
 * Adds the .symtab of debug file @path, in the root @root_fd, if it belongs to
 * @es.  1: added, 0: not usable.  Only there: a debug file of our own root
 * would be one the process named, not its own.
 */
static int add_debug_file(struct elf_syms *es, int root_fd, const char *path)
{
	char id[ELFSYMS_BUILD_ID_HEX];
	bool found = false;
	int fd, err = 0;
	Elf *e;

	if (root_fd < 0)
		return 0;
	fd = target_open_in(root_fd, path, MAX_DEBUG_FILE_SIZE, 0, NULL);
	if (fd < 0)
		return 0;
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF)
		goto out;
	elf_build_id_hex(e, id, sizeof(id));
	if (es->build_id[0] && id[0] && strcmp(id, es->build_id))
		goto out;	/* a debug file of another build */
	err = add_symbols(&es->tab, e, SHT_SYMTAB, &found);
out:
	if (e)
		elf_end(e);
	close(fd);
	if (err)
		return err;
	return found;
}

static int add_build_id_debug(struct elf_syms *es, int root_fd)
{
	char path[PATH_MAX];

	if (strlen(es->build_id) < 3)
		return 0;
	snprintf(path, sizeof(path), DEBUG_ROOT "/.build-id/%.2s/%s.debug",
		 es->build_id, es->build_id + 2);
	return add_debug_file(es, root_fd, path);
}

/* gdb's search order for a debuglink: next to the file, .debug/, then under /usr/lib/debug. */
static int add_debuglink_debug(struct elf_syms *es, Elf *e, const char *path, int root_fd)
{
	static const char *const fmts[] = { "%.*s/%s", "%.*s/.debug/%s", DEBUG_ROOT "%.*s/%s" };
	const char *slash = strrchr(path, '/');
	char cand[PATH_MAX];
	const char *link;
	GElf_Word crc;
	size_t i;
	int ret;

	link = dwelf_elf_gnu_debuglink(e, &crc);
	if (!link || !slash || strchr(link, '/'))
		return 0;
	for (i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
		if (snprintf(cand, sizeof(cand), fmts[i], (int)(slash - path), path, link) >= (int)sizeof(cand))
			continue;
		ret = add_debug_file(es, root_fd, cand);
		if (ret)
			return ret;
	}
	return 0;
}

static int read_symbols(struct elf_syms *es, Elf *e, const char *path, int root_fd)
{
	bool has_symtab, has_dynsym;
	int ret;

	ret = add_symbols(&es->tab, e, SHT_SYMTAB, &has_symtab);
	if (!ret)
		ret = add_symbols(&es->tab, e, SHT_DYNSYM, &has_dynsym);
	if (ret || has_symtab)
		return ret;
	ret = add_build_id_debug(es, root_fd);
	if (!ret)
		ret = add_debuglink_debug(es, e, path, root_fd);
	if (!ret)
		ret = add_minidebuginfo(es, e, path);
	return ret < 0 ? ret : 0;
}

/*
 * The entry point is _start even in a stripped file (ld.so's own, or a
 * stripped program's): named so that whole stacks end in a name, sized by its
 * FDE so that it never swallows the unnamed code after it.  A real symbol at
 * the same address wins (rank).
 */
static void add_entry_point(struct elf_syms *es, Elf *e)
{
	GElf_Ehdr ehdr;
	uint64_t next = 0;

	if (!gelf_getehdr(e, &ehdr) || !ehdr.e_entry || !es->nfdes)
		return;
	for (size_t i = 0; i < es->nfdes; i++) {
		if (es->fde_starts[i] > ehdr.e_entry) {
			next = es->fde_starts[i];	/* the next function: _start's end, FDE or not */
			break;
		}
	}
	if (next > ehdr.e_entry && !symtab_add(&es->tab, ehdr.e_entry, next - ehdr.e_entry, "_start", UINT32_MAX))
		es->nsynthetic++;
}

int elf_syms_load(struct elf_syms *es, int fd, const char *path, int root_fd)
{
	Elf *e;
	int err;

	memset(es, 0, sizeof(*es));
	elf_init_once();
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e)
		return -EINVAL;
	if (elf_kind(e) != ELF_K_ELF) {
		err = -ENOEXEC;
		goto out;
	}
	elf_build_id_hex(e, es->build_id, sizeof(es->build_id));
	/* Stripped code is still named per function (module+0xSTART), not per address. */
	cfi_fde_starts(e, &es->fde_starts, &es->fde_ends, &es->nfdes);
	err = read_loads(es, e);
	if (!err)
		err = read_symbols(es, e, path, root_fd);
	add_entry_point(es, e);
	symtab_finish(&es->tab);
out:
	elf_end(e);
	return err;
}

void elf_syms_free(struct elf_syms *es)
{
	symtab_free(&es->tab);
	free(es->fde_starts);
	free(es->fde_ends);
	es->fde_starts = es->fde_ends = NULL;
	es->nfdes = 0;
	free(es->loads);
	es->loads = NULL;
	es->nloads = 0;
}

bool elf_syms_vaddr(const struct elf_syms *es, uint64_t file_off, uint64_t *vaddr)
{
	size_t i;

	for (i = 0; i < es->nloads; i++) {
		const struct elf_load *l = &es->loads[i];

		if (file_off >= l->offset && file_off - l->offset < l->filesz) {
			*vaddr = file_off - l->offset + l->vaddr;
			return true;
		}
	}
	return false;
}
