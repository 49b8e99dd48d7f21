// SPDX-License-Identifier: GPL-2.0
/*
 * sysburn: syscalls with known counts and latencies.
 *
 *   sysburn [K [N [M [G]]]]  K getppid() calls, N failing close(-1) calls (EBADF),
 *                            then M nanosleep()s of 20 ms (defaults 100000, 1000, 50),
 *                            then G getrandom() calls of 1 KiB (default 0): each takes
 *                            microseconds, a flood of calls over a 1 us threshold
 *
 * Stderr: how many nanosleeps lasted [2^24, 2^25) ns by the program's own clock (the
 * histogram's 16-33 ms slot): a loaded machine wakes a sleeper late, past the slot.
 */
#include <stdint.h>
#include <stdio.h>
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
	long in_slot = 0;
	uint64_t slept_ns = 0;

	for (long i = 0; i < k; i++)
		syscall(SYS_getppid);	/* glibc may cache nothing here, but be sure */
	for (long i = 0; i < n; i++)
		close(-1);
	for (long i = 0; i < m; i++) {
		struct timespec t0, t1;
		uint64_t ns;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		nanosleep(&twenty_ms, NULL);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		ns = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000u + t1.tv_nsec - t0.tv_nsec;
		in_slot += ns >= (1u << 24) && ns < (1u << 25);
		slept_ns += ns;
	}
	if (m) {
		fprintf(stderr, "sysburn: nanosleeps_in_16_33ms=%ld\n", in_slot);
		fprintf(stderr, "sysburn: nanosleep_ns=%llu\n", (unsigned long long)slept_ns);
	}
	for (long i = 0; i < g; i++)
		syscall(SYS_getrandom, buf, sizeof(buf), 0);
	return 0;
}
