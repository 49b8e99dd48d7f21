// SPDX-License-Identifier: GPL-2.0
/*
 * The profilers behind the tasks.  Unpinned, a profiler is loaded while its
 * kind has a running task; under --pin all stay loaded and idle ones are
 * disabled.  Either way the kernel-side pid filter is the set agent.c hands
 * it: the union of the processes of the kind's running tasks.
 */
#include <errno.h>
#include <stdlib.h>
#include <bpf/libbpf.h>
#include "agent_prof.h"
#include "pin.h"
#include "util.h"

void prof_close(struct agent_prof *ap)
{
	profiler_close(ap->p);
	ap->p = NULL;
	run_close(&ap->run);
	free(ap->pids);
	ap->pids = NULL;
}

static int prof_open(struct agent_prof *ap, uint32_t *pids, int npids, const struct profiler_opts *o,
		     struct symbolizer *sym)
{
	struct profiler_opts opts = *o;
	int err;

	opts.pids = pids;
	opts.npids = npids;
	ap->pids = pids;
	err = profiler_open(&ap->p, &ap->run, ap->ops, &opts);
	if (!err)
		err = profiler_attach(ap->p);
	if (!err)
		run_watch_events(&ap->run, sym, NULL, NULL);	/* degrades, logged */
	if (err)
		prof_close(ap);
	return err;
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

int prof_open_pinned(struct agent_prof *prof, const char *pin_dir, const struct profiler_opts *o,
		     struct run *run)
{
	struct profiler_opts opts = *o;
	const struct profiler_ops *ops[PROFILER_MAX];
	struct profiler *profs[PROFILER_MAX];
	int err, n = 0;

	opts.keep_totals = true;
	opts.targets_only = true;
	opts.disabled = true;
	for (int k = 0; k < PROFILER_MAX; k++)
		if (prof[k].ops)
			ops[n++] = prof[k].ops;
	err = pin_start(pin_dir, run, ops, n, &opts, profs, NULL, NULL);
	/* Stored at once, so that the caller closes every one even after a failure later. */
	for (int i = 0; i < n && !err; i++)
		prof[ops[i]->id].p = profs[i];
	return err;
}

int prof_retarget(struct agent_prof *ap, uint32_t *want, int nwant, bool ending, bool pinned,
		  const struct profiler_opts *o, struct symbolizer *sym)
{
	int err;

	if (pinned) {
		reconfigure_pinned(ap, want, nwant);
		return 0;
	}
	if (nwant == 0 && ap->p && ending) {
		/* Its last tasks end: nothing more is counted, but their last flush needs the maps. */
		ap->p->opts.disabled = true;
		prof_set_pids(ap, want, 0);
		return 0;
	}
	if (nwant == 0) {
		if (ap->p)
			log_info("%s: no task left, profiler stopped", ap->ops->name);
		prof_close(ap);
		return 0;
	}
	if (!ap->p) {
		err = prof_open(ap, want, nwant, o, sym);
		if (!err)
			log_info("%s: profiling %d processes", ap->ops->name, nwant);
		return err;
	}
	/* Live: the kernel-side set follows the tasks. */
	ap->p->opts.disabled = false;
	prof_set_pids(ap, want, nwant);
	return 0;
}
