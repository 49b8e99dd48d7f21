// SPDX-License-Identifier: GPL-2.0
/* /proc/kallsyms: read once, text symbols only, sorted for binary search. */
#include <stdbool.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <elf.h>
#include <fcntl.h>
#include <unistd.h>
#include "kallsyms.h"

/* Text symbol types; global ones win over local and weak aliases at one address. */
static int text_rank(char type)
{
	switch (type) {
	case 'T': return 0;
	case 't': return 1;
	case 'W': case 'w': return 2;
	default: return -1;
	}
}

/*
 * "ffffffff81000000 T _stext\t[mod]": fills addr/type/name; the module is cut,
 * or kept as "_stext [mod]" (what the kernel's %ps prints) when @keep_module.
 * A JIT-ed BPF program is listed as "bpf_prog_TAG_NAME\t[bpf]", but %ps names
 * it without the brackets (bpf_address_lookup sets no module), so "[bpf]" is
 * always cut: `aperture dump` and the pinned iterator print the same frame.
 */
static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;	/* lower case */
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

static int parse_line(char *line, uint64_t *addr, char *type, char **name, bool keep_module)
{
	char *end = line, *p;
	uint64_t value = 0;
	int digit;

	/* The address: 1-16 hex digits, as the kernel prints them (strtoull also took signs, spaces and 0x). */
	for (; (digit = hex_digit(*end)) >= 0 && end - line < 16; end++)
		value = value << 4 | (uint64_t)digit;
	*addr = value;
	if (end == line || *end != ' ' || !end[1] || end[2] != ' ')
		return -EINVAL;
	*type = end[1];
	*name = end + 3;
	for (p = *name; *p && !is_space(*p); p++)
		;
	if (keep_module && *p == '\t' && p[1] == '[' && strncmp(p + 1, "[bpf]", 5) != 0) {
		*p = ' ';
		p = strchr(p, ']');
		p = p ? p + 1 : *name + strlen(*name);
	}
	*p = '\0';
	return **name ? 0 : -EINVAL;
}

struct loading {
	struct kallsyms *ks;
	bool as_printk;
	uint32_t line_no;
};

static int add_line(char *line, void *ctx)
{
	struct loading *l = ctx;
	uint32_t line_no = l->line_no++;
	uint64_t addr;
	char type, *name;
	int rank;

	if (parse_line(line, &addr, &type, &name, l->as_printk))
		return 0;
	rank = text_rank(type);
	if (rank < 0 || !addr)
		return 0;
	if (l->as_printk)
		rank = (int)line_no;	/* the kernel names an address by its first alias */
	if (!l->ks->text_start || addr < l->ks->text_start)
		l->ks->text_start = addr;
	return symtab_add(&l->ks->tab, addr, 0, name, (uint32_t)rank);
}

#define READ_CHUNK (64u << 10)	/* 16 pages: each new page costs ~10 us on these VMs */

typedef int (*line_fn)(char *line, void *ctx);	/* < 0: error, > 0: stop, 0: go on */

/*
 * Every complete line of @buf[0, *len) to @fn, in place; what is left (a line
 * cut by the read) moves to the front.  A line longer than the whole buffer is
 * dropped up to its end (*skipping).
 */
static int each_line(char *buf, size_t *len, bool *skipping, line_fn fn, void *ctx)
{
	char *line = buf, *end = buf + *len, *nl;
	int ret = 0;

	while (!ret && (nl = memchr(line, '\n', (size_t)(end - line)))) {
		*nl = '\0';
		if (!*skipping)
			ret = fn(line, ctx);
		*skipping = false;
		line = nl + 1;
	}
	if (ret)
		return ret;	/* stopped: what is left is not read */
	*len = (size_t)(end - line);
	if (*len == READ_CHUNK) {	/* no newline in a whole buffer: not a kallsyms line */
		*skipping = true;
		*len = 0;
	}
	memmove(buf, line, *len);
	return 0;
}

