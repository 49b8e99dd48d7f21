// SPDX-License-Identifier: GPL-2.0
/*
 * The profilers behind the tasks.  Unpinned, a profiler is loaded while its
 * kind has a running task; under --pin all stay loaded and idle ones are
 * disabled.  Either way the kernel-side pid filter is the union of the
 * processes of the kind's running tasks.
 */
#include <errno.h>
#include <stdlib.h>
#include <bpf/libbpf.h>
#include "agent_internal.h"
#include "pin.h"

void prof_close(struct agent_prof *ap)
{
	ring_buffer__free(ap->events);
	ap->events = NULL;
	profiler_close(ap->p);
	ap->p = NULL;
	free(ap->pids);
	ap->pids = NULL;
}

static int prof_open(struct agent *a, struct agent_prof *ap, uint32_t *pids, int npids)
{
	struct profiler_opts opts = a->o.prof;
	int err;

	opts.pids = pids;
	opts.npids = npids;
	ap->pids = pids;
	err = profiler_open(&ap->p, ap->ops, &opts);
	if (!err)
		err = profiler_attach(ap->p);
	if (!err)
		profiler_watch_processes(ap->p, &ap->events, a->sym);	/* degrades, logged */
	if (err)
		prof_close(ap);
	return err;
}

/* Whether @t's processes are counted by @kind's profiler: running and not ending. */
static bool counted(const struct agent_task *t, int kind)
{
	return t->kind == kind && t->state == TASK_RUNNING && !t->ending;
}

/* The union of the pids of @kind's running tasks, in *@out (malloc'd); count or -ENOMEM. */
static int wanted_pids(const struct agent *a, int kind, uint32_t **out)
{
	uint32_t *want = NULL;
	size_t cap = 0, n = 0;

	*out = NULL;
	for (size_t i = 0; i < a->ntasks; i++)
		if (counted(a->tasks[i], kind))
			cap += a->tasks[i]->npids;
	if (cap == 0)
		return 0;
	want = calloc(cap, sizeof(*want));
	if (!want)
		return -ENOMEM;
	for (size_t i = 0; i < a->ntasks; i++) {
		const struct agent_task *t = a->tasks[i];

		if (!counted(t, kind))
			continue;
		for (size_t j = 0; j < t->npids; j++)
			if (!pid_in(want, n, t->pids[j]))
				want[n++] = t->pids[j];
	}
	*out = want;
	return (int)n;
}

/* Ends the running tasks of @kind: there is nothing to run them with. */
static void abort_tasks(struct agent *a, int kind)
{
	for (size_t i = 0; i < a->ntasks; i++) {
		struct agent_task *t = a->tasks[i];

		if (t->kind == kind && t->state == TASK_RUNNING) {
			t->state = TASK_DONE;
			log_warn("task %s (%s) ended: its profiler cannot run", t->t.task_id,
				 t->t.target_name);
		}
	}
}

/* Hands the loaded profiler of @ap the target set @want (taken). */
static void prof_set_pids(struct agent_prof *ap, uint32_t *want, int nwant)
{
	if (profiler_set_pids(ap->p, want, nwant))
		log_warn("%s: the profiled processes could not all be updated", ap->ops->name);
	free(ap->pids);
	ap->pids = want;
}

/*
 * Pinned profilers stay loaded: with no task they are disabled through the
 * control map; their share of the target set follows their tasks.  Takes @want.
 */
static void reconfigure_pinned(struct agent_prof *ap, uint32_t *want, int nwant)
{
	if (!ap->p) {
		free(want);
		return;
	}
	ap->p->opts.disabled = nwant == 0;
	prof_set_pids(ap, want, nwant);
}

/* Loads (or takes over) both profilers pinned under --pin, idle until a task comes. */
int open_pinned(struct agent *a)
{
	struct profiler_opts opts = a->o.prof;
	const struct profiler_ops *ops[PROFILER_MAX];
	struct profiler *profs[PROFILER_MAX];
	int err, n = 0;

	opts.shared = &a->shared;
	opts.keep_totals = true;
	opts.targets_only = true;
	opts.disabled = true;
	for (int k = 0; k < PROFILER_MAX; k++)
		if (a->prof[k].ops)
			ops[n++] = a->prof[k].ops;
	err = pin_start(a->o.pin_dir, ops, n, &opts, profs, NULL, NULL);
	/* Stored first, so that agent_free closes every one even after a failure below. */
	for (int i = 0; i < n && !err; i++)
		a->prof[ops[i]->id].p = profs[i];
	for (int i = 0; i < n && !err; i++) {
		struct agent_prof *ap = &a->prof[ops[i]->id];

		/*
		 * A taken-over profiler still runs its last tasks' filter: it becomes
		 * that of the tasks restored from the ledger (none: idle), without a
		 * gap in between.
		 */
		reconfigure(a, ops[i]->id);
		profiler_watch_processes(ap->p, &ap->events, a->sym);	/* degrades, logged */
	}
	return err;
}

static bool any_ending(const struct agent *a, int kind)
{
	for (size_t i = 0; i < a->ntasks; i++)
		if (a->tasks[i]->kind == kind && a->tasks[i]->ending)
			return true;
	return false;
}

/* The kernel-side PID filter of @kind follows the union of its running tasks' processes. */
void reconfigure(struct agent *a, int kind)
{
	struct agent_prof *ap = &a->prof[kind];
	uint32_t *want;
	int nwant = wanted_pids(a, kind, &want);

	if (nwant < 0) {
		log_warn("%s: out of memory, the profiled processes are not updated", ap->ops->name);
		return;
	}
	if (a->o.pin_dir) {
		reconfigure_pinned(ap, want, nwant);
		return;
	}
	if (nwant == 0 && ap->p && any_ending(a, kind)) {
		/* Its last tasks end: nothing more is counted, but their last flush needs the maps. */
		ap->p->opts.disabled = true;
		prof_set_pids(ap, want, 0);
		return;
	}
	if (nwant == 0) {
		if (ap->p)
			log_info("%s: no task left, profiler stopped", ap->ops->name);
		prof_close(ap);
		return;
	}
	if (!ap->p) {
		if (prof_open(a, ap, want, nwant))
			abort_tasks(a, kind);
		else
			log_info("%s: profiling %d processes", ap->ops->name, nwant);
		return;
	}
	/* Live: the kernel-side set follows the tasks. */
	ap->p->opts.disabled = false;
	prof_set_pids(ap, want, nwant);
}

