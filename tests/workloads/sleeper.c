// SPDX-License-Identifier: GPL-2.0
/*
 * sleeper: a workload with a known off-CPU profile.
 *
 *   sleeper [SECONDS [OUTFILE]]      (default: 3 s, stdout)
 *
 * Four threads loop in sleep_50ms() for SECONDS.  Each times its own
 * nanosleep calls with CLOCK_MONOTONIC and counts them; at exit the sums over
 * all threads are printed as `slept_ns=TOTAL calls=COUNT`.  An off-CPU
 * profile of the sleep_50ms stack should show about TOTAL ns in COUNT
 * switches.
 *
 * The nanosleep syscall is issued inline from sleep_50ms (not through libc):
 * Debian's libc has no frame pointers, so a frame-pointer walk that starts in
 * libc's nanosleep would skip its caller and sleep_50ms would never be seen.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include "wl.h"

#define NTHREADS 4

struct sleep_stats {
	uint64_t slept_ns;
	uint64_t calls;
};

static double run_seconds = 3.0;

/* One 50 ms nanosleep, timed; the syscall instruction is in this function. */
__attribute__((noinline)) void sleep_50ms(struct sleep_stats *st)
{
	struct timespec req = { .tv_sec = 0, .tv_nsec = 50000000 };
	uint64_t start = now_ns(CLOCK_MONOTONIC);
	long ret;

	asm volatile("syscall"
		     : "=a"(ret)
		     : "0"((long)SYS_nanosleep), "D"(&req), "S"(NULL)
		     : "rcx", "r11", "memory");
	st->slept_ns += now_ns(CLOCK_MONOTONIC) - start;
	st->calls++;
	(void)ret;
}

static void *sleep_thread(void *arg)
{
	struct sleep_stats *st = arg;
	uint64_t end = now_ns(CLOCK_MONOTONIC) + (uint64_t)(run_seconds * 1e9);

	while (now_ns(CLOCK_MONOTONIC) < end)
		sleep_50ms(st);
	return NULL;
}

int main(int argc, char **argv)
{
	struct sleep_stats stats[NTHREADS] = {};
	pthread_t tids[NTHREADS];
	uint64_t total_ns = 0, total_calls = 0;
	FILE *out = stdout;

	if (argc > 1)
		run_seconds = atof(argv[1]);
	if (run_seconds <= 0) {
		fprintf(stderr, "usage: %s [SECONDS [OUTFILE]]\n", argv[0]);
		return 2;
	}
	for (int i = 0; i < NTHREADS; i++)
		if (pthread_create(&tids[i], NULL, sleep_thread, &stats[i])) {
			perror("pthread_create");
			return 1;
		}
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(tids[i], NULL);
		total_ns += stats[i].slept_ns;
		total_calls += stats[i].calls;
	}
	if (argc > 2) {
		out = fopen(argv[2], "w");
		if (!out) {
			perror(argv[2]);
			return 1;
		}
	}
	fprintf(out, "slept_ns=%llu calls=%llu\n", (unsigned long long)total_ns,
		(unsigned long long)total_calls);
	return fclose(out) ? 1 : 0;
}
