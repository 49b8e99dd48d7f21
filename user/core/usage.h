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

#endif /* USAGE_H */
