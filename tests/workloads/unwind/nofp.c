// SPDX-License-Identifier: GPL-2.0
/*
 * Known call chains in code built WITHOUT frame pointers (-O2
 * -fomit-frame-pointer), for the DWARF unwinder's tests:
 *   nofp chain SECONDS   main -> chain_a -> chain_b -> chain_c (spins)
 *   nofp lib SECONDS     main -> nofp_lib_a (libnofp.so, through the PLT) -> lib_b -> lib_c (spins)
 *   nofp plt SECONDS     main -> plt_loop -> nofp_lib_tiny through the PLT, 100M times a second
 *   nofp signal SECONDS  main -> sig_a -> sig_b (spins); a SIGPROF handler every 10 ms
 *                        spins in on_signal -> handler_spin for ~5 ms
 *   nofp pushpop SECONDS main -> pp_caller -> pp_leaf (a leaf with a push/pop prologue and
 *                        epilogue, called in a tight loop: samples land on both)
 *   nofp sleep SECONDS   main -> sleep_a -> sleep_b -> nanosleep 1 ms in a loop (off-CPU)
 * Each function is noinline and does work after its call, so that no call
 * becomes a tail jump.  Prints "done".
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

extern long nofp_lib_a(double seconds);
extern long nofp_lib_tiny(long x);

static volatile long sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Spins until @end, checking the clock rarely so that the samples are in this function. */
static NOINLINE long spin_until(double end)
{
	long x = 0;

	while (now() < end)
		for (int i = 0; i < 2000000; i++)
			x = x * 31 + i;
	return x;
}

NOINLINE long chain_c(double end) { long r = spin_until(end); sink = r; return r + 3; }
NOINLINE long chain_b(double end) { long r = chain_c(end); sink = r; return r + 2; }
NOINLINE long chain_a(double end) { long r = chain_b(end); sink = r; return r + 1; }

NOINLINE long plt_loop(double end)
{
	long x = 0;

	while (now() < end)
		for (int i = 0; i < 1000000; i++)
			x = nofp_lib_tiny(x);
	return x;
}

static volatile sig_atomic_t in_handler;

NOINLINE long handler_spin(void)
{
	long x = 0;

	for (long i = 0; i < 6000000; i++)
		x = x * 33 + i;
	sink = x;
	return x + 1;
}

NOINLINE void on_signal(int sig)
{
	long r = handler_spin();

	sink = r + sig;
}

NOINLINE long sig_b(double end)
{
	long x = 0;

	while (now() < end)
		for (int i = 0; i < 100000; i++)
			x = x * 29 + i;
	sink = x;
	return x + 2;
}

NOINLINE long sig_a(double end) { long r = sig_b(end); sink = r; return r + 1; }

static long signal_mode(double end)
{
	struct itimerval every = { { 0, 10000 }, { 0, 10000 } };
	struct sigaction sa;
	long r;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGPROF, &sa, NULL);
	setitimer(ITIMER_PROF, &every, NULL);
	r = sig_a(end);
	memset(&every, 0, sizeof(every));
	setitimer(ITIMER_PROF, &every, NULL);
	return r;
}

/*
 * Clobbers the callee-saved registers, so the compiler saves them: a
 * prologue of pushes and an epilogue of pops whose CFA rules change at every
 * instruction.
 */
NOINLINE long pp_leaf(long a, long b)
{
	long r1 = a * 3, r2 = b * 5, r3 = a ^ b, r4 = a + 7, r5 = b - 9, r6 = a * b;

	__asm__ volatile("" ::: "rbx", "r12", "r13", "r14", "r15");

	for (int i = 0; i < 4; i++) {
		r1 += r2 * i; r2 ^= r3 + i; r3 += r4 * r5; r4 -= r6; r5 += r1; r6 ^= r2;
		sink = r1 + r2 + r3 + r4 + r5 + r6;
	}
	return r1 ^ r2 ^ r3 ^ r4 ^ r5 ^ r6;
}

NOINLINE long pp_caller(double end)
{
	long x = 1;

	while (now() < end)
		for (int i = 0; i < 100000; i++)
			x = pp_leaf(x, i) + 1;
	return x;
}

NOINLINE long sleep_b(double end)
{
	struct timespec ms = { 0, 1000000 };
	long n = 0;

	while (now() < end) {
		nanosleep(&ms, NULL);
		n++;
	}
	sink = n;
	return n + 2;
}

NOINLINE long sleep_a(double end) { long r = sleep_b(end); sink = r; return r + 1; }

int main(int argc, char **argv)
{
	double end;
	long r;

	if (argc != 3) {
		fprintf(stderr, "usage: nofp chain|lib|plt|signal|pushpop|sleep SECONDS\n");
		return 2;
	}
	end = now() + atof(argv[2]);
	if (!strcmp(argv[1], "chain"))
		r = chain_a(end);
	else if (!strcmp(argv[1], "lib"))
		r = nofp_lib_a(end);
	else if (!strcmp(argv[1], "plt"))
		r = plt_loop(end);
	else if (!strcmp(argv[1], "signal"))
		r = signal_mode(end);
	else if (!strcmp(argv[1], "pushpop"))
		r = pp_caller(end);
	else if (!strcmp(argv[1], "sleep"))
		r = sleep_a(end);
	else
		return 2;
	sink = r;
	printf("done\n");
	return 0;
}
