/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Which settings loaded BPF programs can take while they run (targets,
 * filters: written to the control and config maps) and which they cannot
 * (the programs loaded and attached, their maps' sizes, the perf events'
 * rate).  One list for every caller: SIGHUP keeps the running value and says
 * so; a daemon taking over a pinned set refuses to start.
 */
#ifndef SETTINGS_H
#define SETTINGS_H

#include <stdbool.h>
#include <stddef.h>
#include "profiler.h"

/* The fixed settings a new value was asked for: "--freq 199 (loaded: 99), ...". */
struct changed_keys {
	char text[512];
	size_t len;
	int n;
};

/* Appends one "--key new (loaded: old)" to @keys. */
void changed_keys_add(struct changed_keys *keys, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * For each fixed setting @next asks otherwise than @now (what is loaded),
 * names it in @keys and gives @next @now's value, so that @next can be
 * applied live as a whole.  Each kind's own fixed options come from its
 * ops->config.keep_fixed.  @may_add_kinds: profilers @now lacks may be asked for
 * (a takeover loads them); else the profilers are fixed too.  Returns the
 * number named.
 */
int settings_keep_fixed(const struct profiler_opts *now, struct profiler_opts *next, bool may_add_kinds,
			struct changed_keys *keys);

/*
 * Rows of the DWARF unwinding tables these options load (0: frame pointers
 * only): the one rule that profiler_open and the comparison above share.
 */
uint32_t settings_unwind_rows(const struct profiler_opts *o);

#endif /* SETTINGS_H */
