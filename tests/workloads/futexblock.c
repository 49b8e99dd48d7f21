// SPDX-License-Identifier: GPL-2.0
/*
 * futexblock: threads blocked on futexes.
 *
 *   futexblock [SECONDS]      (default: 3 s)
 *
 * Two threads loop in wait_on_futex(), a raw FUTEX_WAIT on a shared word
 * (issued inline so that wait_on_futex is the user leaf frame), and one
 * thread loops in wait_on_cond() on a pthread condition variable (through
 * libc, whose missing frame pointers may hide wait_on_cond itself).  The main
 * thread wakes everyone every 100 ms.  Off-CPU kernel stacks of the waiters go
 * through futex_wait.  At exit prints `wakeups=N`.
 */
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NFUTEX_WAITERS 2

static _Atomic uint32_t futex_word;	/* bumped on every wake-up */
static atomic_bool stopping;
static pthread_mutex_t cond_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static uint32_t cond_generation;

/* Sleeps while the futex word still holds @seen. */
__attribute__((noinline)) long wait_on_futex(uint32_t seen)
{
	register long timeout asm("r10") = 0;
	long ret;

	asm volatile("syscall"
		     : "=a"(ret)
		     : "0"((long)SYS_futex), "D"(&futex_word),
		       "S"((long)(FUTEX_WAIT | FUTEX_PRIVATE_FLAG)), "d"((long)seen), "r"(timeout)
		     : "rcx", "r11", "memory");
	return ret;
}

__attribute__((noinline)) void wait_on_cond(uint32_t *seen)
{
	pthread_mutex_lock(&cond_lock);
	while (cond_generation == *seen && !atomic_load(&stopping))
		pthread_cond_wait(&cond, &cond_lock);
	*seen = cond_generation;
	pthread_mutex_unlock(&cond_lock);
}

static void *futex_thread(void *arg)
{
	(void)arg;
	while (!atomic_load(&stopping))
		wait_on_futex(atomic_load(&futex_word));
	return NULL;
}

static void *cond_thread(void *arg)
{
	uint32_t seen = 0;

	(void)arg;
	while (!atomic_load(&stopping))
		wait_on_cond(&seen);
	return NULL;
}

static void wake_all(void)
{
	atomic_fetch_add(&futex_word, 1);
	syscall(SYS_futex, &futex_word, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, NFUTEX_WAITERS, NULL, NULL, 0);
	pthread_mutex_lock(&cond_lock);
	cond_generation++;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&cond_lock);
}

int main(int argc, char **argv)
{
	struct timespec tick = { .tv_sec = 0, .tv_nsec = 100000000 };
	double run_seconds = argc > 1 ? atof(argv[1]) : 3.0;
	pthread_t tids[NFUTEX_WAITERS + 1];
	int nticks;

	if (run_seconds <= 0) {
		fprintf(stderr, "usage: %s [SECONDS]\n", argv[0]);
		return 2;
	}
	for (int i = 0; i < NFUTEX_WAITERS; i++)
		if (pthread_create(&tids[i], NULL, futex_thread, NULL)) {
			perror("pthread_create");
			return 1;
		}
	if (pthread_create(&tids[NFUTEX_WAITERS], NULL, cond_thread, NULL)) {
		perror("pthread_create");
		return 1;
	}
	nticks = (int)(run_seconds * 10);
	for (int i = 0; i < nticks; i++) {
		nanosleep(&tick, NULL);
		wake_all();
	}
	atomic_store(&stopping, true);
	wake_all();
	for (int i = 0; i <= NFUTEX_WAITERS; i++)
		pthread_join(tids[i], NULL);
	printf("wakeups=%d\n", nticks);
	return 0;
}
