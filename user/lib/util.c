// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "util.h"

int log_verbose;

static void log_line(const char *level, const char *fmt, va_list ap)
{
	char line[1024];

	vsnprintf(line, sizeof(line), fmt, ap);
	fprintf(stderr, "aperture: %s%s\n", level, line);
}

void log_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_line("", fmt, ap);
	va_end(ap);
}

void log_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_line("warning: ", fmt, ap);
	va_end(ap);
}

void log_info(const char *fmt, ...)
{
	va_list ap;

	if (!log_verbose)
		return;
	va_start(ap, fmt);
	log_line("", fmt, ap);
	va_end(ap);
}

void *calloc_logged(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		log_error("out of memory (%zu x %zu bytes)", n, size);
	return p;
}

char *strdup_logged(const char *s)
{
	char *copy = strdup(s ? s : "");

	if (!copy)
		log_error("out of memory");
	return copy;
}

uint64_t now_ns(int clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

bool str_ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

bool pid_in(const uint32_t *pids, size_t n, uint32_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (pids[i] == pid)
			return true;
	return false;
}

/*
 * APERTURE_FAIL_AT=N (tests only): the Nth fault point reached fails, so that
 * a test can walk every step of a start and check what a failure leaves.
 */
bool fault_inject(const char *where)
{
	static long fail_at = -1, reached;

	if (fail_at < 0) {
		const char *env = getenv("APERTURE_FAIL_AT");

		fail_at = env ? strtol(env, NULL, 10) : 0;
	}
	if (fail_at <= 0 || ++reached != fail_at)
		return false;
	log_error("injected failure at step %ld (%s)", reached, where);
	return true;
}
