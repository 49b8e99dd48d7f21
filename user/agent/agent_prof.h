/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The profilers behind the tasks, one per kind: loaded while the kind has a
 * running task, or all kept loaded and pinned under --pin; each one's
 * kernel-side pid filter is the set the caller hands it.
 */
#ifndef AGENT_PROF_H
#define AGENT_PROF_H

#include <stdbool.h>
#include <stdint.h>
#include "profiler.h"
#include "run.h"

struct agent_prof {
	const struct profiler_ops *ops;	/* NULL: this kind serves no SkyWalking target */
	struct profiler *p;
	struct run run;			/* unpinned: its own maps and events, while it is loaded */
	uint32_t *pids;			/* p->opts.pids points here */
};

void prof_close(struct agent_prof *ap);
/*
 * Loads (or takes over) the profilers of @prof (by profiler id, those with
 * ops) pinned under @pin_dir, disabled until a task comes.  0 or -errno.
 */
int prof_open_pinned(struct agent_prof *prof, const char *pin_dir, const struct profiler_opts *o,
		     struct run *run);
/*
 * Hands @ap's profiler the pid set @want (@nwant, taken): loads it with @o
 * when unpinned and not loaded, closes it when nothing is wanted and no task
 * is @ending.  -errno when it could not be loaded: its tasks cannot run.
 */
int prof_retarget(struct agent_prof *ap, uint32_t *want, int nwant, bool ending, bool pinned,
		  const struct profiler_opts *o, struct symbolizer *sym);

#endif /* AGENT_PROF_H */
