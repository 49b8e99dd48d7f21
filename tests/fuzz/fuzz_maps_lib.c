// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz_maps's other readers: the data-symbol search (datasym.c, `--lock-hold`
 * names of lock addresses) and the search for a mapped library (procmaps.c,
 * libc for uprobes, libcuda).  Both .c files are included for their static
 * functions.
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

void fuzz_lib_maps(FILE *f, const uint8_t *data, size_t size)
{
	static const uint64_t addrs[] = { 0, 0x7f0000001000, UINT64_MAX };
	struct file_map below, base;
	char path[PATH_MAX], tiny[24];

	for (size_t i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
		memset(&below, 0, sizeof(below));
		memset(&base, 0, sizeof(base));
		find_maps_in(f, addrs[i], &below, &base);
		rewind(f);
	}
	mapped_file_in(f, 1, any_file, path, sizeof(path));
	rewind(f);
	mapped_file_in(f, 1, libc_file, tiny, sizeof(tiny));
}
