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
 *   processes                           iterator: the processes counted
 * The iterators are optional (see pin_start); everything else is required.
 */
#ifndef PIN_H
#define PIN_H

#include <stdbool.h>
#include "profiler.h"

#define PIN_DEFAULT_DIR "/sys/fs/bpf/aperture"

/* Does DIR hold a pinned profiler NAME? */
bool pin_present(const char *dir, const char *name);
/*
 * Takes over a pinned profiler: no program is loaded or attached, the pinned
 * ones keep running.  A layout-version mismatch is an error naming the fix.
 */
int profiler_open_pinned(struct profiler **out, struct run *run, const struct profiler_ops *ops,
			 const struct profiler_opts *opts, const char *dir);
/*
 * What the set pinned under DIR was loaded with and cannot change while it
 * runs (user/core/settings.h): its kinds, each kind's config, its maps'
 * sizes, its unwinding tables' rows.  The rest of @loaded is left alone.
 * -ENOENT when no profiler is pinned there; a layout-version mismatch is an
 * error naming the fix.
 */
int pin_read_fixed(const char *dir, struct profiler_opts *loaded);
/*
 * The daemons' way in, all or nothing: mounts bpffs on /sys/fs/bpf when absent,
 * creates DIR (mode 0700), then for each of the @n profilers takes over its
 * pins under DIR when they are there (the programs kept counting), else
 * loads, attaches and pins it.  On any failure everything this call pinned is
 * removed and its programs detached, pins made before are left alone, and
 * @profs are all NULL.  Optional pins the kernel refuses (the iterators) are
 * left out with one warning.  @opened (may be NULL) is called on each
 * profiler once it is loaded or taken over, before it is attached: a reader
 * of its new-process notifications started there misses none of them.
 * Every profiler shares @run's maps (run.h): the first one gives them, and
 * @run->lock_fd becomes DIR (run_control_lock).  NAME_active of a profiler
 * loaded here is pinned last, after every profiler's control write: a fresh
 * set is ready to steer when it is there; a taken-over one when the caller
 * says so, after its own writes (the daemon: "took over DIR: ... applied").
 */
typedef void (*pin_opened_fn)(struct profiler *p, void *ctx);
int pin_start(const char *dir, struct run *run, const struct profiler_ops *const *ops, int n,
	      const struct profiler_opts *opts, struct profiler **profs, pin_opened_fn opened, void *ctx);

/*
 * Pins the links a running profiler attached since it was pinned (a library
 * a new process loaded) as NAME_link_N, N the first free number, so that they
 * outlive this daemon as the others do.  A link that cannot be pinned stays
 * attached until this daemon exits (logged); returns the last error or 0.
 */
int pin_new_links(const char *dir, struct profiler *p);

/*
 * DIR opened for flock(2) in @fd: every writer of DIR/control (the loaders,
 * tools/aperture-ctl) holds LOCK_EX around its read-modify-write.
 */
int pin_lock_open(const char *dir, int *fd);

/*
 * Empties the totals and stacks of every profiler pinned under DIR, so that a
 * long-running daemon's maps do not fill up.  Counting is paused meanwhile
 * (control.enabled) and restored after.
 */
int pin_reset(const char *dir);

/* Removes every pin under DIR (a bpffs directory) and DIR itself. */
int pin_remove_all(const char *dir);

#endif /* PIN_H */
