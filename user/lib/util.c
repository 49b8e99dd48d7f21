// SPDX-License-Identifier: GPL-2.0
/*
 * Logging (text or JSON lines), output files created 0600, allocation that logs its failure,
 * and small string and array helpers (util.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "util.h"

int log_verbose;
static enum log_format log_format_used = LOG_FORMAT_TEXT;
static const char *(*log_context)(void);

bool log_set_format(const char *name)
{
	if (strcmp(name, "text") == 0)
		log_format_used = LOG_FORMAT_TEXT;
	else if (strcmp(name, "json") == 0)
		log_format_used = LOG_FORMAT_JSON;
	else
		return false;
	return true;
}

void log_set_context(const char *(*context)(void))
{
	log_context = context;
}

/* @s as the inside of a JSON string: quotes, backslashes and control characters escaped. */
static void json_string(FILE *out, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", out);
		else if (c == '\t')
			fputs("\\t", out);
		else if (c < 0x20)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
}

/* One object per line, as log shippers (journald's JSON, Vector, Fluent Bit) read them. */
static void log_json(const char *level, const char *msg)
{
	struct timespec ts;
	struct tm tm;
	char when[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	flockfile(stderr);	/* one line, whole, though another thread logs too (--jvm-perfmap's) */
	fprintf(stderr, "{\"ts\":\"%s.%03ldZ\",\"level\":\"%s\",\"msg\":\"", when, ts.tv_nsec / 1000000, level);
	json_string(stderr, msg);
	fputs("\"}\n", stderr);
	funlockfile(stderr);
}

static void log_line(const char *level, const char *fmt, va_list ap)
{
	const char *context = log_context ? log_context() : NULL;
	char line[4096];	/* the daemon's stats line is about 1.5 KB */
	int len = 0;

	/* The context (a config file's FILE:LINE) says where the bad value came from. */
	if (context)
		len = snprintf(line, sizeof(line), "%s: ", context);
	vsnprintf(line + len, sizeof(line) - len, fmt, ap);
	if (log_format_used == LOG_FORMAT_JSON)
		log_json(level, line);
	else
		fprintf(stderr, "aperture: %s%s\n", strcmp(level, "warning") ? "" : "warning: ", line);
}

void log_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_line("error", fmt, ap);
	va_end(ap);
}

void log_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_line("warning", fmt, ap);
	va_end(ap);
}

void log_notice(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_line("info", fmt, ap);
	va_end(ap);
}

void log_info(const char *fmt, ...)
{
	va_list ap;

	if (!log_verbose)
		return;
	va_start(ap, fmt);
	log_line("info", fmt, ap);
	va_end(ap);
}
int open_output(const char *path)
{
	return open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
}

