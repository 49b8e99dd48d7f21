// SPDX-License-Identifier: GPL-2.0
/*
 * lockburn: lock workloads with a known answer.
 *
 *   lockburn mutex SECONDS THREADS   threads contend on one global pthread mutex
 *                                    (big_lock), holding it ~50 us each time;
 *                                    prints wait_ns=N (the threads' own total time
 *                                    blocked in pthread_mutex_lock), locks=N and
 *                                    lock_addr=N (the mutex's address, decimal)
 *   lockburn condvar SECONDS         two threads ping-pong on a condvar (waits
 *                                    that are not mutex contention)
 *   lockburn pimutex SECONDS THREADS the same on pi_lock, a PTHREAD_PRIO_INHERIT
 *                                    mutex (contended: futex(FUTEX_LOCK_PI))
 *   lockburn uncontended N           N lock/unlock pairs on one thread; prints ns=N
 *   lockburn mmap SECONDS THREADS    threads mmap/munmap in a loop: they contend
 *                                    on the process's mmap_lock in the kernel;
 *                                    prints maps=N (mmap/munmap pairs done)
 *   lockburn exitwait                a thread blocks on a held mutex when the
 *                                    process exits (a wait that never ends)
 *   lockburn nested SECONDS          two threads take outer_lock then, inside it, a
 *                                    second mutex that two more threads contend for:
 *                                    one of a pool whose address shares the outer
 *                                    lock's slot among a thread's held locks
 *                                    (bpf/events/locks.bpf.c held_slot)
 *   lockburn pipe SECONDS THREADS    threads write 64 KiB at a time into one pipe
 *                                    that one thread drains: they contend on the
 *                                    pipe's kernel mutex (pipe->mutex); prints
 *                                    pipe_writes=N
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <time.h>
#include "wl.h"

static pthread_mutex_t big_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t pi_lock;		/* PTHREAD_PRIO_INHERIT, set up in main */
static pthread_mutex_t *contended = &big_lock;
static pthread_mutex_t cv_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static volatile uint64_t sink;
static double run_seconds;
static uint64_t total_wait_ns, total_locks, total_maps;
static int cv_turn;
static pthread_mutex_t outer_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t inner_pool[16];
static pthread_mutex_t *inner_lock;

static void spin_ns(uint64_t ns)
{
	uint64_t end = now_ns(CLOCK_MONOTONIC) + ns;

	while (now_ns(CLOCK_MONOTONIC) < end)
		sink++;
}

__attribute__((noinline)) static void contend(void)
{
	uint64_t t0 = now_ns(CLOCK_MONOTONIC), waited;

	pthread_mutex_lock(contended);
	waited = now_ns(CLOCK_MONOTONIC) - t0;
	total_wait_ns += waited;	/* under the lock: no race */
	total_locks++;
	spin_ns(50000);
	pthread_mutex_unlock(contended);
	spin_ns(5000);
}

static void *mutex_thread(void *arg)
{
	uint64_t end = now_ns(CLOCK_MONOTONIC) + (uint64_t)(run_seconds * 1e9);

	while (now_ns(CLOCK_MONOTONIC) < end)
		contend();
	return NULL;
}

/* held_slot() of bpf/events/locks.bpf.c: which of a thread's 4 held-lock slots @lock takes. */
static unsigned int held_slot(const void *lock)
{
	uintptr_t a = (uintptr_t)lock;

	return ((a >> 3) ^ (a >> 7)) & 3;
}

__attribute__((noinline)) static void nested_outer(void)
{
	pthread_mutex_lock(&outer_lock);
	spin_ns(20000);
	pthread_mutex_lock(inner_lock);
	spin_ns(50000);
	pthread_mutex_unlock(inner_lock);
	pthread_mutex_unlock(&outer_lock);
	spin_ns(5000);
}

__attribute__((noinline)) static void nested_inner(void)
{
	pthread_mutex_lock(inner_lock);
	spin_ns(50000);
	pthread_mutex_unlock(inner_lock);
	spin_ns(5000);
}

/* Threads 0 and 1 take both locks, the others the inner one. */
static void *nested_thread(void *arg)
{
	uint64_t end = now_ns(CLOCK_MONOTONIC) + (uint64_t)(run_seconds * 1e9);
	bool outer = (intptr_t)arg < 2;

	while (now_ns(CLOCK_MONOTONIC) < end) {
		if (outer)
			nested_outer();
		else
			nested_inner();
	}
	return NULL;
}

static void nested_init(void)
{
	for (int i = 0; i < 16; i++) {
		pthread_mutex_init(&inner_pool[i], NULL);
		if (!inner_lock && held_slot(&inner_pool[i]) == held_slot(&outer_lock))
			inner_lock = &inner_pool[i];
	}
}

__attribute__((noinline)) static void map_unmap(void)
{
	void *p = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p != MAP_FAILED) {
		memset(p, 1, 1 << 16);
		munmap(p, 1 << 16);
	}
}

static void *mmap_thread(void *arg)
{
	uint64_t end = now_ns(CLOCK_MONOTONIC) + (uint64_t)(run_seconds * 1e9);

	uint64_t maps = 0;

	while (now_ns(CLOCK_MONOTONIC) < end) {
		map_unmap();
		maps++;
	}
	__sync_fetch_and_add(&total_maps, maps);
	return NULL;
}

static int pipe_fds[2];
static uint64_t total_pipe_writes;
static void run_threads(void *(*fn)(void *), int n);

