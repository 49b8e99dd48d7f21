// SPDX-License-Identifier: GPL-2.0
/*
 * Unwinding benchmark workload: THREADS threads each recurse DEPTH calls
 * deep and spin in a hash loop at the bottom for SECONDS, so that nearly
 * every sample has a user stack of about DEPTH + 4 frames (start_thread,
 * worker_main, DEPTH x descend, spin).  bench/unwind.sh builds it twice:
 * with frame pointers (deepstack-fp) and without (deepstack-nofp,
 * -fomit-frame-pointer, which only DWARF CFI can unwind).  Prints ops/s and
 * ops per CPU-second, as cpuwork does.
 *
 * usage: deepstack SECONDS [DEPTH [THREADS]]	(DEPTH 90, THREADS the online CPUs)
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "bench.h"

#define OPS_PER_CHECK 4096


static __attribute__((noinline)) uint64_t spin(struct worker *w)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	double end = now_sec() + w->seconds;

	while (now_sec() < end) {
		for (uint64_t i = 0; i < OPS_PER_CHECK; i++) {
			h ^= w->ops + i;
			h *= 0x100000001b3ULL;
			h ^= h >> 29;
		}
		w->ops += OPS_PER_CHECK;
	}
	return h;
}

/* Not a tail call (the result is used after the call), so every level keeps a frame. */
static __attribute__((noinline)) uint64_t descend(struct worker *w, int level)
{
	volatile int keep = level;	/* a stack slot: a frame the CFI must describe */
	uint64_t h;

	h = level <= 1 ? spin(w) : descend(w, level - 1);
	return h ^ (uint64_t)keep;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	pthread_barrier_wait(&start_line);
	w->sink = descend(w, w->depth);
	w->cpu_seconds = clock_sec(CLOCK_THREAD_CPUTIME_ID);
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5;
	int depth = argc > 2 ? atoi(argv[2]) : 90;
	long threads = argc > 3 ? atol(argv[3]) : sysconf(_SC_NPROCESSORS_ONLN);
	struct bench_result r;

	if (seconds <= 0 || depth < 1 || depth > 10000 || threads < 1 || threads > 1024) {
		fprintf(stderr, "usage: deepstack SECONDS [DEPTH [THREADS]]\n");
		return 2;
	}
	if (bench_run(threads, seconds, depth, worker_main, &r))
		return 1;
	printf("ops_per_sec %.0f ops_per_cpu_sec %.0f threads %ld depth %d elapsed %.3f sink %llx\n",
	       r.ops / r.elapsed, r.cpu_seconds > 0 ? r.ops / r.cpu_seconds : 0, threads, depth, r.elapsed,
	       (unsigned long long)(r.sink & 0xf));
	return 0;
}
