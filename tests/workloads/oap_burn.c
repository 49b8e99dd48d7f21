// SPDX-License-Identifier: GPL-2.0
/*
 * Workload for the SkyWalking OAP tests.  The main thread burns CPU, 70% of
 * the work in oap_hot_a and 30% in oap_hot_b (same loop, 7:3 iterations); a
 * second thread blocks 2 ms at a time in oap_nap, which makes the nanosleep
 * system call itself so that the user stack's leaf is ours, not libc's
 * (Debian's libc has no frame pointers).
 *   oap_burn [SECONDS]   (default: run until killed)
 */
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>

static volatile unsigned long sink;

/*
 * gcc 12 leaves leaf functions without a frame even with
 * -fno-omit-frame-pointer (and -mno-omit-leaf-frame-pointer): a sample in a
 * frameless leaf loses its caller.  -O0 always builds the frame.
 */
#define LEAF __attribute__((noinline, optimize("O0")))

LEAF void oap_hot_a(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i * i;
}

LEAF void oap_hot_b(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i * i;
}

LEAF long oap_nap(const struct timespec *ts)
{
	long ret;

	__asm__ volatile("syscall" : "=a"(ret) : "0"((long)SYS_nanosleep), "D"(ts), "S"(0L)
			 : "rcx", "r11", "memory");
	return ret;
}

__attribute__((noinline)) void *oap_sleeper(void *arg)
{
	struct timespec ts = { 0, 2000000 };

	for (;;)
		oap_nap(&ts);
	return arg;
}

int main(int argc, char **argv)
{
	time_t end = argc > 1 ? time(NULL) + atoi(argv[1]) : 0;
	pthread_t t;

	unsigned int seed = (unsigned int)time(NULL);

	pthread_create(&t, NULL, oap_sleeper, NULL);
	while (!end || time(NULL) < end) {
		/*
		 * A fixed-length round aliases with 99 Hz sampling (shares of 86/14
		 * seen): scale each round at random, keeping its 7:3 split.
		 */
		unsigned long unit = 50000 + rand_r(&seed) % 100000;

		oap_hot_a(7 * unit);
		oap_hot_b(3 * unit);
	}
	return 0;
}