/*
 * @path read in 64 KiB pieces, each line to @fn in place (getline alone took
 * ~10 of our ~45 ms a load: a copy of every line), until @fn stops it.
 * 0, > 0 when @fn stopped, or -errno.
 */
static int read_lines(const char *path, line_fn fn, void *ctx)
{
	char *buf = malloc(READ_CHUNK + 1);
	bool skipping = false;
	size_t len = 0;
	ssize_t n = 0;
	int fd, ret = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || !buf) {
		ret = fd < 0 ? -errno : -ENOMEM;
		goto out;
	}
	while (!ret && (n = read(fd, buf + len, READ_CHUNK - len)) > 0) {
		len += (size_t)n;
		ret = each_line(buf, &len, &skipping, fn, ctx);
	}
	if (!ret && n < 0)
		ret = -errno;
	if (!ret && len && !skipping) {	/* a last line without its newline */
		buf[len] = '\0';
		ret = fn(buf, ctx);
	}
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return ret;
}

static int load(struct kallsyms *ks, const char *path, bool as_printk)
{
	struct loading l = { .ks = ks, .as_printk = as_printk };
	int err;

	memset(ks, 0, sizeof(*ks));
	err = read_lines(path, add_line, &l);
	if (!err && !ks->tab.nsyms)
		err = -ENOENT;	/* kptr_restrict: every address reads 0 */
	if (err) {
		kallsyms_free(ks);
		return err;
	}
	symtab_finish(&ks->tab);
	return 0;
}

/* Stops at the first text symbol with an address: the kernel's lowest (kallsyms is sorted, modules last). */
static int first_text(char *line, void *ctx)
{
	uint64_t addr, *start = ctx;
	char type, *name;

	if (parse_line(line, &addr, &type, &name, false) || text_rank(type) < 0 || !addr)
		return 0;
	*start = addr;
	return 1;
}

uint64_t kallsyms_text_start(const char *path)
{
	uint64_t start = 0;

	return read_lines(path, first_text, &start) > 0 ? start : 0;
}

int kallsyms_load(struct kallsyms *ks, const char *path)
{
	return load(ks, path, false);
}

int kallsyms_load_printk(struct kallsyms *ks, const char *path)
{
	return load(ks, path, true);
}

void kallsyms_free(struct kallsyms *ks)
{
	symtab_free(&ks->tab);
	ks->text_start = 0;
}

static void to_hex(const unsigned char *bytes, size_t n, char *hex, size_t hexlen)
{
	size_t i;

	hex[0] = '\0';
	if (2 * n + 1 > hexlen)
		return;
	for (i = 0; i < n; i++)
		sprintf(hex + 2 * i, "%02x", bytes[i]);
}

#define ALIGN4(x) (((x) + 3u) & ~3u)

void kernel_build_id(const char *notes_path, char *hex, size_t hexlen)
{
	unsigned char buf[4096];
	size_t off = 0;
	ssize_t len;
	int fd;

	hex[0] = '\0';
	fd = open(notes_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	len = read(fd, buf, sizeof(buf));
	close(fd);
	/* A sequence of Elf64_Nhdr (same layout as Elf32_Nhdr), name and desc 4-aligned. */
	while (len > 0 && off + sizeof(Elf64_Nhdr) <= (size_t)len) {
		Elf64_Nhdr nh;
		size_t name_off = off + sizeof(nh), desc_off;

		memcpy(&nh, buf + off, sizeof(nh));
		desc_off = name_off + ALIGN4(nh.n_namesz);
		if (desc_off + nh.n_descsz > (size_t)len)
			return;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    !memcmp(buf + name_off, "GNU", 4)) {
			to_hex(buf + desc_off, nh.n_descsz, hex, hexlen);
			return;
		}
		off = desc_off + ALIGN4(nh.n_descsz);
	}
}
