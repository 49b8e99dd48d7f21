// SPDX-License-Identifier: GPL-2.0
/*
 * Every flush interval: drain the profilers (the counts are deltas since the
 * last flush) into one batch of messages for the running tasks, then send.
 * The drain is in steps so that a crash loses nothing (agent_ledger.c): the
 * idle generation is read, the batch saved, the ledger committed, and only
 * then does the kernel forget the counts.
 */
#include <string.h>
#include "agent_internal.h"

/* Reads generation @gen of @kind's profiler and appends its running tasks' messages to @batch. */
static void flush_kind(struct agent *a, int kind, int gen, int64_t now, struct sw_msgs *batch)
{
	struct agent_prof *ap = &a->prof[kind];
	struct profile prof;
	int err;

	profiler_profile_init(ap->p, &prof, a->sym);
	prof.time_ns = (int64_t)now_ns(CLOCK_REALTIME);
	err = profiler_read_generation_into(ap->p, gen, &prof);
	if (err)
		log_warn("%s: snapshot failed: %s", ap->ops->name, strerror(-err));
	for (size_t i = 0; i < a->ntasks; i++) {
		struct agent_task *t = a->tasks[i];
		/* Metadata goes on the task's first message of this stream only. */
		struct sw_task_meta meta = {
			.task_id = t->t.task_id, .process_id = t->t.process_ids[0],
			.start_ms = t->run_start_ms, .current_ms = now,
		};
		uint64_t total;
		int n;

		if (t->kind != kind || t->state != TASK_RUNNING)
			continue;
		n = sw_profile_messages(&prof, t->pids, t->npids, &meta, batch, &total);
		if (n < 0) {
			log_warn("task %s: cannot encode profiling data: %s", t->t.task_id, strerror(-n));
			continue;
		}
		t->messages += n;
		t->count += total;
	}
	profile_free(&prof);
}

/*
 * The upload's currentTime, after every earlier one: the OAP keys records by
 * (schedule, stack ids, upload time), and stack ids restart with each upload.
 */
static int64_t upload_time_ms(struct agent *a)
{
	int64_t now = wall_ms();

	if (now <= a->last_flush_ms)
		now = a->last_flush_ms + 1;
	a->last_flush_ms = now;
	return now;
}

/*
 * Reads the idle generations @gen (per profiler, -1: none) into one upload
 * for every running task, makes it durable, then empties them and queues it.
 */
void capture(struct agent *a, const int *gen)
{
	struct sw_msgs batch = { 0 };
	int64_t now = upload_time_ms(a);
	uint64_t seq = 0;

	for (int k = 0; k < PROFILER_MAX; k++)
		if (a->prof[k].p && gen[k] >= 0)
			flush_kind(a, k, gen[k], now, &batch);
	test_crash_point("read");
	if (batch.n) {
		seq = a->ledger.next_seq++;
		if (ledger_save_batch(&a->ledger, seq, &batch))
			seq = 0;	/* kept in memory only, said once */
	}
	test_crash_point("saved");
	for (int k = 0; k < PROFILER_MAX; k++)
		if (a->prof[k].p && gen[k] >= 0)
			a->ledger.captured[k] = profiler_generation_id(a->prof[k].p, gen[k]);
	ledger_commit(a);
	test_crash_point("committed");
	for (int k = 0; k < PROFILER_MAX; k++) {
		int err = a->prof[k].p && gen[k] >= 0 ? profiler_clear_generation(a->prof[k].p, gen[k]) : 0;

		if (err)
			log_warn("%s: cannot empty the drained counts: %s", a->prof[k].ops->name,
				 strerror(-err));
	}
	test_crash_point("cleared");
	for (int k = 0; k < PROFILER_MAX; k++)
		if (a->prof[k].p && gen[k] >= 0)
			profiler_collect_stacks(a->prof[k].p);	/* a failure is said once, deletes nothing */
	if (batch.n)
		spool_push(&a->spool, &batch, seq);
	sw_msgs_free(&batch);
}

/* Flips every profiler's generation, captures the idle ones, and sends. */
void flush(struct agent *a)
{
	int gen[PROFILER_MAX];

	for (int k = 0; k < PROFILER_MAX; k++)
		gen[k] = a->prof[k].p ? profiler_flip(a->prof[k].p) : -1;
	capture(a, gen);
	spool_send(a);
}