static void *pipe_writer(void *arg)
{
	static char chunk[65536];
	uint64_t end = now_ns(CLOCK_MONOTONIC) + (uint64_t)(run_seconds * 1e9), writes = 0;

	while (now_ns(CLOCK_MONOTONIC) < end && write(pipe_fds[1], chunk, sizeof(chunk)) > 0)
		writes++;
	__sync_fetch_and_add(&total_pipe_writes, writes);
	return NULL;
}

static void *pipe_drain(void *arg)
{
	static char chunk[65536];

	while (read(pipe_fds[0], chunk, sizeof(chunk)) > 0)
		;
	return NULL;
}

/* Writers and a reader on one pipe: every read and write takes the pipe's mutex. */
static void pipe_contend(int writers)
{
	pthread_t reader;

	if (pipe(pipe_fds))
		exit(1);
	pthread_create(&reader, NULL, pipe_drain, NULL);
	run_threads(pipe_writer, writers);
	close(pipe_fds[1]);
	pthread_join(reader, NULL);
	printf("pipe_writes=%llu\n", (unsigned long long)total_pipe_writes);
}

/* Takes turns with the other thread: every wait is a condvar wait. */
static void *cv_thread(void *arg)
{
	int me = (int)(intptr_t)arg;
	uint64_t end = now_ns(CLOCK_MONOTONIC) + (uint64_t)(run_seconds * 1e9);

	while (now_ns(CLOCK_MONOTONIC) < end) {
		pthread_mutex_lock(&cv_lock);
		while (cv_turn != me && cv_turn >= 0)
			pthread_cond_wait(&cv, &cv_lock);
		pthread_mutex_unlock(&cv_lock);
		spin_ns(200000);	/* my turn: the other one waits on the condvar meanwhile */
		pthread_mutex_lock(&cv_lock);
		if (cv_turn >= 0)
			cv_turn = !me;
		pthread_cond_broadcast(&cv);
		pthread_mutex_unlock(&cv_lock);
	}
	pthread_mutex_lock(&cv_lock);
	cv_turn = -1;	/* release the other one for good */
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&cv_lock);
	return NULL;
}

static volatile pid_t waiter_tid;

static void *exit_waiter(void *arg)
{
	waiter_tid = (pid_t)syscall(SYS_gettid);
	pthread_mutex_lock(&big_lock);	/* held by main until the process is gone */
	return NULL;
}

/* Whether thread @tid of this process is asleep (state S: the waiter parked on the futex). */
static bool thread_asleep(pid_t tid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	return stat_state(path) == 'S';
}

/*
 * The process exits while a thread waits for big_lock, 200 ms after the
 * waiter was seen asleep (not 200 ms after it was created: on a loaded
 * machine it may not have run by then, and its wait would be shorter).
 */
static void exit_while_waiting(void)
{
	uint64_t give_up = now_ns(CLOCK_MONOTONIC) + 10ull * 1000 * 1000 * 1000;
	pthread_t t;

	pthread_mutex_lock(&big_lock);
	pthread_create(&t, NULL, exit_waiter, NULL);
	while ((!waiter_tid || !thread_asleep(waiter_tid)) && now_ns(CLOCK_MONOTONIC) < give_up)
		usleep(1000);
	spin_ns(200 * 1000 * 1000);
	printf("exiting\n");
	fflush(stdout);
	_exit(0);
}

static void pi_init(void)
{
	pthread_mutexattr_t attr;

	pthread_mutexattr_init(&attr);
	pthread_mutexattr_setprotocol(&attr, PTHREAD_PRIO_INHERIT);
	pthread_mutex_init(&pi_lock, &attr);
	pthread_mutexattr_destroy(&attr);
}

static void run_threads(void *(*fn)(void *), int n)
{
	pthread_t t[64];

	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, fn, (void *)(intptr_t)i);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "mutex";
	int threads = argc > 3 ? atoi(argv[3]) : 4;

	run_seconds = argc > 2 ? atof(argv[2]) : 3;
	if (threads < 1 || threads > 64)
		threads = 4;
	if (!strcmp(mode, "mutex") || !strcmp(mode, "pimutex")) {
		if (!strcmp(mode, "pimutex")) {
			pi_init();
			contended = &pi_lock;
		}
		run_threads(mutex_thread, threads);
		printf("wait_ns=%llu locks=%llu lock_addr=%llu\n", (unsigned long long)total_wait_ns,
		       (unsigned long long)total_locks, (unsigned long long)(uintptr_t)contended);
	} else if (!strcmp(mode, "exitwait")) {
		exit_while_waiting();
	} else if (!strcmp(mode, "mmap")) {
		run_threads(mmap_thread, threads);
		printf("maps=%llu\n", (unsigned long long)total_maps);
	} else if (!strcmp(mode, "nested")) {
		nested_init();
		run_threads(nested_thread, 4);
		printf("slot=%u inner=%p\n", held_slot(&outer_lock), (void *)inner_lock);
	} else if (!strcmp(mode, "pipe")) {
		pipe_contend(threads);
	} else if (!strcmp(mode, "condvar")) {
		cv_turn = 0;
		run_threads(cv_thread, 2);
	} else if (!strcmp(mode, "uncontended")) {
		long n = argc > 2 ? atol(argv[2]) : 10000000;
		uint64_t t0 = now_ns(CLOCK_MONOTONIC);

		for (long i = 0; i < n; i++) {
			pthread_mutex_lock(&big_lock);
			sink++;
			pthread_mutex_unlock(&big_lock);
		}
		printf("ns=%llu\n", (unsigned long long)(now_ns(CLOCK_MONOTONIC) - t0));
	} else {
		fprintf(stderr, "usage: lockburn mutex|pimutex|condvar|uncontended|mmap|nested|pipe|exitwait ...\n");
		return 2;
	}
	return 0;
}
