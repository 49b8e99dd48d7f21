/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the long-running modes hold against their caps, as text for their
 * stats line: each map's entries of its max_entries, the stacks collected,
 * the symbol cache's bytes and processes of its limits, this process's
 * memory.  Shared by the local daemon and the SkyWalking agent.
 */
#ifndef USAGE_H
#define USAGE_H

#include <stddef.h>
#include <stdint.h>

struct profiler;
struct symbolizer;

/* A bounded line: appends stop (without overflow) when it is full. */
struct usage_line {
	char text[1024];
	size_t len;
};
void usage_append(struct usage_line *line, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "oncpu: stacks U/C totals U/C counts U/C target_pids U/C stacks_collected N" */
void usage_profiler(struct usage_line *line, struct profiler *p);
/* "symbols KIB/LIMIT KiB, processes N/MAX, files N/MAX (forgotten: ...)" */
void usage_symbols(struct usage_line *line, const struct symbolizer *sym);
/* This process's resident memory (KiB) and open fds, from /proc/self. */
void usage_process(uint64_t *rss_kib, uint64_t *fds);
/*
 * The allocator's view (glibc mallinfo2, every arena): bytes handed out,
 * bytes free inside the heap (RSS that malloc keeps), bytes in mmap'ed
 * chunks; so that RSS splits into what is in use and what is kept.
 */
void usage_heap(uint64_t *in_use_kib, uint64_t *free_kib, uint64_t *mmap_kib);

#endif /* USAGE_H */
