// SPDX-License-Identifier: GPL-2.0
/*
 * `aperture run`: the SkyWalking OAP agent.
 *
 * One thread, one loop: heartbeat (process discovery, reportProcesses,
 * keepAlive), task discovery (queryTasks), task start/stop, and every flush
 * interval one collectProfilingData stream with what the profilers drained
 * since the previous flush.  Counts are the deltas the kernel aggregated in
 * that interval (profiler_snapshot drains the maps), never differences of
 * running totals.  What cannot be sent waits in a bounded spool, oldest
 * dropped first, and goes out in order once the OAP answers again.  The
 * ledger keeps tasks and unacknowledged uploads on disk (agent_store.c), so
 * that a crash loses and duplicates nothing (agent_recovery.c).
 *
 * This file holds the run's parts, hands each one what it needs, and is the
 * only one that commits the ledger: after the task table says it changed,
 * and between reading a capture and emptying its maps.  Calls point down:
 *   agent.c    every file below
 *   reload     oap, opts
 *   recovery   capture, tasks, spool, store
 *   capture    tasks, spool, store (and the profilers of prof)
 *   continuous tasks, procs, oap (--continuous: the OAP's policies start tasks)
 *   spool      store, oap
 *   tasks      procs, oap
 *   procs      oap
 *   oap, prof, store, opts: over net/, skywalking/, core/ and lib/ only
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "agent.h"
#include "agent_capture.h"
#include "agent_continuous.h"
#include "agent_oap.h"
#include "agent_opts.h"
#include "agent_procs.h"
#include "agent_prof.h"
#include "agent_recovery.h"
#include "agent_reload.h"
#include "agent_spool.h"
#include "agent_store.h"
#include "agent_tasks.h"
#include "cli.h"
#include "jvm_perfmap.h"
#include "symbolize.h"
#include "usage.h"

struct agent {
	struct agent_opts o;
	struct oap oap;
	struct symbolizer *sym;
	struct procs procs;
	struct tasks tasks;
	struct agent_prof prof[PROFILER_MAX];	/* by profiler id; ops NULL: no SkyWalking target */
	struct run run;			/* --pin: one control map, one target set, one events reader */
	struct store store;
	struct spool spool;
	struct capture capture;
	struct continuous cont;		/* --continuous */
	struct jvm_perfmap *jvm;	/* --jvm-perfmap: asks the tasks' JVMs on its own thread */
	int argc;			/* the command line, parsed again on SIGHUP */
	char **argv;
};

static void consume_events(struct agent *a)
{
	if (a->run.events)	/* --pin */
		ring_buffer__consume(a->run.events);
	for (int k = 0; k < PROFILER_MAX; k++)
		if (a->prof[k].run.events)
			ring_buffer__consume(a->prof[k].run.events);
}

/* "memory KiB: ...": the symbolizer's holders, each kind's unwinder, the spool (usage.h). */
static void memory_parts(const struct agent *a, struct usage_line *line)
{
	struct usage_part parts[USAGE_SYMBOL_PARTS + 2];
	size_t n = usage_symbol_parts(a->sym, parts), held, build_peak, peak = 0;

	parts[n] = (struct usage_part){ "unwind", 0 };
	for (int k = 0; k < PROFILER_MAX; k++) {
		run_unwind_bytes(&a->prof[k].run, &held, &build_peak);
		parts[n].bytes += held;
		peak = build_peak > peak ? build_peak : peak;
	}
	parts[++n] = (struct usage_part){ "spool", a->spool.bytes };
	usage_memory(line, parts, n + 1);
	usage_append(line, " (freed since: the largest unwind table built %zu); ", peak >> 10);
}

