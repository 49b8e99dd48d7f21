// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz_maps's other readers: the data-symbol search (datasym.c, `--lock-hold`
 * names of lock addresses) and the search for a mapped library (procmaps.c,
 * libc for uprobes, libcuda).  Both .c files are included for their static
 * functions.  The library search is checked against the bytes: the file it
 * names is the first line's that holds one.
 */
#include "../../user/symbolize/datasym.c"
#include "../../user/lib/procmaps.c"

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
 * What proc_mapped_file must answer with any_file, from the bytes themselves:
 * the first line holding a '/' whose path fits in @len, from that '/' to the
 * line's end.  False when there is none.
 */
static bool first_mapped_file(const uint8_t *data, size_t size, char *path, size_t len)
{
	for (size_t at = 0; at < size;) {
		const uint8_t *nl = memchr(data + at, '\n', size - at);
		size_t end = nl ? (size_t)(nl - data) : size;
		const uint8_t *slash = memchr(data + at, '/', end - at);
		int n = slash ? (int)(end - (size_t)(slash - data)) : 0;

		/* A NUL ends a line's text, as it ends the C string the reader looks at. */
		if (slash && !memchr(data + at, 0, (size_t)(slash - data) - at)) {
			n = (int)strnlen((const char *)slash, (size_t)n);
			if (snprintf(path, len, "/proc/1/root%.*s", n, slash) < (int)len)
				return true;
		}
		at = end + 1;
	}
	return false;
}

void fuzz_lib_maps(FILE *f, const uint8_t *data, size_t size)
{
	static const uint64_t addrs[] = { 0, 0x7f0000001000, UINT64_MAX };
	struct file_map below, base;
	char path[PATH_MAX], want[PATH_MAX], tiny[24];
	bool found;

	for (size_t i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
		memset(&below, 0, sizeof(below));
		memset(&base, 0, sizeof(base));
		find_maps_in(f, addrs[i], &below, &base);
		rewind(f);
	}
	found = mapped_file_in(f, 1, any_file, path, sizeof(path));
	if (found != first_mapped_file(data, size, want, sizeof(want)) || (found && strcmp(path, want)))
		abort();	/* a file that no line of the input names */
	rewind(f);
	mapped_file_in(f, 1, libc_file, tiny, sizeof(tiny));
}
