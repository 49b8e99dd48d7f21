// SPDX-License-Identifier: GPL-2.0
/*
 * threadsys: short-lived threads with a known number of syscalls each.
 *
 *   threadsys join ROUNDS CALLS GAP_US     each round: one thread makes CALLS
 *                                          getppid() calls and exits, the main
 *                                          thread joins it, then sleeps GAP_US
 *   threadsys detach ROUNDS CALLS GAP_US   the same, but the main thread sleeps
 *                                          while the thread runs and never joins:
 *                                          after the thread's exit the process
 *                                          makes no syscall for a while
 *
 * With both pinned to one CPU, the detached threads' kernel stacks go back to
 * that CPU's cache and the joined threads' are likely to be them: a check that
 * a per-CPU note naming a dead task by its stack is not taken for a new one.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

static long calls;

static void *burst(void *arg)
{
	(void)arg;
	for (long i = 0; i < calls; i++)
		syscall(SYS_getppid);
	return NULL;
}

int main(int argc, char **argv)
{
	bool detach = argc > 1 && strcmp(argv[1], "detach") == 0;
	long rounds, gap_us;
	pthread_attr_t attr;

	if (argc != 5 || (!detach && strcmp(argv[1], "join") != 0)) {
		fprintf(stderr, "usage: threadsys join|detach ROUNDS CALLS GAP_US\n");
		return 2;
	}
	rounds = atol(argv[2]);
	calls = atol(argv[3]);
	gap_us = atol(argv[4]);
	pthread_attr_init(&attr);
	if (detach)
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	for (long r = 0; r < rounds; r++) {
		struct timespec gap = { gap_us / 1000000, (gap_us % 1000000) * 1000 };
		pthread_t t;

		if (pthread_create(&t, &attr, burst, NULL)) {
			perror("pthread_create");
			return 1;
		}
		if (!detach)
			pthread_join(t, NULL);
		nanosleep(&gap, NULL);
	}
	printf("threads=%ld calls=%ld\n", rounds, rounds * calls);
	return 0;
}
