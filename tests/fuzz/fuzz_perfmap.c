// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: a JIT's /tmp/perf-PID.map ("START SIZE name" in hex), a
 * file the profiled process writes, so anything at all.  The symbolizer's
 * parse, then a lookup at each symbol's start and end as user_jit_frame
 * does them.  symbolize.c is included for its static functions.
 */
#include "../../user/symbolize/symbolize.c"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	FILE *f = input_stream(data, size);
	struct symtab jit = { 0 };

	perf_map_parse(&jit, f);
	for (size_t i = 0; i < jit.nsyms; i++) {
		const struct sym *s = symtab_find(&jit, jit.syms[i].start);

		if (s != &jit.syms[i] || !*symtab_name(&jit, s))
			abort();	/* every symbol kept is the one found at its start, and has a name */
		symtab_find(&jit, jit.syms[i].start + jit.syms[i].size);
	}
	symtab_free(&jit);
	fclose(f);
	return 0;
}
