/* SPDX-License-Identifier: GPL-2.0 */
/* Clocks and the thread harness shared by the benchmark workloads. */
#ifndef BENCH_H
#define BENCH_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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

/* One worker thread: what it was asked (seconds, depth) and what it did. */
struct worker {
	pthread_t thread;
	double seconds;
	int depth;		/* deepstack only */
	uint64_t ops;
	double cpu_seconds;	/* this thread's CPU time, interrupts included */
	uint64_t sink;		/* keeps the hash live so the loop is not optimized away */
};

/* All workers start their clocks together, after every thread exists. */
static pthread_barrier_t start_line;

struct bench_result {
	uint64_t ops, sink;
	double cpu_seconds, elapsed;
};

/*
 * Runs @threads workers of @fn for @seconds (each waits on start_line
 * first) and sums what they did; -1 when a thread cannot be made.
 */
static inline int bench_run(long threads, double seconds, int depth, void *(*fn)(void *),
			    struct bench_result *r)
{
	struct worker *workers = calloc(threads, sizeof(*workers));
	double start;

	if (!workers)
		return -1;
	*r = (struct bench_result){ 0 };
	pthread_barrier_init(&start_line, NULL, threads + 1);
	for (long i = 0; i < threads; i++) {
		workers[i].seconds = seconds;
		workers[i].depth = depth;
		if (pthread_create(&workers[i].thread, NULL, fn, &workers[i])) {
			perror("pthread_create");
			exit(1);	/* the others wait on the barrier forever */
		}
	}
	pthread_barrier_wait(&start_line);
	start = now_sec();
	for (long i = 0; i < threads; i++) {
		pthread_join(workers[i].thread, NULL);
		r->ops += workers[i].ops;
		r->cpu_seconds += workers[i].cpu_seconds;
		r->sink ^= workers[i].sink;
	}
	r->elapsed = now_sec() - start;
	free(workers);
	return 0;
}

#endif
