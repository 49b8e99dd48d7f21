/* SPDX-License-Identifier: GPL-2.0 */
/* Clocks shared by the benchmark workloads. */
#ifndef BENCH_H
#define BENCH_H

#include <time.h>

static inline double clock_sec(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static inline double now_sec(void)
{
	return clock_sec(CLOCK_MONOTONIC);
}

#endif
