/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A fork storm, the body of storma and stormb (tests/daemon/40-forkstorm.t):
 *
 *   storma|stormb SECONDS RATE [BURN_US]   (defaults: RATE 1000 children a
 *                                          second, BURN_US 100)
 *
 * starts up to RATE short-lived child processes a second; each burns BURN_US
 * of CPU in STORM_BURN (storm_a_burn or storm_b_burn) and exits, so that
 * thousands of pids a second come and go and pids get reused.  The children
 * are clone(CLONE_VM | CLONE_VFORK), as posix_spawn makes them: a new
 * process each, without the page-table copy of a fork, which a loaded
 * virtual machine makes cost milliseconds.  A child burns at the end of a
 * recursion whose depth changes every second (storm_descend), so that the
 * run keeps making new stacks and stops using old ones, as a long-running
 * machine does: the stacks map must be collected, not fill up.  The two binaries differ
 * only in those names (of equal length): run without address randomization
 * (setarch -R) they have the same layout, so that a stack of one symbolized
 * with the other's maps would name the other's function.  Prints
 * `forks=N` (children started) at exit.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "wl.h"

static volatile uint64_t sink;

/* The leaf every child's samples should name. */
__attribute__((noinline)) void STORM_BURN(uint64_t ns)
{
	uint64_t end = now_ns(CLOCK_PROCESS_CPUTIME_ID) + ns;
	uint64_t x = sink;

	do {
		for (int i = 0; i < 20000; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
		sink = x;
	} while (now_ns(CLOCK_PROCESS_CPUTIME_ID) < end);
}

static uint64_t burn_ns = 100000;
static unsigned int child_depth;	/* set by the parent before each child */
static char child_stack[256 << 10] __attribute__((aligned(16)));	/* one child at a time (CLONE_VFORK) */

__attribute__((noinline)) void storm_descend(unsigned int depth)
{
	if (depth)
		storm_descend(depth - 1);
	else
		STORM_BURN(burn_ns);
	sink++;	/* no tail call: every level stays a frame */
}

__attribute__((noinline)) static int child_run(void *arg)
{
	storm_descend(child_depth);
	_exit(0);
}

/* Sleeps until @due (CLOCK_MONOTONIC ns) when it is ahead. */
static void pace(uint64_t due)
{
	uint64_t now = now_ns(CLOCK_MONOTONIC);
	struct timespec ts;

	if (due <= now)
		return;
	ts.tv_sec = (time_t)((due - now) / 1000000000ull);
	ts.tv_nsec = (long)((due - now) % 1000000000ull);
	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 10;
	uint64_t rate = argc > 2 ? strtoull(argv[2], NULL, 10) : 1000;
	uint64_t start = now_ns(CLOCK_MONOTONIC), end = start + (uint64_t)(seconds * 1e9), forks = 0;

	if (argc > 3)
		burn_ns = strtoull(argv[3], NULL, 10) * 1000;
	signal(SIGCHLD, SIG_IGN);	/* children reaped by the kernel: no zombies */
	while (now_ns(CLOCK_MONOTONIC) < end) {
		uint64_t second = (now_ns(CLOCK_MONOTONIC) - start) / 1000000000ull;
		pid_t pid;

		/* 8 stacks a second, new ones each second (depths cycle within 100 frames). */
		child_depth = (unsigned int)((second * 8 + forks % 8) % 100);
		pid = clone(child_run, child_stack + sizeof(child_stack),
				  CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);

		forks += pid > 0;
		pace(start + forks * 1000000000ull / (rate ? rate : 1));
	}
	printf("forks=%llu\n", (unsigned long long)forks);
	return 0;
}
