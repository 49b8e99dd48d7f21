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
 * ledger (agent_ledger.c) keeps tasks and unacknowledged uploads on disk, so
 * that a crash loses and duplicates nothing.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "agent.h"
#include "agent_internal.h"
#include "cli.h"
#include "symbolize.h"
#include "usage.h"

static void consume_events(struct agent *a)
{
	for (int k = 0; k < PROFILER_MAX; k++)
		if (a->prof[k].events)
			ring_buffer__consume(a->prof[k].events);
}

/*
 * How long a stop (SIGTERM, the first Ctrl-C) may still talk to the OAP, all
 * calls together: the last interval is sent if the OAP answers; if not, it
 * waits in the ledger for the next start instead of holding the stop.
 */
#define STOP_GRACE_MS 3000

/* Caps and use: every heartbeat (with -v) and on SIGUSR1. */
static void stats_line(struct agent *a, bool asked)
{
	struct usage_line line = { .len = 0 };
	uint64_t rss_kib, fds;

	for (int k = 0; k < PROFILER_MAX; k++) {
		if (a->prof[k].p) {
			usage_profiler(&line, a->prof[k].p);
			usage_append(&line, "; ");
		}
	}
	usage_symbols(&line, a->sym);
	usage_append(&line, "; selected processes %zu/%d (%" PRIu64 " left out); tasks %zu; spool %zu/%zu bytes",
		     a->nprocs, MAX_AGENT_PROCS, a->procs_left_out, a->ntasks, a->spool.bytes, a->spool.limit);
	/* Said only when true: "dropped" in the log means data was. */
	if (a->spool.dropped_msgs)
		usage_append(&line, " (%" PRIu64 " messages dropped)", a->spool.dropped_msgs);
	usage_append(&line, "; refused from the OAP: %" PRIu64 " commands, %" PRIu64 " arguments, %" PRIu64
		     " process ids, %" PRIu64 " tasks over %d, %" PRIu64 " tasks ahead",
		     a->refused[REFUSED_COMMANDS], a->refused[REFUSED_ARGS], a->refused[REFUSED_IDS],
		     a->refused[REFUSED_TASKS], AGENT_MAX_TASKS, a->refused[REFUSED_AHEAD]);
	usage_append(&line, "; ");
	usage_process(&rss_kib, &fds);
	(asked ? log_notice : log_info)("stats: %s(used/cap) rss %" PRIu64 " KiB, %" PRIu64 " fds",
					line.text, rss_kib, fds);
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

	while (!cli_stop && !a->fatal) {
		uint64_t now = now_ns(CLOCK_MONOTONIC), wake;

		if (now >= end)
			break;
		if (cli_reload) {
			cli_reload = 0;
			agent_reload(a);
		}
		if (now >= next_heartbeat) {
			heartbeat(a);
			stats_line(a, false);
			next_heartbeat = next_tick(next_heartbeat, a->o.heartbeat_ms, now);
		}
		if (cli_stats) {
			cli_stats = 0;
			stats_line(a, true);
		}
		if (!a->fatal && now >= next_query) {
			if (any_unreported(a))
				report_processes(a, false);
			if (!a->fatal)
				query_tasks(a);
			prune_tasks(a);
			next_query = next_tick(next_query, a->o.task_ms, now);
		}
		if (a->fatal)
			break;
		tick_tasks(a);
		if (now >= next_flush) {
			flush(a);
			symbolizer_trim(a->sym);	/* the flush's profiles are encoded and freed */
			next_flush = next_tick(next_flush, a->o.flush_ms, now);
		}
		consume_events(a);
		symbolizer_reread_young(a->sym);	/* announced before their loader mapped libraries */
		/* Short naps: task start and stop times are checked every 100 ms at most. */
		wake = min_u64(min_u64(next_heartbeat, next_query), min_u64(next_flush, end));
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
	bool running = false;

	for (size_t i = 0; i < a->ntasks; i++)
		running |= a->tasks[i]->state == TASK_RUNNING;
	if (!a->fatal && (running || a->spool.head))
		flush(a);	/* the last interval, and one more try for the spool */
	for (size_t i = 0; i < a->ntasks; i++)
		if (a->tasks[i]->state == TASK_RUNNING)
			log_task_end(a, a->tasks[i], "interrupted");
	spool_log_losses(a);
}

static void agent_free(struct agent *a)
{
	for (int k = 0; k < PROFILER_MAX; k++)
		prof_close(&a->prof[k]);
	if (a->o.pin_dir)
		profiler_shared_close(&a->shared);
	while (a->spool.head)
		spool_pop(&a->spool);	/* their ledger files stay: sent at the next start */
	ledger_close(&a->ledger);
	for (size_t i = 0; i < a->ntasks; i++)
		task_free(a->tasks[i]);
	free(a->tasks);
	for (size_t i = 0; i < a->nprocs; i++)
		proc_free(a->procs[i]);
	free(a->procs);
	grpc_channel_free(a->ch);
	symbolizer_free(a->sym);
	if (a->o.token) {
		memset(a->o.token, 0, strlen(a->o.token));
		free(a->o.token);
	}
}

struct grpc_channel *agent_channel_new(const struct agent_opts *o)
{
	struct grpc_opts gopts = {
		.target = o->oap,
		.cancel = &cli_abort,	/* a second Ctrl-C does not wait for deadlines */
		.stop = &cli_stop,
		.stop_grace_ms = STOP_GRACE_MS,
		.token = o->token,
		.tls = &o->tls,
		.backoff_max_ms = (unsigned int)o->backoff_max_ms,
		.backoff_initial_ms = (unsigned int)min_u64(1000, o->backoff_max_ms),
	};

	return grpc_channel_new(&gopts);
}

int agent_main(int argc, char **argv)
{
	struct agent a = { .argc = argc, .argv = argv };
	int err;

	profiler_shared_init(&a.shared);
	a.ledger.dir_fd = a.ledger.lock_fd = -1;	/* closed by agent_free, opened or not */
	err = parse_args(&a.o, argc, argv);
	if (err)
		return err < 0 ? 0 : err;
	/* Every profiler that serves a SkyWalking TargetType. */
	for (int i = 0; profilers[i]; i++)
		if (profilers[i]->skywalking_target)
			a.prof[profilers[i]->id].ops = profilers[i];
	a.spool.limit = a.o.spool_bytes;
	err = EXIT_RUNTIME;
	if (!cli_check_environment())
		goto out;
	cli_libbpf_logging();
	cli_install_signals();
	cli_install_daemon_signals();	/* SIGHUP: reload, SIGUSR1: stats */
	sw_uuid(a.agent_id);
	host_identity(&a);
	a.ch = agent_channel_new(&a.o);
	a.sym = symbolizer_new();
	if (!a.ch || !a.sym)
		goto out;
	ledger_open(&a);	/* before the profilers: it says which tasks run */
	if (a.o.pin_dir && open_pinned(&a))
		goto out;
	for (int k = 0; k < PROFILER_MAX && !a.o.pin_dir; k++)
		if (a.prof[k].ops)
			reconfigure(&a, k);	/* unpinned: loads the profilers of restored tasks */
	ledger_recover(&a);
	log_info("agent %s on %s (%s), OAP %s%s%s", a.agent_id, a.hostname, a.host_ip, a.o.oap,
		 a.o.tls.enabled ? " over TLS" : "", a.o.token ? ", with a token" : "");
	agent_loop(&a);
	agent_shutdown(&a);
	err = a.fatal ? EXIT_RUNTIME : 0;
out:
	agent_free(&a);
	return err;
}
