// SPDX-License-Identifier: GPL-2.0
/*
 * manystacks: a workload whose on-CPU samples nearly all have a stack never seen before.
 *
 *   manystacks [SECONDS [DEPTH [SPIN_US]]]     (defaults: 10 s, 100 frames, 1000 us)
 *
 * Repeats: draw DEPTH random bits, descend DEPTH calls choosing step_a or step_b by
 * each bit, and spin SPIN_US of CPU time at the bottom (spin), so that a sample
 * nearly always lands there, under DEPTH + 4 frames whose return addresses spell a
 * path that is new with probability 1 - 2^-DEPTH.  A profiler's per-stack storage
 * grows by a whole stack with nearly every sample: it drives size bounds for real.
 * At exit prints `paths=N` and `cpu_ns=N` (the CPU time used).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "wl.h"

#define MAX_DEPTH 120

static volatile uint64_t sink;
static uint8_t path_bits[MAX_DEPTH];

__attribute__((noinline)) void spin(uint64_t ns)
{
	uint64_t end = now_ns(CLOCK_THREAD_CPUTIME_ID) + ns;
	uint64_t x = sink;

	do {
		for (int i = 0; i < 20000; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
		sink = x;
	} while (now_ns(CLOCK_THREAD_CPUTIME_ID) < end);
}

void step_b(int level, int depth, uint64_t ns);

/* step_a and step_b call each other by the path's bits: the frames differ by return address. */
__attribute__((noinline)) void step_a(int level, int depth, uint64_t ns)
{
	if (level == depth)
		spin(ns);
	else if (path_bits[level])
		step_b(level + 1, depth, ns);
	else
		step_a(level + 1, depth, ns);
	sink++;		/* not a tail call: the frame stays */
}

__attribute__((noinline)) void step_b(int level, int depth, uint64_t ns)
{
	if (level == depth)
		spin(ns);
	else if (path_bits[level])
		step_b(level + 1, depth, ns);
	else
		step_a(level + 1, depth, ns);
	sink += 2;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 10.0;
	int depth = argc > 2 ? atoi(argv[2]) : 100;
	uint64_t spin_ns = (argc > 3 ? strtoull(argv[3], NULL, 10) : 1000) * 1000;
	uint64_t end = now_ns(CLOCK_MONOTONIC) + (uint64_t)(seconds * 1e9);
	uint64_t paths = 0, rnd = now_ns(CLOCK_MONOTONIC) | 1;

	if (depth < 1 || depth > MAX_DEPTH) {
		fprintf(stderr, "manystacks: DEPTH must be 1-%d\n", MAX_DEPTH);
		return 2;
	}
	while (now_ns(CLOCK_MONOTONIC) < end) {
		for (int i = 0; i < depth; i++) {	/* xorshift64 */
			rnd ^= rnd << 13;
			rnd ^= rnd >> 7;
			rnd ^= rnd << 17;
			path_bits[i] = rnd & 1;
		}
		step_a(0, depth, spin_ns);
		paths++;
	}
	printf("paths=%llu\ncpu_ns=%llu\n", (unsigned long long)paths,
	       (unsigned long long)now_ns(CLOCK_PROCESS_CPUTIME_ID));
	return 0;
}
