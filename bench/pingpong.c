// SPDX-License-Identifier: GPL-2.0
/*
 * Context-switch-heavy benchmark workload: two threads pass one byte back and
 * forth over a pair of pipes for SECONDS; every round trip blocks each thread
 * once, i.e. at least two context switches.  Prints round trips per second
 * and per CPU-second of the process (user + system, where the sched_switch
 * programs of an off-CPU profiler run).
 *
 * Both threads are pinned to one CPU (the last one, or CPU; -1: no pinning):
 * then every round trip is the same two switches on one run queue, and the
 * rate does not swing with where the scheduler happens to put the threads.
 *
 * usage: pingpong SECONDS [CPU]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "bench.h"

/* Round trips between clock reads. */
#define TRIPS_PER_CHECK 256

static int ping[2], pong[2];	/* main -> echo, echo -> main */
static atomic_int stop;

static __attribute__((noinline)) int pass_byte(int in, int out)
{
	char c = 0;

	if (read(in, &c, 1) != 1)
		return -1;
	if (out >= 0 && write(out, &c, 1) != 1)
		return -1;
	return 0;
}

static void *echo_main(void *arg __attribute__((unused)))
{
	for (;;) {
		if (pass_byte(ping[0], -1))
			break;
		if (atomic_load(&stop))
			break;
		if (write(pong[1], "x", 1) != 1)
			break;
	}
	return NULL;
}

/* Pins the calling thread, and so the threads it creates later, to one CPU. */
static int pin_to_cpu(long cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5;
	long cpu = argc > 2 ? atol(argv[2]) : sysconf(_SC_NPROCESSORS_ONLN) - 1;
	uint64_t trips = 0;
	double start, end, elapsed, cpu_seconds;
	pthread_t echo;

	if (seconds <= 0) {
		fprintf(stderr, "usage: pingpong SECONDS [CPU]\n");
		return 2;
	}
	if (cpu >= 0 && pin_to_cpu(cpu)) {
		perror("sched_setaffinity");
		return 1;
	}
	if (pipe(ping) || pipe(pong)) {
		perror("pipe");
		return 1;
	}
	if (pthread_create(&echo, NULL, echo_main, NULL)) {
		perror("pthread_create");
		return 1;
	}
	start = now_sec();
	end = start + seconds;
	do {
		for (int i = 0; i < TRIPS_PER_CHECK; i++) {
			if (write(ping[1], "x", 1) != 1 || pass_byte(pong[0], -1)) {
				perror("pingpong");
				return 1;
			}
		}
		trips += TRIPS_PER_CHECK;
	} while (now_sec() < end);
	elapsed = now_sec() - start;
	atomic_store(&stop, 1);
	if (write(ping[1], "x", 1) != 1)	/* wakes the echo thread to see stop */
		return 1;
	pthread_join(echo, NULL);
	cpu_seconds = clock_sec(CLOCK_PROCESS_CPUTIME_ID);
	printf("trips_per_sec %.0f trips_per_cpu_sec %.0f elapsed %.3f\n",
	       trips / elapsed, cpu_seconds > 0 ? trips / cpu_seconds : 0, elapsed);
	return 0;
}
