// SPDX-License-Identifier: GPL-2.0
/* A shared library whose function burns CPU: its frames must be named from the .so. */
#include <stdint.h>
#include <time.h>

static volatile uint64_t sink;

__attribute__((noinline)) void libburn_spin(double seconds)
{
	struct timespec now, end;
	uint64_t x = sink;

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += (time_t)seconds;
	end.tv_nsec += (long)((seconds - (time_t)seconds) * 1e9);
	do {
		for (int i = 0; i < 100000; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
		sink = x;
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec < end.tv_sec || (now.tv_sec == end.tv_sec && now.tv_nsec < end.tv_nsec));
}
