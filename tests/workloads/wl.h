/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the test workloads share: now_ns(), a clock read in nanoseconds.
 * Included by the workloads and the stand-in CUDA libraries (tests/Makefile
 * and tests/gpu.mk build them with -fno-inline, so now_ns stays a frame of its
 * own in their stacks, as each copy of it did).
 */
#ifndef APERTURE_TESTS_WL_H
#define APERTURE_TESTS_WL_H
#include <stdint.h>
#include <time.h>

/* @clk now, in ns: CLOCK_MONOTONIC for wall time, CLOCK_*_CPUTIME_ID for CPU time used. */
static inline uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}
#endif