/* Caps and use: every heartbeat (with -v) and on SIGUSR1. */
static void stats_line(struct agent *a, bool asked)
{
	const uint64_t *refused = a->tasks.refused;
	struct usage_line line = { .len = 0 };
	uint64_t rss_kib, fds;

	for (int k = 0; k < PROFILER_MAX; k++) {
		if (a->prof[k].p) {
			usage_profiler(&line, a->prof[k].p);
			usage_append(&line, "; ");
		}
	}
	usage_symbols(&line, a->sym);
	if (a->jvm) {
		char summary[256];

		jvm_perfmap_summary(a->jvm, summary, sizeof(summary));
		usage_append(&line, "; %s", summary);
	}
	usage_append(&line, "; selected processes %zu/%d (%" PRIu64 " left out); tasks %zu; spool %zu/%zu bytes",
		     a->procs.n, MAX_AGENT_PROCS, a->procs.left_out, a->tasks.n, a->spool.bytes, a->spool.limit);
	/* Said only when true: "dropped" in the log means data was. */
	if (a->spool.dropped_msgs)
		usage_append(&line, " (%" PRIu64 " messages dropped)", a->spool.dropped_msgs);
	usage_append(&line, "; refused from the OAP: %" PRIu64 " commands, %" PRIu64 " arguments, %" PRIu64
		     " process ids, %" PRIu64 " tasks over %d, %" PRIu64 " tasks ahead",
		     refused[REFUSED_COMMANDS], refused[REFUSED_ARGS], refused[REFUSED_IDS],
		     refused[REFUSED_TASKS], AGENT_MAX_TASKS, refused[REFUSED_AHEAD]);
	if (a->o.continuous)
		usage_append(&line, "; continuous: %zu processes watched, %" PRIu64 " trips, %" PRIu64
			     " tasks answered, meters %" PRIu64 " sent, %" PRIu64 " dropped", a->cont.nwatch,
			     a->cont.trips, a->cont.reports, a->cont.meters_sent, a->cont.meters_dropped);
	usage_append(&line, "; ");
	memory_parts(a, &line);
	usage_process(&rss_kib, &fds);
	(asked ? log_notice : log_info)("stats: %s(used/cap) rss %" PRIu64 " KiB, %" PRIu64 " fds",
					line.text, rss_kib, fds);
}

/* The ledger's text: the capture's sequence and saved generations, the task table. */
static int ledger_text(const struct agent *a, char **text, size_t *len)
{
	FILE *f = open_memstream(text, len);

	if (!f)
		return -errno;
	fprintf(f, "%s\n", LEDGER_MAGIC);
	capture_put(f, &a->capture, a->prof);
	tasks_put(f, &a->tasks);
	silences_put(f, &a->cont.silences, wall_ms(), a->cont.silence_s);
	if (fclose(f))
		return -errno;
	return 0;
}

/* The ledger, replaced atomically: what a restart goes on from. */
static void agent_commit(struct agent *a)
{
	char *text = NULL;
	size_t len = 0;
	int err;

	if (!store_is_open(&a->store))
		return;
	err = ledger_text(a, &text, &len);
	if (err)
		store_failed(&a->store, LEDGER_FILE, err);
	else
		store_write(&a->store, LEDGER_FILE, text, len);
	free(text);
}

/*
 * Reads the idle generations @gen (per profiler, -1: none) into one upload
 * for every running task, makes it durable, then empties them and queues it.
 */
static void agent_capture(struct agent *a, const int *gen)
{
	struct capture_batch b;

	capture_read(&a->capture, gen, a->prof, &a->tasks, a->sym, &a->store, &b);
	agent_commit(a);
	test_crash_point("committed");
	capture_end(&b, a->prof, &a->spool);
}

/* Flips every profiler's generation, captures the idle ones, and sends. */
static void agent_flush(struct agent *a)
{
	int gen[PROFILER_MAX];

	for (int k = 0; k < PROFILER_MAX; k++)
		gen[k] = a->prof[k].p ? profiler_flip(a->prof[k].p) : -1;
	agent_capture(a, gen);
	spool_send(&a->spool, &a->oap);
}

/* The kernel-side PID filter of @kind follows the union of its running tasks' processes. */
static void agent_retarget(struct agent *a, int kind)
{
	struct agent_prof *ap = &a->prof[kind];
	uint32_t *want;
	int nwant = tasks_wanted_pids(&a->tasks, kind, &want);

	if (nwant < 0) {
		log_warn("%s: out of memory, the profiled processes are not updated", ap->ops->name);
		return;
	}
	if (prof_retarget(ap, want, nwant, tasks_any_ending(&a->tasks, kind), a->o.pin_dir != NULL,
			  &a->o.prof, a->sym))
		tasks_abort(&a->tasks, kind);
}

