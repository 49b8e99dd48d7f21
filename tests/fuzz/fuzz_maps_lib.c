// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz_maps's other readers: the data-symbol search (datasym.c, `--lock-hold`
 * names of lock addresses) and the search for a mapped library (procmaps.c,
 * libc for uprobes, libcuda).  Both .c files are included for their static
 * functions.  The line parser every maps reader shares is checked against the
 * bytes: a path is the field after the inode, never a '/' of another field.
 */
#include "../../user/symbolize/datasym.c"
#include "../../user/lib/procmaps.c"
#include <ctype.h>

void fuzz_lib_maps(FILE *f, const uint8_t *data, size_t size);

static bool any_file(const char *path)
{
	return true;
}

static bool libc_file(const char *path)
{
	return strstr(path, "/libc.so") != NULL;
}

/*
 * What maps_line_parse must answer, from the bytes themselves: a path it
 * calls a file's starts with '/', is the rest of the line, and follows the
 * inode field (a digit, then blanks): never a '/' inside another field, such
 * as an anonymous mapping's name "[anon:/x/libcuda.so.1]".
 */
static void check_line(const char *line, const struct maps_line *m)
{
	const char *p = m->path;

	if (!maps_line_is_file(m))
		return;
	if (m->path[0] != '/' || !m->ino || m->path <= line || strchr(m->path, '\n'))
		abort();
	while (p > line && isspace((unsigned char)p[-1]))
		p--;
	if (p == m->path || p == line || !isdigit((unsigned char)p[-1]))
		abort();	/* the path does not follow the inode */
}

static bool no_open(const struct mapped_file *file, void *ctx)
{
	abort();	/* pid 0 has no root: nothing is opened */
}

void fuzz_lib_maps(FILE *f, const uint8_t *data, size_t size)
{
	static const uint64_t addrs[] = { 0, 0x7f0000001000, UINT64_MAX };
	struct file_map below, base;
	struct maps_line m;
	char *line = NULL;
	size_t cap = 0;
	unsigned int refused = 0, files = 0;
	char *last = NULL;

	for (size_t i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
		memset(&below, 0, sizeof(below));
		memset(&base, 0, sizeof(base));
		find_maps_in(f, addrs[i], &below, &base);
		rewind(f);
	}
	/* Each line as every reader parses it; the runs of file names any_file matches. */
	while (getline(&line, &cap, f) > 0) {
		if (!maps_line_parse(line, &m))
			continue;
		check_line(line, &m);
		if (last && strcmp(m.path, last) == 0)
			continue;
		free(last);
		last = strdup(m.path);
		files++;
	}
	free(last);
	free(line);
	rewind(f);
	/* pid 0: every name that matches is refused (none can be opened), one per run of lines. */
	mapped_files_in(f, 0, any_file, no_open, NULL, &refused);
	if (refused != files)
		abort();
	rewind(f);
	mapped_files_in(f, 0, libc_file, no_open, NULL, &refused);
}
