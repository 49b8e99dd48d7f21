// SPDX-License-Identifier: GPL-2.0
/*
 * sysburn: syscalls with known counts and latencies.
 *
 *   sysburn [K [N [M [G]]]]  K getppid() calls, N failing close(-1) calls (EBADF),
 *                            then M nanosleep()s of 20 ms (defaults 100000, 1000, 50),
 *                            then G getrandom() calls of 1 KiB (default 0): each takes
 *                            microseconds, a flood of calls over a 1 us threshold
 */
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

int main(int argc, char **argv)
{
	long k = argc > 1 ? atol(argv[1]) : 100000;
	long n = argc > 2 ? atol(argv[2]) : 1000;
	long m = argc > 3 ? atol(argv[3]) : 50;
	long g = argc > 4 ? atol(argv[4]) : 0;
	struct timespec twenty_ms = { 0, 20 * 1000 * 1000 };
	static char buf[1024];

	for (long i = 0; i < k; i++)
		syscall(SYS_getppid);	/* glibc may cache nothing here, but be sure */
	for (long i = 0; i < n; i++)
		close(-1);
	for (long i = 0; i < m; i++)
		nanosleep(&twenty_ms, NULL);
	for (long i = 0; i < g; i++)
		syscall(SYS_getrandom, buf, sizeof(buf), 0);
	return 0;
}
