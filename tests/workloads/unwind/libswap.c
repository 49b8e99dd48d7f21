// SPDX-License-Identifier: GPL-2.0
/*
 * One of two libraries built from this file (tests/unwind.mk: libswapa.so
 * with -DSWAP=a -DFRAME=256, libswapb.so with -DSWAP=b -DFRAME=4096) that
 * swaplib.c loads in turn at the same address: the same code at the same
 * offsets (both frame sizes take a 32-bit immediate), but swap_mid_X's CFA
 * offset differs, so a walk that used the first library's rows for the
 * second's pcs would read its return address from the wrong slot.
 * Built without frame pointers: only the tables find the callers.
 */
#include <time.h>

#define NOINLINE __attribute__((noinline))
#define CAT(a, b) a##_##b
#define NAME(fn, s) CAT(fn, s)

static volatile long swap_sink;

static double swap_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

NOINLINE long NAME(swap_leaf, SWAP)(double end)
{
	long x = 0;

	while (swap_now() < end)
		for (int i = 0; i < 2000000; i++)
			x = x * 41 + i;
	swap_sink = x;
	return x + 3;
}

/* A frame of FRAME bytes: the buffer is used after the call, so it stays. */
NOINLINE long NAME(swap_mid, SWAP)(double end)
{
	volatile char buf[FRAME];
	long r;

	buf[0] = 1;
	buf[FRAME - 1] = 2;
	r = NAME(swap_leaf, SWAP)(end);
	swap_sink = r + buf[0] + buf[FRAME - 1];
	return r + 2;
}

NOINLINE long swap_entry(double end)
{
	long r = NAME(swap_mid, SWAP)(end);

	swap_sink = r;
	return r + 1;
}