/* --jvm-perfmap: the JVMs asked are those among the processes of every kind's running tasks. */
static void agent_retarget_jvm(struct agent *a)
{
	uint32_t *all = NULL, *grown;
	int nall = 0;

	if (!a->jvm)
		return;
	for (int k = 0; k < PROFILER_MAX; k++) {
		uint32_t *want;
		int nwant = a->prof[k].ops ? tasks_wanted_pids(&a->tasks, k, &want) : 0;

		if (nwant < 0 || (nwant && !(grown = realloc(all, (size_t)(nall + nwant) * sizeof(*all))))) {
			log_warn("--jvm-perfmap: out of memory, the JVMs asked are not updated");
			if (nwant > 0)
				free(want);
			free(all);
			return;
		}
		if (nwant) {
			all = grown;
			memcpy(all + nall, want, (size_t)nwant * sizeof(*all));	/* a pid twice is asked once */
			nall += nwant;
			free(want);
		}
	}
	if (jvm_perfmap_set_only(a->jvm, all, nall))
		log_warn("--jvm-perfmap: out of memory, the JVMs asked are not updated");
	free(all);
}

static void agent_retarget_changed(struct agent *a, const bool *changed)
{
	bool any = false;

	for (int k = 0; k < PROFILER_MAX; k++)
		if (changed[k]) {
			agent_retarget(a, k);
			any = true;
		}
	if (any)
		agent_retarget_jvm(a);
}

/*
 * Starts due tasks, ends finished ones.  A task is in the ledger before its
 * processes are counted, and is no longer counted before its last flush,
 * so that what the kernel counted for it and what is sent are the same.
 */
static void agent_tick_tasks(struct agent *a)
{
	int64_t now = wall_ms();
	bool changed[PROFILER_MAX] = { false };

	if (tasks_start_due(&a->tasks, now, a->sym, changed)) {
		agent_commit(a);
		agent_retarget_changed(a, changed);
	}
	memset(changed, 0, sizeof(changed));
	if (!tasks_mark_ending(&a->tasks, now, changed))
		return;
	agent_retarget_changed(a, changed);	/* the ending tasks' processes are no longer counted */
	agent_flush(a);	/* the last interval of the ending tasks */
	tasks_end_marked(&a->tasks);
	agent_commit(a);
	agent_retarget_changed(a, changed);	/* an unpinned profiler with no task left is closed */
}

/*
 * --continuous, once a second: the policies checked; a task the OAP answered
 * a trip with is in the ledger before its profiler counts its process.
 */
static void agent_check_policies(struct agent *a)
{
	bool changed[PROFILER_MAX] = { false };

	if (!continuous_check(&a->cont, &a->procs, &a->oap, &a->tasks, changed))
		return;
	agent_commit(a);
	agent_tick_tasks(a);	/* starts it now, not at the next loop */
}

/* SIGHUP: settings that reload_read() accepted replace the running ones. */
static void agent_reload(struct agent *a)
{
	static struct agent_opts next;	/* a profiler_opts is 4 KiB */
	bool identity;

	if (!reload_read(&a->o, a->argc, a->argv, &a->oap, &next, &identity))
		return;
	opts_free_token(&a->o);
	a->o = next;
	symbolizer_apply(a->sym, &a->o.prof.symbols);
	a->spool.limit = a->o.spool_bytes;	/* a smaller spool drops its oldest at the next push */
	a->cont.task_s = a->o.continuous_task_s;	/* for the tasks started from now on */
	a->cont.silence_s = a->o.continuous_silence_s;
	if (identity)
		procs_forget(&a->procs);
	log_notice("reload: selection (%d pids, %d patterns, %d cgroups), intervals, spool%s applied; "
		   "profiler options apply to profilers loaded from now on%s", a->o.npids, a->o.nexe,
		   a->o.ncgroups, identity ? ", service, instance, layer and labels (processes reported again)" : "",
		   a->o.pin_dir ? " (pinned ones keep theirs until a restart)" : "");
}

