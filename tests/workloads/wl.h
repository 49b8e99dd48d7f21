/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the test workloads share: now_ns(), a clock read in nanoseconds, and
 * stat_state(), a task's state letter.
 * Included by the workloads and the stand-in CUDA libraries (tests/Makefile
 * and tests/gpu.mk build them with -fno-inline, so now_ns stays a frame of its
 * own in their stacks, as each copy of it did).
 */
#ifndef APERTURE_TESTS_WL_H
#define APERTURE_TESTS_WL_H
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* @clk now, in ns: CLOCK_MONOTONIC for wall time, CLOCK_*_CPUTIME_ID for CPU time used. */
static inline uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/*
 * The state letter (R, S, D, Z, ...) in the stat file @path (/proc/PID/stat,
 * /proc/self/task/TID/stat), or 0 when it is gone or unreadable.  The comm
 * may hold ") ", so the state follows the last ')'.
 */
static inline char stat_state(const char *path)
{
	char buf[512], *paren;
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	paren = strrchr(buf, ')');
	return paren && paren[1] == ' ' ? paren[2] : 0;
}
#endif
