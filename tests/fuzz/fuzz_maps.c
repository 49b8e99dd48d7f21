// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: /proc/PID/maps as each reader of it parses it.  A file
 * name is the process's to choose (spaces, " (deleted)", longer than
 * PATH_MAX in a deep directory), so every reader must take any bytes.  The
 * symbolizer's parse (then a lookup in every mapping, and a re-read carried
 * over), the unwinder's (fuzz_maps_unwind.c), and the data-symbol and
 * uprobe-library searches (fuzz_maps_lib.c).  tgid 0 has no /proc entry: no
 * file named in the input is opened, except our own [vdso].  symbolize.c is
 * included so that its static functions are the ones run.
 */
#include "../../user/symbolize/symbolize.c"
#include "fuzz_input.h"

void fuzz_unwind_maps(FILE *f);
void fuzz_lib_maps(FILE *f, const uint8_t *data, size_t size);

/* What symbolizer_user does once it has the mapping of an address. */
static void lookup(struct symbolizer *sym, struct proc *p, uint64_t addr)
{
	struct proc_map *m = maps_find(p->maps, p->nmaps, addr);
	struct sym_frame out;

	frame_unknown(&out, addr);
	if (!m)
		return;
	if (m->file)
		user_file_frame(sym, p, m, &out);
	else
		user_jit_frame(sym, p, m, &out);
	out.mapping = map_hand_out(sym, m);
	frame_name(sym, &out);
}

static void symbolizer_maps(FILE *f)
{
	struct symbolizer *sym = symbolizer_new(NULL);
	struct proc p = { .tgid = 0 };
	struct proc_map *again;
	size_t nagain;

	if (!sym)
		abort();
	if (maps_parse(sym, p.tgid, f, &p.maps, &p.nmaps) == 0) {
		for (size_t i = 0; i < p.nmaps; i++) {
			lookup(sym, &p, p.maps[i].start);
			lookup(sym, &p, p.maps[i].end - 1);
		}
		rewind(f);
		if (maps_parse(sym, p.tgid, f, &again, &nagain) == 0) {
			maps_carry_over(p.maps, p.nmaps, again, nagain);
			maps_free(again, nagain);
		}
		maps_free(p.maps, p.nmaps);
	}
	symtab_free(&p.jit);
	symbolizer_free(sym);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	FILE *f = input_stream(data, size);

	symbolizer_maps(f);
	rewind(f);
	fuzz_unwind_maps(f);
	rewind(f);
	fuzz_lib_maps(f, data, size);
	fclose(f);
	return 0;
}