FILE *fopen_output(const char *path)
{
	int fd = open_output(path);
	FILE *f = fd < 0 ? NULL : fdopen(fd, "w");

	if (fd >= 0 && !f) {
		int err = errno;

		close(fd);
		errno = err;
	}
	return f;
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

bool str_percent_escape(char *out, size_t outlen, const char *in)
{
	size_t n = 0;

	for (; *in; in++) {
		unsigned char c = (unsigned char)*in;
		bool plain = c > ' ' && c < 0x7f && c != '%' && c != ';';

		if (n + (plain ? 1 : 3) >= outlen) {
			if (outlen)
				out[0] = '\0';
			return false;
		}
		if (plain)
			out[n++] = (char)c;
		else
			n += (size_t)snprintf(out + n, outlen - n, "%%%02X", c);
	}
	if (!outlen)
		return false;
	out[n] = '\0';
	return true;
}

bool pid_in(const uint32_t *pids, size_t n, uint32_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (pids[i] == pid)
			return true;
	return false;
}

ssize_t read_small_file(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return -errno;
	n = fread(buf, 1, size - 1, f);
	fclose(f);
	buf[n] = '\0';
	return (ssize_t)n;
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

int array_reserve(void **arr, size_t *cap, size_t n, size_t size, size_t first)
{
	size_t grown_cap;
	void *grown;

	if (n < *cap)
		return 0;
	grown_cap = *cap ? *cap * 2 : first;
	grown = realloc(*arr, grown_cap * size);
	if (!grown)
		return -ENOMEM;
	*arr = grown;
	*cap = grown_cap;
	return 0;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE	23	/* Linux 5.14; older headers lack it */
#endif
#define HEAP_THRESHOLD		(128 * 1024)		/* both thresholds: glibc's initial ones, fixed */
#define HEAP_KEEP_THRESHOLD	(32 * 1024 * 1024)	/* glibc's largest M_MMAP_THRESHOLD */

static int heap_keep_depth;	/* the loading thread's only: workers never load */

/* [*first, *last): the whole @align-aligned units inside @block's @bytes. */
static bool aligned_inside(const char *block, size_t bytes, uintptr_t align, uintptr_t *first, uintptr_t *last)
{
	*first = ((uintptr_t)block + align - 1) & ~(align - 1);
	*last = ((uintptr_t)block + bytes) & ~(align - 1);
	return *last > *first;
}

#define HUGE_PAGE (2ul << 20)

/*
 * The heap grown by @bytes at once, its pages made present by one madvise
 * (5.14+; refused before, then touched one by one as before): a page touched
 * first costs ~10 us here, one populated ~0.7 us and then ~5 us at its first
 * touch (the hypervisor's part).  Asked as transparent huge pages first (where
 * THP is "madvise" or "always"; else the advice is refused and nothing
 * changes): the kernel's BTF then costs a few faults, not ~3000 (perf stat of
 * two BTF parses: 35 -> 15 ms of CPU here).
 */
static void heap_prefault(size_t bytes)
{
	char *block = malloc(bytes);
	uintptr_t first, last;

	if (!block)
		return;
	if (aligned_inside(block, bytes, HUGE_PAGE, &first, &last))
		madvise((void *)first, last - first, MADV_HUGEPAGE);
	if (aligned_inside(block, bytes, (uintptr_t)sysconf(_SC_PAGESIZE), &first, &last))
		madvise((void *)first, last - first, MADV_POPULATE_WRITE);
	free(block);
}

void heap_defaults(void)
{
	mallopt(M_MMAP_THRESHOLD, HEAP_THRESHOLD);
}

void heap_keep_begin(void)
{
	struct stat st;

	if (heap_keep_depth++)
		return;
	mallopt(M_MMAP_THRESHOLD, HEAP_KEEP_THRESHOLD);
	mallopt(M_TRIM_THRESHOLD, 2 * HEAP_KEEP_THRESHOLD);
	/* libbpf's two buffers of the kernel's BTF, and room for its index */
	if (stat("/sys/kernel/btf/vmlinux", &st) == 0 && st.st_size > 0 && st.st_size < HEAP_KEEP_THRESHOLD / 2)
		heap_prefault(2 * (size_t)st.st_size + (1 << 20));
}

void heap_keep_end(void)
{
	if (heap_keep_depth <= 0 || --heap_keep_depth)
		return;
	heap_defaults();
	mallopt(M_TRIM_THRESHOLD, HEAP_THRESHOLD);
	malloc_trim(0);
}

size_t heap_bytes(const void *ptr)
{
	return ptr ? malloc_usable_size((void *)ptr) + sizeof(size_t) : 0;
}

int thread_start(pthread_t *thread, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(thread, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return -err;
}

static int wakeup_efd = -1;

int wakeup_init(void)
{
	if (wakeup_efd < 0)
		wakeup_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	return wakeup_efd < 0 ? -errno : 0;
}

int wakeup_fd(void)
{
	return wakeup_efd;
}

void wakeup_post(void)
{
	uint64_t one = 1;
	int saved = errno;

	if (wakeup_efd >= 0 && write(wakeup_efd, &one, sizeof(one)) < 0)
		(void)0;	/* EAGAIN: the counter is full, the wakeup already pending */
	errno = saved;
}

void wakeup_clear(void)
{
	uint64_t count;

	if (wakeup_efd >= 0 && read(wakeup_efd, &count, sizeof(count)) < 0)
		(void)0;	/* EAGAIN: nothing was posted */
}
