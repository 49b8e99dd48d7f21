// SPDX-License-Identifier: GPL-2.0
/*
 * leaderexit: a process whose main thread has exited while another runs on.
 *
 *   leaderexit [SECONDS [LEAD_MS]]   (defaults: 60 s, 0 ms)
 *
 * The main thread starts a thread that sleeps SECONDS, waits LEAD_MS, then
 * ends with pthread_exit: from then on /proc/PID/stat says Z (the leader's
 * state) and /proc/PID/maps is empty, while the process lives on in the
 * other thread (num_threads 2).
 */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

static void *sleep_on(void *arg)
{
	sleep((unsigned int)(long)arg);
	return NULL;
}

int main(int argc, char **argv)
{
	long seconds = argc > 1 ? atol(argv[1]) : 60;
	long lead_ms = argc > 2 ? atol(argv[2]) : 0;
	pthread_t t;

	if (pthread_create(&t, NULL, sleep_on, (void *)seconds))
		return 1;
	usleep((useconds_t)lead_ms * 1000);
	pthread_exit(NULL);
}
