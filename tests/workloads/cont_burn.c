// SPDX-License-Identifier: GPL-2.0
/*
 * Workload for the continuous profiling tests: idle, then THREADS threads
 * burning CPU in cont_hot, then idle again until killed.  The threads are
 * there from the start (a known thread count), waiting for the burn.
 *   cont_burn IDLE_S BURN_S [STAMP_FILE [THREADS]]
 * STAMP_FILE ("-": none) gets the wall-clock ms (CLOCK_REALTIME) at which the
 * burn starts.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "wl.h"

static volatile unsigned long sink;

/* -O0: a frame even for a leaf (see oap_burn.c), so that the caller shows. */
__attribute__((noinline, optimize("O0"))) void cont_hot(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i * i;
}

__attribute__((noinline)) static void cont_burn_for(double seconds)
{
	uint64_t end = now_ns(CLOCK_MONOTONIC) + (uint64_t)(seconds * 1e9);

	while (now_ns(CLOCK_MONOTONIC) < end)
		cont_hot(100000);
}

static double burn_s;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t start = PTHREAD_COND_INITIALIZER;
static int started;

static void *burner(void *arg)
{
	pthread_mutex_lock(&lock);
	while (!started)
		pthread_cond_wait(&start, &lock);
	pthread_mutex_unlock(&lock);
	cont_burn_for(burn_s);
	for (;;)
		pause();
	return arg;
}

int main(int argc, char **argv)
{
	double idle = argc > 1 ? atof(argv[1]) : 10;
	int threads = argc > 4 ? atoi(argv[4]) : 1;
	pthread_t t;

	burn_s = argc > 2 ? atof(argv[2]) : 10;
	for (int i = 1; i < threads; i++)
		pthread_create(&t, NULL, burner, NULL);
	usleep((useconds_t)(idle * 1e6));
	if (argc > 3 && strcmp(argv[3], "-")) {
		FILE *f = fopen(argv[3], "w");

		if (f) {
			fprintf(f, "%llu\n", (unsigned long long)(now_ns(CLOCK_REALTIME) / 1000000));
			fclose(f);
		}
	}
	pthread_mutex_lock(&lock);
	started = 1;
	pthread_cond_broadcast(&start);
	pthread_mutex_unlock(&lock);
	cont_burn_for(burn_s);
	for (;;)
		pause();
}
