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

struct profile;
struct profiler;
struct run;
struct symbolizer;

/* A bounded line: appends stop (without overflow) when it is full. */
struct usage_line {
	char text[2048];
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

/* A holder of heap memory and the bytes its owner counts (each file keeps its own counter). */
struct usage_part {
	const char *name;
	size_t bytes;
};
#define USAGE_SYMBOL_PARTS 5
/* The symbolizer's holders (files' tables, processes' maps, ...) into @parts: how many (0: no @sym). */
size_t usage_symbol_parts(const struct symbolizer *sym, struct usage_part *parts);
/*
 * "memory KiB: NAME N, ...; other N of N in use": each part, then what the
 * heap has in use (mallinfo2) that no part counts (libbpf's objects, libelf,
 * stdio): a part that stops counting what it holds shows up there.
 */
void usage_memory(struct usage_line *line, const struct usage_part *parts, size_t nparts);
/*
 * usage_memory for a run of profilers: its symbolizer's parts (@sym may be
 * NULL), its DWARF unwinder's, and @nprofiles profiles being built (their
 * samples and frames).  @build_peak: the largest unwind table built (freed).
 */
void usage_run_memory(struct usage_line *line, const struct symbolizer *sym, const struct run *run,
		      const struct profile *profiles, int nprofiles, size_t *build_peak);

#endif /* USAGE_H */
