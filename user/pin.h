/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Pinning a profiler's maps, links and iterators under a bpffs directory, so
 * that scripts can read and steer it with bpftool and cat, and so that a
 * restarted (or kill -9'ed) daemon finds its programs still counting.
 *
 * Names under DIR (stable, documented in the README):
 *   control, target_pids                shared by all profilers
 *   NAME_counts_0, NAME_counts_1        the two generations of per-interval counts
 *   NAME_active                         ARRAY_OF_MAPS: which generation is live
 *   NAME_totals                         cumulative counts, never drained
 *   NAME_stacks, NAME_stats, NAME_events
 *   NAME_link_N                         the attached programs
 *   NAME_folded                         iterator: `cat` prints folded stacks
 */
#ifndef PIN_H
#define PIN_H

#include <stdbool.h>
#include "profiler.h"

#define PIN_DEFAULT_DIR "/sys/fs/bpf/aperture"

/* Mounts bpffs on /sys/fs/bpf when absent, creates DIR with mode 0700. */
int pin_prepare_dir(const char *dir);
/* Does DIR hold a pinned profiler NAME? */
bool pin_present(const char *dir, const char *name);
/* Pins everything of @p (loaded and attached) under DIR. */
int profiler_pin(struct profiler *p, const char *dir);
/*
 * Takes over a pinned profiler: no program is loaded or attached, the pinned
 * ones keep running.  A layout-version mismatch is an error naming the fix.
 */
int profiler_open_pinned(struct profiler **out, const struct profiler_ops *ops,
			 const struct profiler_opts *opts, const char *dir);
/*
 * The daemons' way in: takes over NAME's pins under DIR when they are there
 * (the programs kept counting), else loads, attaches and pins it.
 */
int profiler_open_pinned_or_new(struct profiler **out, const struct profiler_ops *ops,
				const struct profiler_opts *opts, const char *dir);

/*
 * Empties the totals and stacks of every profiler pinned under DIR, so that a
 * long-running daemon's maps do not fill up.  Counting is paused meanwhile
 * (control.enabled) and restored after.
 */
int pin_reset(const char *dir);

/* Removes every pin under DIR (a bpffs directory) and DIR itself. */
int pin_remove_all(const char *dir);

#endif /* PIN_H */
