// SPDX-License-Identifier: GPL-2.0
/*
 * Data symbols: the global variable at a user address, from the .symtab/.dynsym objects of the
 * file mapped below it (datasym.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "datasym.h"
#include "elfscan.h"
#include "procmaps.h"
#include "safe_open.h"

#define DATASYM_MAX_SIZE (4ull << 30)	/* mmapped by libelf: a bound against sparse files only */

/* One file mapping of /proc/PID/maps. */
struct file_map {
	uint64_t start, end, offset, ino;
	char path[PATH_MAX];
};

/*
 * The file mapped nearest below @addr (its .bss lies in the anonymous mapping
 * right after its last file mapping) and that file's offset-0 mapping, which
 * gives the load bias: from @f, a /proc/PID/maps (or, for the fuzzer, any bytes).
 */
/* One maps line of a file: start, end, offset, inode and the path.  False for other lines. */
static bool file_map_from_line(const struct maps_line *ml, struct file_map *m)
{
	if (!maps_line_is_file(ml))
		return false;
	m->start = ml->start;
	m->end = ml->end;
	m->offset = ml->offset;
	m->ino = ml->ino;
	return snprintf(m->path, sizeof(m->path), "%s", ml->path) < (int)sizeof(m->path);
}

/* What find_maps_in() looks for: the file mapped nearest below addr, then its offset-0 mapping. */
struct maps_search {
	uint64_t addr;
	struct file_map *below, *base;
	bool found;
};

static int below_line(const struct maps_line *ml, void *ctx)
{
	struct maps_search *s = ctx;
	struct file_map m;

	if (file_map_from_line(ml, &m) && m.start <= s->addr) {
		*s->below = m;
		s->found = true;
	}
	return 0;
}

static int base_line(const struct maps_line *ml, void *ctx)
{
	struct maps_search *s = ctx;
	struct file_map m;

	if (!file_map_from_line(ml, &m) || m.offset != 0 || strcmp(m.path, s->below->path))
		return 0;
	*s->base = m;
	return 1;
}

static int find_maps_in(FILE *f, uint64_t addr, struct file_map *below, struct file_map *base)
{
	struct maps_search s = { .addr = addr, .below = below, .base = base };

	maps_each(f, below_line, &s);
	rewind(f);
	if (s.found)
		maps_each(f, base_line, &s);
	return s.found && base->path[0] ? 0 : -ENOENT;
}

static int find_maps(uint32_t tgid, uint64_t addr, struct file_map *below, struct file_map *base)
{
	FILE *f = proc_maps_open(tgid);
	int err;

	if (!f)
		return -errno;
	err = find_maps_in(f, addr, below, base);
	fclose(f);
	return err;
}

/* What find_object() looks for: a data object covering vaddr, named into out. */
struct object_search {
	uint64_t vaddr;
	char *out;
	size_t len;
};

static int object_at(const GElf_Sym *s, const char *name, void *ctx)
{
	const struct object_search *os = ctx;

	if (GELF_ST_TYPE(s->st_info) != STT_OBJECT || !*name || os->vaddr < s->st_value ||
	    os->vaddr >= s->st_value + (s->st_size ? s->st_size : 1))
		return 0;
	if (os->vaddr == s->st_value)
		snprintf(os->out, os->len, "%s", name);
	else
		snprintf(os->out, os->len, "%s+0x%" PRIx64, name, os->vaddr - s->st_value);
	return 1;
}

/* A data object covering @vaddr in the symbol sections of @type. */
static int find_object(Elf *e, GElf_Word type, uint64_t vaddr, char *out, size_t len)
{
	struct object_search os = { .vaddr = vaddr, .out = out, .len = len };

	return elf_each_symbol(e, type, object_at, &os) ? 0 : -ENOENT;
}

int data_symbol_name(uint32_t tgid, uint64_t addr, char *out, size_t len)
{
	struct file_map below = { 0 }, base = { 0 };
	uint64_t first_vaddr;
	struct stat st;
	Elf *e;
	int fd, err = find_maps(tgid, addr, &below, &base);

	if (err)
		return err;
	/* Through map_files (the file as mapped, even deleted) or the process's root: that file only. */
	fd = target_open_mapped(tgid, base.start, base.end, base.path, DATASYM_MAX_SIZE, &st);
	if (fd < 0)
		return fd;
	if (st.st_ino != base.ino) {
		close(fd);
		return -ESTALE;
	}
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	err = e && elf_first_load_vaddr(e, &first_vaddr) ? 0 : -ENOEXEC;
	if (!err) {
		uint64_t vaddr = addr - base.start + first_vaddr;

		err = find_object(e, SHT_SYMTAB, vaddr, out, len);
		if (err)
			err = find_object(e, SHT_DYNSYM, vaddr, out, len);
	}
	if (e)
		elf_end(e);
	close(fd);
	return err;
}
