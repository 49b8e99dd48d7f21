// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: /proc/kallsyms as the symbolizer reads it (text symbols,
 * modules cut) and as `aperture dump` does (%ps names, "func [mod]"), then
 * lookups; and the same bytes as /sys/kernel/notes, whose GNU build id names
 * the kernel.  Both readers open a path: the input is a memfd's.
 */
#include <string.h>
#include "kallsyms.h"
#include "fuzz_input.h"

static void lookups(const struct kallsyms *ks)
{
	for (size_t i = 0; i < ks->tab.nsyms; i++) {
		const struct sym *s = symtab_find(&ks->tab, ks->tab.syms[i].start);

		if (s != &ks->tab.syms[i] || !*symtab_name(&ks->tab, s))
			abort();	/* every symbol kept is the one found at its start, and has a name */
	}
	symtab_find(&ks->tab, ks->text_start - 1);
}

static void load(int (*loader)(struct kallsyms *, const char *), const char *path)
{
	struct kallsyms ks;

	if (loader(&ks, path) == 0) {
		lookups(&ks);
		kallsyms_free(&ks);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = input_path(data, size);
	char hex[129], small[9];

	load(kallsyms_load, path);
	load(kallsyms_load_printk, path);
	kernel_build_id(path, hex, sizeof(hex));
	kernel_build_id(path, small, sizeof(small));
	if (strlen(hex) >= sizeof(hex) || strlen(small) >= sizeof(small))
		abort();
	return 0;
}
