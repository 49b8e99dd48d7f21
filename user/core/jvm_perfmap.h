/* SPDX-License-Identifier: GPL-2.0 */
/*
 * --jvm-perfmap: at start, each second for 5 s, then every N s, each JVM among the targets (the -p
 * pids and their descendants, or every process; for the SkyWalking agent, the processes of its
 * running tasks) is asked to write its /tmp/perf-PID.map, which the symbolizer reads to name JIT frames.  The asking runs on a thread
 * of its own: an ask waits for the JVM up to seconds, and the record and daemon loops must not.
 */
#ifndef JVM_PERFMAP_H
#define JVM_PERFMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JVM_PERFMAP_DEFAULT_S 10

struct jvm_perfmap;

/*
 * Starts the asking thread; its first round starts at once.  @pids (@npids; 0: every process, or
 * none with @only) are copied.  NULL (logged) when out of memory or without a thread.
 */
struct jvm_perfmap *jvm_perfmap_start(unsigned int interval_s, const uint32_t *pids, int npids, bool only);
/* New targets (a daemon's SIGHUP; 0: every process): copied, and asked in a round that starts at once. */
int jvm_perfmap_set_targets(struct jvm_perfmap *jp, const uint32_t *pids, int npids);
/* The same with these processes only (and their descendants): none when @npids is 0 (no task runs). */
int jvm_perfmap_set_only(struct jvm_perfmap *jp, const uint32_t *pids, int npids);
/* Stops the thread: at most the ask in flight is waited for (bounded by the attach timeouts). */
void jvm_perfmap_stop(struct jvm_perfmap *jp);
/* "jvm perf maps: N JVMs asked, M answered[, ...]" into @buf. */
void jvm_perfmap_summary(struct jvm_perfmap *jp, char *buf, size_t len);
/* A warning per JVM that never answered, and the summary as the end line. */
void jvm_perfmap_report(struct jvm_perfmap *jp);
/* Stops the thread if it runs, and frees. */
void jvm_perfmap_free(struct jvm_perfmap *jp);

#endif /* JVM_PERFMAP_H */