/* Loads (or takes over) the profilers pinned under --pin, idle until a task comes. */
static int agent_open_pinned(struct agent *a)
{
	int err = prof_open_pinned(a->prof, a->o.pin_dir, &a->o.prof, &a->run);

	for (int k = 0; k < PROFILER_MAX && !err; k++) {
		struct agent_prof *ap = &a->prof[k];

		if (!ap->p)
			continue;
		/*
		 * A taken-over profiler still runs its last tasks' filter: it becomes
		 * that of the tasks restored from the ledger (none: idle), without a
		 * gap in between.
		 */
		agent_retarget(a, k);
		run_watch_events(&a->run, a->sym, NULL, NULL);	/* the first: the run's reader; degrades, logged */
	}
	return err;
}

static uint64_t min_u64(uint64_t x, uint64_t y)
{
	return x < y ? x : y;
}

/*
 * The next due time of a periodic job: one period after the last due time,
 * so that time spent in the loop does not add up; never in the past.
 */
static uint64_t next_tick(uint64_t due, uint64_t period_ms, uint64_t now)
{
	due += period_ms * MS;
	return due > now ? due : now + period_ms * MS;
}

static void agent_loop(struct agent *a)
{
	uint64_t start = now_ns(CLOCK_MONOTONIC);
	uint64_t end = a->o.duration_s ? start + a->o.duration_s * 1000000000ull : UINT64_MAX;
	uint64_t next_heartbeat = start, next_query = start, next_flush = start + a->o.flush_ms * MS;
	uint64_t next_check = start;

	while (!cli_stop && !a->oap.fatal) {
		uint64_t now = now_ns(CLOCK_MONOTONIC), wake;

		if (now >= end)
			break;
		if (cli_reload) {
			cli_reload = 0;
			agent_reload(a);
		}
		if (now >= next_heartbeat) {
			procs_heartbeat(&a->procs, &a->o, &a->oap);
			stats_line(a, false);
			next_heartbeat = next_tick(next_heartbeat, a->o.heartbeat_ms, now);
		}
		if (cli_stats) {
			cli_stats = 0;
			stats_line(a, true);
		}
		if (!a->oap.fatal && now >= next_query) {
			if (procs_any_unreported(&a->procs))
				procs_report(&a->procs, &a->o, &a->oap, false);
			if (!a->oap.fatal && tasks_query(&a->tasks, &a->oap, &a->procs))
				agent_commit(a);	/* the tasks accepted, and where the next query starts */
			if (!a->oap.fatal && a->o.continuous)
				continuous_query(&a->cont, &a->oap, &a->procs);
			tasks_prune(&a->tasks);
			next_query = next_tick(next_query, a->o.task_ms, now);
		}
		if (a->oap.fatal)
			break;
		agent_tick_tasks(a);
		if (a->o.continuous && now >= next_check) {
			agent_check_policies(a);
			next_check = next_tick(next_check, 1000, now);	/* Rover's fetch_interval */
		}
		if (now >= next_flush) {
			agent_flush(a);
			symbolizer_trim(a->sym);	/* the flush's profiles are encoded and freed */
			next_flush = next_tick(next_flush, a->o.flush_ms, now);
		}
		consume_events(a);
		symbolizer_reread_young(a->sym);	/* announced before their loader mapped libraries */
		/* Short naps: task start and stop times are checked every 100 ms at most. */
		wake = min_u64(min_u64(next_heartbeat, next_query), min_u64(next_flush, end));
		if (a->o.continuous)
			wake = min_u64(wake, next_check);
		now = now_ns(CLOCK_MONOTONIC);
		if (wake > now)
			usleep((useconds_t)(min_u64(wake - now, 100 * MS) / 1000));
	}
	if (cli_stop)
		log_warn("stopping: sending the last data for up to %.0f s (a second Ctrl-C quits at once)",
			 STOP_GRACE_MS / 1e3);
}

