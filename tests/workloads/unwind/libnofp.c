// SPDX-License-Identifier: GPL-2.0
/* The shared-library half of nofp.c: built without frame pointers too. */
#include <time.h>

#define NOINLINE __attribute__((noinline))

static volatile long lib_sink;

static double lib_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

NOINLINE long lib_c(double end)
{
	long x = 0;

	while (lib_now() < end)
		for (int i = 0; i < 2000000; i++)
			x = x * 37 + i;
	lib_sink = x;
	return x + 3;
}

NOINLINE long lib_b(double end) { long r = lib_c(end); lib_sink = r; return r + 2; }
NOINLINE long nofp_lib_a(double end) { long r = lib_b(end); lib_sink = r; return r + 1; }

/* Called through the PLT in a tight loop: some samples land in the PLT stub itself. */
long nofp_lib_tiny(long x)
{
	return x * 3 + 1;
}
