/* SPDX-License-Identifier: GPL-2.0 */
/*
 * --jvm-perfmap: at start, each second for 5 s, then every N s, each JVM among the targets (the -p
 * pids and their descendants, or every process) is asked to write its
 * /tmp/perf-PID.map, which the symbolizer reads to name JIT frames.
 */
#ifndef JVM_PERFMAP_H
#define JVM_PERFMAP_H

#include <stdint.h>
#include <stdio.h>

#define JVM_PERFMAP_DEFAULT_S 10

struct jvm_perfmap;

/* @pids (@npids, 0: every process) are kept by reference. NULL when out of memory. */
struct jvm_perfmap *jvm_perfmap_new(unsigned int interval_s, const uint32_t *pids, int npids);
/* Asks the JVMs when a round is due (the first call is one). */
void jvm_perfmap_tick(struct jvm_perfmap *jp);
/* The end line: how many JVMs were asked, how many answered. */
void jvm_perfmap_report(const struct jvm_perfmap *jp, FILE *out);
void jvm_perfmap_free(struct jvm_perfmap *jp);

#endif /* JVM_PERFMAP_H */
