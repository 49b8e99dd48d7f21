// SPDX-License-Identifier: GPL-2.0
/*
 * sysloop N: N getppid() system calls (through syscall(2): nothing cached),
 * the cheapest round trip into the kernel, so that a tracer's per-call cost
 * shows; prints calls=N ns=ELAPSED ns_per_call=X.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 2000000;
	double t0 = now_ns(), ns;

	for (long i = 0; i < n; i++)
		syscall(SYS_getppid);
	ns = now_ns() - t0;
	printf("calls=%ld ns=%.0f ns_per_call=%.1f\n", n, ns, ns / n);
	return 0;
}