static void agent_shutdown(struct agent *a)
{
	if (!a->oap.fatal && (tasks_any_running(&a->tasks) || a->spool.head))
		agent_flush(a);	/* the last interval, and one more try for the spool */
	tasks_log_interrupted(&a->tasks);
	spool_log_losses(&a->spool, a->o.oap);
}

static void agent_free(struct agent *a)
{
	if (a->jvm) {
		jvm_perfmap_stop(a->jvm);	/* its counts are final */
		jvm_perfmap_report(a->jvm);
		jvm_perfmap_free(a->jvm);
	}
	for (int k = 0; k < PROFILER_MAX; k++)
		prof_close(&a->prof[k]);
	run_close(&a->run);
	spool_free(&a->spool);	/* their batch records stay: sent at the next start */
	store_close(&a->store);
	tasks_free(&a->tasks);
	continuous_free(&a->cont);
	procs_free(&a->procs);
	grpc_channel_free(a->oap.ch);
	symbolizer_free(a->sym);
	opts_free_token(&a->o);
}

int agent_main(int argc, char **argv)
{
	struct agent a = { .argc = argc, .argv = argv };
	int gen[PROFILER_MAX];
	int err;

	run_init(&a.run);
	for (int k = 0; k < PROFILER_MAX; k++)
		run_init(&a.prof[k].run);
	store_init(&a.store);	/* closed by agent_free, opened or not */
	capture_init(&a.capture);
	a.oap.o = &a.o;
	a.spool.store = &a.store;
	err = opts_parse(&a.o, argc, argv);
	if (err)
		return err < 0 ? 0 : err;
	/* Every profiler that serves a SkyWalking TargetType. */
	for (int i = 0; profilers[i]; i++)
		if (profilers[i]->skywalking_target)
			a.prof[profilers[i]->id].ops = profilers[i];
	a.spool.limit = a.o.spool_bytes;
	continuous_init(&a.cont, &a.o);
	err = EXIT_RUNTIME;
	if (!cli_check_environment())
		goto out;
	cli_libbpf_logging();
	cli_install_signals();
	cli_install_daemon_signals();	/* SIGHUP: reload, SIGUSR1: stats */
	sw_uuid(a.oap.agent_id);
	procs_host_identity(&a.procs);
	a.oap.ch = oap_channel_new(&a.o);
	a.sym = symbolizer_new(&a.o.prof.symbols);
	if (!a.oap.ch || !a.sym)
		goto out;
	/* No target until a task runs (only = true: none, not every process). */
	if (a.o.jvm_perfmap_s && !(a.jvm = jvm_perfmap_start((unsigned int)a.o.jvm_perfmap_s, NULL, 0, true)))
		goto out;
	/* Before the profilers: the ledger says which tasks run. */
	if (!store_open(&a.store, a.o.state_dir, a.o.oap, a.o.pin_dir))
		recovery_load(&a.store, &a.capture, &a.tasks, &a.cont.silences, &a.spool, a.prof, a.sym);
	if (a.o.pin_dir && agent_open_pinned(&a))
		goto out;
	for (int k = 0; k < PROFILER_MAX && !a.o.pin_dir; k++)
		if (a.prof[k].ops)
			agent_retarget(&a, k);	/* unpinned: loads the profilers of restored tasks */
	agent_retarget_jvm(&a);	/* the restored tasks' JVMs */
	if (recovery_unsaved(&a.store, &a.capture, a.prof, a.o.pin_dir != NULL, gen))
		agent_capture(&a, gen);
	agent_commit(&a);
	log_info("agent %s on %s (%s), OAP %s%s%s", a.oap.agent_id, a.procs.hostname, a.procs.host_ip, a.o.oap,
		 a.o.tls.enabled ? " over TLS" : "", a.o.token ? ", with a token" : "");
	agent_loop(&a);
	agent_shutdown(&a);
	err = a.oap.fatal ? EXIT_RUNTIME : 0;
out:
	agent_free(&a);
	return err;
}
