// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz_maps's unwinder part: proc_parse on the input, with an unwinder that
 * has no worker thread and no rows map (a table finds no room and is
 * dropped, as when the rows array is full).  unwinder.c is included for its
 * static functions.
 */
#include "../../user/unwind/unwinder.c"

void fuzz_unwind_maps(FILE *f);

void fuzz_unwind_maps(FILE *f)
{
	static struct unwinder *u;

	if (!u) {
		u = calloc(1, sizeof(*u));
		if (!u || !(u->scratch = calloc(1, sizeof(*u->scratch))))
			abort();
		u->rows_fd = u->procs_fd = u->files_fd = -1;
		elf_version(EV_CURRENT);
	}
	proc_parse(u, 0, f, u->scratch);
}
