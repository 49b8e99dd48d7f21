// SPDX-License-Identifier: GPL-2.0
/*
 * cpuburn: a workload with a known on-CPU profile.
 *
 *   cpuburn [SECONDS [THREADS]]      (defaults: 5 s, 1 thread)
 *
 * Every thread repeats: burn_50 for 5 ms, burn_30 for 3 ms, burn_20 for 2 ms
 * of its own CPU time, so the leaf shares are 50/30/20 % whatever the
 * scheduler does.  The arithmetic is done inside the burn functions (they are
 * the leaf frames); the thread CPU clock is read only once per chunk of about
 * 100 us of work so that the clock_gettime syscall stays well under 1 % of the
 * samples.  At exit prints `cpu_ns=N`, the CPU time the process used (on a
 * busy machine less than SECONDS x THREADS): expected samples = cpu_ns x HZ.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "wl.h"

#define CHUNK_ITERS 100000	/* roughly 100 us of work on these machines */

static volatile uint64_t sink;	/* keeps the loops from being optimized away */
static double run_seconds = 5.0;

/* Each burn_* loops until the calling thread used @ns more CPU time. */
__attribute__((noinline)) void burn_50(uint64_t ns)
{
	uint64_t end = now_ns(CLOCK_THREAD_CPUTIME_ID) + ns;
	uint64_t x = sink;

	do {
		for (int i = 0; i < CHUNK_ITERS; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
		sink = x;
	} while (now_ns(CLOCK_THREAD_CPUTIME_ID) < end);
}

__attribute__((noinline)) void burn_30(uint64_t ns)
{
	uint64_t end = now_ns(CLOCK_THREAD_CPUTIME_ID) + ns;
	uint64_t x = sink;

	do {
		for (int i = 0; i < CHUNK_ITERS; i++)
			x = x * 2862933555777941757ull + 3037000493ull;
		sink = x;
	} while (now_ns(CLOCK_THREAD_CPUTIME_ID) < end);
}

__attribute__((noinline)) void burn_20(uint64_t ns)
{
	uint64_t end = now_ns(CLOCK_THREAD_CPUTIME_ID) + ns;
	uint64_t x = sink;

	do {
		for (int i = 0; i < CHUNK_ITERS; i++)
			x = x * 3202034522624059733ull + 4354685564936845319ull;
		sink = x;
	} while (now_ns(CLOCK_THREAD_CPUTIME_ID) < end);
}

static void *burn_thread(void *arg)
{
	uint64_t end = now_ns(CLOCK_MONOTONIC) + (uint64_t)(run_seconds * 1e9);

	(void)arg;
	unsigned int seed = (unsigned int)now_ns(CLOCK_MONOTONIC);

	while (now_ns(CLOCK_MONOTONIC) < end) {
		/*
		 * A 10 ms round would alias with 99 Hz sampling (period 10.1 ms):
		 * scale each round by a random 0.5..1.5 so that samples fall at
		 * random phases, keeping the 50/30/20 split of every round.
		 */
		uint64_t unit = 500000 + rand_r(&seed) % 1000000;	/* ns per share point x10 */

		burn_50(5 * unit);
		burn_30(3 * unit);
		burn_20(2 * unit);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int nthreads = 1;
	pthread_t *tids;

	if (argc > 1)
		run_seconds = atof(argv[1]);
	if (argc > 2)
		nthreads = atoi(argv[2]);
	if (run_seconds <= 0 || nthreads < 1) {
		fprintf(stderr, "usage: %s [SECONDS [THREADS]]\n", argv[0]);
		return 2;
	}
	tids = calloc(nthreads, sizeof(*tids));
	if (!tids)
		return 1;
	/* Thread 0 is the main thread itself: one-thread runs have one task. */
	for (int i = 1; i < nthreads; i++)
		if (pthread_create(&tids[i], NULL, burn_thread, NULL)) {
			perror("pthread_create");
			return 1;
		}
	burn_thread(NULL);
	for (int i = 1; i < nthreads; i++)
		pthread_join(tids[i], NULL);
	free(tids);
	printf("cpu_ns=%llu\n", (unsigned long long)now_ns(CLOCK_PROCESS_CPUTIME_ID));
	return 0;
}
