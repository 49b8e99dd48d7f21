// SPDX-License-Identifier: GPL-2.0
/*
 * forkstorm: short-lived processes as fast as they come (tools/soak.sh).
 *
 *   forkstorm SECONDS WORKERS [PROGRAM]
 *
 * WORKERS processes each fork a child and reap it, over and over, for
 * SECONDS.  Every other child execs PROGRAM (default /bin/true): a new
 * address space and mappings for the profiler to learn and forget; the
 * others run for 1 ms of CPU and exit, so that the profiler samples them
 * too and names their frames (a new process with its parent's mappings).
 * Prints forks=N (all workers together).
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Spins until this process has used @ms of CPU. */
static void burn_cpu_ms(double ms)
{
	struct timespec ts;

	do
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	while (ts.tv_sec * 1e3 + ts.tv_nsec / 1e6 < ms);
}

/* One child: exec @program when @exec, else burn 1 ms of CPU and exit. */
static void spawn_and_reap(const char *program, int exec)
{
	pid_t pid = fork();

	if (pid == 0) {
		if (exec)
			execl(program, program, (char *)NULL);
		burn_cpu_ms(1);
		_exit(0);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

static long storm(double seconds, const char *program)
{
	double end = now_s() + seconds;
	long forks = 0;

	while (now_s() < end)
		spawn_and_reap(program, forks++ & 1);
	return forks;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 10;
	int workers = argc > 2 ? atoi(argv[2]) : 2;
	const char *program = argc > 3 ? argv[3] : "/bin/true";
	/* The workers' counts, shared: each writes its own slot before it exits. */
	long *counts = mmap(NULL, sizeof(long) * workers, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	long total = 0;

	if (workers < 1 || counts == MAP_FAILED)
		return 2;
	for (int i = 0; i < workers; i++) {
		if (fork() == 0) {
			counts[i] = storm(seconds, program);
			_exit(0);
		}
	}
	while (wait(NULL) > 0)
		;
	for (int i = 0; i < workers; i++)
		total += counts[i];
	printf("forks=%ld\n", total);
	return 0;
}
