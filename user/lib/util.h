/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What every part of aperture uses: one-line logging, output files, allocation, clocks, small
 * string and array helpers, threads, fault injection for tests.
 */
#ifndef UTIL_H
#define UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/types.h>

/* One-line messages on stderr, prefixed "aperture: ". */
void log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_notice(const char *fmt, ...) __attribute__((format(printf, 1, 2)));	/* always printed */
extern int log_verbose;	/* -v: log_info prints */

enum log_format { LOG_FORMAT_TEXT, LOG_FORMAT_JSON };
/* "text" (aperture: ...) or "json" ({"ts","level","msg"} per line); false for another name. */
bool log_set_format(const char *name);
/* @context (NULL: none) returns a prefix for each line, or NULL: where a bad setting came from. */
void log_set_context(const char *(*context)(void));

/*
 * Opens @path for writing, truncated.  A file it creates is 0600: a profile names every process
 * on the machine and, without CAP_SYSLOG, holds kernel addresses (KASLR).  An existing file
 * keeps its mode.  The fd (the FILE) or -1 (NULL) with errno set.
 */
int open_output(const char *path);
FILE *fopen_output(const char *path);

/* calloc and strdup that log a failure (one line) and return NULL: callers degrade. */
void *calloc_logged(size_t n, size_t size);
char *strdup_logged(const char *s);

/*
 * Makes room for one more element in *@arr (holding @n of @cap, each @size
 * bytes): doubles the capacity (from @first) when full.  0, or -ENOMEM with
 * *@arr unchanged.
 */
int array_reserve(void **arr, size_t *cap, size_t n, size_t size, size_t first);
/*
 * What the heap gives @ptr (malloc'ed; NULL: 0): its usable size and the
 * chunk's header, so that an owner's byte counter adds up to the allocator's
 * own count (mallinfo2) and not only to what it asked for.
 */
size_t heap_bytes(const void *ptr);

/*
 * Big buffers (unwind tables being built, snapshots) mmap'ed, back to the
 * system when freed: glibc's default raises its mmap threshold after the
 * first such free and from then on serves them from the arenas, which kept
 * 13 MiB free of an 18 MiB daemon; fixed at its initial 128 KiB, the daemon
 * held 7 MiB.  main calls it first.
 */
void heap_defaults(void);
/*
 * Keeps what is freed in the heap, for reuse, from the outermost begin to its
 * end, which gives it back (malloc_trim) and restores heap_defaults().  Each
 * BPF object's load has libbpf parse the kernel's BTF into two new buffers of
 * its size (5.5 MB here) and free them; with big
 * blocks mmap'ed, every load touched new pages, and a new page costs ~10 us
 * on the VMs this runs on (a third of a short record's start-up).  Kept, each
 * load after the first reuses the first's pages.  Nests.
 */
void heap_keep_begin(void);
void heap_keep_end(void);

uint64_t now_ns(int clock);		/* clock_gettime in ns */
bool str_ends_with(const char *s, const char *suffix);
/*
 * @in into @out (@outlen bytes) with '%', ';', spaces, control and non-ASCII
 * bytes as %XX, so that it is one word of a folded stack and decodes back to
 * the bytes it was.  false when it does not fit (@out is then "").
 */
bool str_percent_escape(char *out, size_t outlen, const char *in);
bool pid_in(const uint32_t *pids, size_t n, uint32_t pid);
/* A small file (/proc, a token) into @buf, NUL-terminated: its length or -errno. */
ssize_t read_small_file(const char *path, char *buf, size_t size);
/*
 * pthread_create with every signal blocked in the new thread, so that signals
 * (SIGINT, SIGTERM, SIGCHLD) reach the main thread and interrupt its wait:
 * 0 or -errno.
 */
int thread_start(pthread_t *thread, void *(*fn)(void *), void *arg);
/*
 * The main loop's wakeup, which signal handlers post: a signal that comes
 * between the loop's checks and its wait ends the wait at once, instead of
 * when it times out (up to a second).  wakeup_init() before the handlers are
 * installed (0, or -errno: then a signal only interrupts a wait under way);
 * wakeup_fd() to wait on (-1: none); wakeup_post() from a handler
 * (async-signal-safe); wakeup_clear() after the wait.
 */
int wakeup_init(void);
int wakeup_fd(void);
void wakeup_post(void);
void wakeup_clear(void);
/* Test hook: true (after one line) at the APERTURE_FAIL_AT'th call; @where names the step. */
bool fault_inject(const char *where);

#endif /* UTIL_H */
