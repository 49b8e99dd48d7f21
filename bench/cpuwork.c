// SPDX-License-Identifier: GPL-2.0
/*
 * CPU-bound benchmark workload: THREADS threads run a hash loop spread over
 * a few non-inlined functions (so that a frame-pointer profiler sees a real
 * call chain) for SECONDS, then print the total throughput in ops/s and in
 * ops per CPU-second (the latter hardly moves when other jobs share the CPUs,
 * but still counts what a profiler costs inside the workload's own context).
 *
 * usage: cpuwork SECONDS [THREADS]	(THREADS defaults to the online CPUs)
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "bench.h"

/* Iterations between clock reads: keeps the vDSO call well under 1% of the work. */
#define OPS_PER_CHECK 4096


static __attribute__((noinline)) uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v;
	h *= 0x100000001b3ULL;	/* FNV-1a prime */
	h ^= h >> 29;
	return h;
}

static __attribute__((noinline)) uint64_t hash_round(uint64_t h, uint64_t i)
{
	for (int k = 0; k < 16; k++)
		h = mix(h, i + k);
	return h;
}

static __attribute__((noinline)) uint64_t hash_block(uint64_t h, uint64_t base)
{
	for (uint64_t i = 0; i < OPS_PER_CHECK; i++)
		h = hash_round(h, base + i);
	return h;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint64_t h = 0xcbf29ce484222325ULL;
	double end;

	pthread_barrier_wait(&start_line);
	end = now_sec() + w->seconds;
	while (now_sec() < end) {
		h = hash_block(h, w->ops);
		w->ops += OPS_PER_CHECK;
	}
	w->sink = h;
	w->cpu_seconds = clock_sec(CLOCK_THREAD_CPUTIME_ID);
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5;
	long threads = argc > 2 ? atol(argv[2]) : sysconf(_SC_NPROCESSORS_ONLN);
	struct bench_result r;

	if (seconds <= 0 || threads < 1 || threads > 1024) {
		fprintf(stderr, "usage: cpuwork SECONDS [THREADS]\n");
		return 2;
	}
	if (bench_run(threads, seconds, 0, worker_main, &r))
		return 1;
	printf("ops_per_sec %.0f ops_per_cpu_sec %.0f threads %ld elapsed %.3f sink %llx\n",
	       r.ops / r.elapsed, r.cpu_seconds > 0 ? r.ops / r.cpu_seconds : 0, threads, r.elapsed,
	       (unsigned long long)(r.sink & 0xf));
	return 0;
}
