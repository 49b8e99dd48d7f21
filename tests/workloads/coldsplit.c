// SPDX-License-Identifier: GPL-2.0
/*
 * A function whose hot path is never taken: tests/profilers/16-cold.t's known answer for the naming of
 * GCC's .cold parts.  Built -O2 (tests/Makefile), GCC moves the branch that calls a cold function
 * out of coldsplit_work into coldsplit_work.cold (-freorder-blocks-and-partition), and that is
 * where the process spins: nearly every sample is in coldsplit_work.cold, called from main.
 */
#include <stdlib.h>
#include <time.h>

volatile unsigned long coldsplit_sink;

__attribute__((cold, noinline)) void coldsplit_note(int x)
{
	coldsplit_sink += (unsigned long)x;
}

__attribute__((noinline)) int coldsplit_work(int x)
{
	if (x < 0) {
		coldsplit_note(x);	/* makes this branch cold, and so the loop below */
		for (unsigned long i = 0; i < 20000000; i++)
			coldsplit_sink += i ^ (unsigned long)x;
		return -1;
	}
	return x + 1;
}

int main(int argc, char **argv)
{
	int seconds = argc > 1 ? atoi(argv[1]) : 5;
	time_t end = time(NULL) + seconds;

	while (time(NULL) < end)
		coldsplit_sink += (unsigned long)coldsplit_work(-1);
	return 0;
}
