// SPDX-License-Identifier: GPL-2.0
/*
 * swaplib DIR SECONDS: loads DIR/libswapa.so, spins SECONDS in it
 * (main -> run_lib -> swap_entry -> swap_mid_a -> swap_leaf_a), unloads it,
 * then does the same with DIR/libswapb.so, which the loader maps where the
 * first one was (same size, the hole it left).  Prints each library's load
 * address ("a 0x...", "b 0x...") and "same" or "moved", for the DWARF
 * unwinder's check that a library replaced at the same address is walked
 * with its own tables (tests/stacks/75-unwind.t).  Built without frame
 * pointers.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "../wl.h"

#define NOINLINE __attribute__((noinline))

static volatile long sink;

/* Loads DIR/libswapNAME.so, runs its swap_entry for @seconds; its load address, or 0. */
static NOINLINE unsigned long run_lib(const char *dir, char name, double seconds)
{
	long (*entry)(double);
	struct link_map *map;
	unsigned long base;
	char path[4096];
	void *lib;

	snprintf(path, sizeof(path), "%s/libswap%c.so", dir, name);
	lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib || dlinfo(lib, RTLD_DI_LINKMAP, &map)) {
		fprintf(stderr, "swaplib: %s: %s\n", path, dlerror());
		return 0;
	}
	entry = (long (*)(double))dlsym(lib, "swap_entry");
	if (!entry) {
		fprintf(stderr, "swaplib: no swap_entry in %s\n", path);
		dlclose(lib);
		return 0;
	}
	base = map->l_addr;
	printf("%c 0x%lx\n", name, base);
	fflush(stdout);
	sink = entry(now_ns(CLOCK_MONOTONIC) / 1e9 + seconds);
	dlclose(lib);
	return base;
}

int main(int argc, char **argv)
{
	unsigned long a, b;
	double seconds;

	if (argc != 3 || (seconds = atof(argv[2])) <= 0) {
		fprintf(stderr, "usage: swaplib DIR SECONDS\n");
		return 2;
	}
	a = run_lib(argv[1], 'a', seconds);
	b = run_lib(argv[1], 'b', seconds);
	if (!a || !b)
		return 1;
	printf("%s\n", a == b ? "same" : "moved");
	return 0;
}
