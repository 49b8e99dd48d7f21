// SPDX-License-Identifier: GPL-2.0
/*
 * pipeblock: a thread blocked reading a pipe.
 *
 *   pipeblock [SECONDS]      (default: 3 s)
 *
 * A reader thread loops in wait_on_pipe(), a one-byte read() on a pipe; the
 * main thread writes one byte every 200 ms.  The reader's off-CPU kernel
 * stack goes through the pipe read path (pipe_read, or anon_pipe_read on
 * newer kernels).  The read syscall is issued inline from wait_on_pipe so that
 * the function is the user leaf frame even though libc has no frame pointers.
 * At exit prints `reads=N`.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int pipe_fds[2];

/* Blocks until one byte arrives; returns what read() returned. */
__attribute__((noinline)) long wait_on_pipe(int fd)
{
	char byte;
	long ret;

	asm volatile("syscall"
		     : "=a"(ret)
		     : "0"((long)SYS_read), "D"((long)fd), "S"(&byte), "d"(1L)
		     : "rcx", "r11", "memory");
	return ret;
}

static void *reader_thread(void *arg)
{
	uint64_t *reads = arg;

	/* Ends at EOF, when main closes the write end. */
	while (wait_on_pipe(pipe_fds[0]) == 1)
		(*reads)++;
	return NULL;
}

int main(int argc, char **argv)
{
	struct timespec tick = { .tv_sec = 0, .tv_nsec = 200000000 };
	double run_seconds = argc > 1 ? atof(argv[1]) : 3.0;
	uint64_t reads = 0;
	pthread_t reader;
	int nticks;

	if (run_seconds <= 0) {
		fprintf(stderr, "usage: %s [SECONDS]\n", argv[0]);
		return 2;
	}
	if (pipe(pipe_fds) || pthread_create(&reader, NULL, reader_thread, &reads)) {
		perror("pipeblock");
		return 1;
	}
	nticks = (int)(run_seconds * 5);
	for (int i = 0; i < nticks; i++) {
		nanosleep(&tick, NULL);
		if (write(pipe_fds[1], "x", 1) != 1) {
			perror("write");
			return 1;
		}
	}
	close(pipe_fds[1]);
	pthread_join(reader, NULL);
	printf("reads=%llu\n", (unsigned long long)reads);
	return 0;
}
