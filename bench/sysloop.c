// SPDX-License-Identifier: GPL-2.0
/*
 * sysloop N: N getppid() system calls (through syscall(2): nothing cached),
 * the cheapest round trip into the kernel, so that a tracer's per-call cost
 * shows; prints calls=N ns=ELAPSED ns_per_call=X cpu_per_call=Y.  Y is the
 * process's CPU time per call (CLOCK_PROCESS_CPUTIME_ID): not the time it
 * waited for a CPU that other jobs held.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

static double now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 2000000;
	double t0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_PROCESS_CPUTIME_ID), ns, cpu;

	for (long i = 0; i < n; i++)
		syscall(SYS_getppid);
	ns = now_ns(CLOCK_MONOTONIC) - t0;
	cpu = now_ns(CLOCK_PROCESS_CPUTIME_ID) - c0;
	printf("calls=%ld ns=%.0f ns_per_call=%.1f cpu_per_call=%.1f\n", n, ns, ns / n, cpu / n);
	return 0;
}
