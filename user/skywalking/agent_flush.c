// SPDX-License-Identifier: GPL-2.0
/*
 * Every flush interval: drain the profilers (the counts are deltas since the
 * last flush) into one batch of messages for the running tasks, then send.
 */
#include <string.h>
#include "agent_internal.h"

/* Drains the profiler of @kind and appends its running tasks' messages to @batch. */
static void flush_kind(struct agent *a, int kind, int64_t now, struct sw_msgs *batch)
{
	struct agent_prof *ap = &a->prof[kind];
	struct profile prof;
	int err;

	profiler_profile_init(ap->p, &prof, a->sym);
	prof.time_ns = (int64_t)now_ns(CLOCK_REALTIME);
	err = profiler_snapshot_into(ap->p, &prof);
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

/* Drains the profilers into one batch of messages for every running task, and sends. */
void flush(struct agent *a)
{
	struct sw_msgs batch = { 0 };
	int64_t now = upload_time_ms(a);

	for (int k = 0; k < PROFILER_MAX; k++)
		if (a->prof[k].p)
			flush_kind(a, k, now, &batch);
	if (batch.n)
		spool_push(&a->spool, &batch);
	sw_msgs_free(&batch);
	spool_send(a);
}

