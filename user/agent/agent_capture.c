// SPDX-License-Identifier: GPL-2.0
/*
 * Capture: every flush interval the profilers' drained generations (the
 * counts are deltas since the last flush) become one batch of messages for
 * the running tasks.  The drain is in steps so that a crash loses nothing
 * (agent_recovery.c): the idle generation is read, the batch saved, the
 * ledger committed (by agent.c, between capture_read and capture_end), and
 * only then does the kernel forget the counts.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "agent_capture.h"
#include "symbolize.h"

void capture_init(struct capture *c)
{
	*c = (struct capture){ .next_seq = 1 };
}

/* Reads generation @gen of @ap's profiler and appends its running tasks' messages to @batch. */
static void flush_kind(struct agent_prof *ap, int kind, int gen, int64_t now, struct tasks *tasks,
		       struct symbolizer *sym, struct sw_msgs *batch)
{
	struct profile prof;
	int err;

	profiler_profile_init(ap->p, &prof, sym);
	prof.time_ns = (int64_t)now_ns(CLOCK_REALTIME);
	err = profiler_read_generation_into(ap->p, gen, &prof);
	if (err)
		log_warn("%s: snapshot failed: %s", ap->ops->name, strerror(-err));
	for (size_t i = 0; i < tasks->n; i++) {
		struct agent_task *t = tasks->v[i];
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
static int64_t upload_time_ms(struct capture *c)
{
	int64_t now = wall_ms();

	if (now <= c->last_upload_ms)
		now = c->last_upload_ms + 1;
	c->last_upload_ms = now;
	return now;
}

void capture_read(struct capture *c, const int *gen, struct agent_prof *prof, struct tasks *tasks,
		  struct symbolizer *sym, struct store *store, struct capture_batch *b)
{
	int64_t now = upload_time_ms(c);

	*b = (struct capture_batch){ .seq = 0 };
	for (int k = 0; k < PROFILER_MAX; k++) {
		b->gen[k] = prof[k].p ? gen[k] : -1;
		if (b->gen[k] >= 0)
			flush_kind(&prof[k], k, b->gen[k], now, tasks, sym, &b->msgs);
	}
	test_crash_point("read");
	if (b->msgs.n) {
		b->seq = c->next_seq++;
		if (store_save_batch(store, b->seq, &b->msgs))
			b->seq = 0;	/* kept in memory only, said once */
	}
	test_crash_point("saved");
	for (int k = 0; k < PROFILER_MAX; k++)
		if (b->gen[k] >= 0)
			c->captured[k] = profiler_generation_id(prof[k].p, b->gen[k]);
}

void capture_end(struct capture_batch *b, struct agent_prof *prof, struct spool *spool)
{
	for (int k = 0; k < PROFILER_MAX; k++) {
		int err = b->gen[k] >= 0 ? profiler_clear_generation(prof[k].p, b->gen[k]) : 0;

		if (err)
			log_warn("%s: cannot empty the drained counts: %s", prof[k].ops->name,
				 strerror(-err));
	}
	test_crash_point("cleared");
	for (int k = 0; k < PROFILER_MAX; k++)
		if (b->gen[k] >= 0)
			profiler_collect_stacks(prof[k].p);	/* a failure is said once, deletes nothing */
	if (b->msgs.n)
		spool_push(spool, &b->msgs, b->seq);
	sw_msgs_free(&b->msgs);
}

void capture_put(FILE *f, const struct capture *c, const struct agent_prof *prof)
{
	fprintf(f, "next_seq %" PRIu64 "\nlast_upload_ms %" PRId64 "\n", c->next_seq, c->last_upload_ms);
	for (int k = 0; k < PROFILER_MAX; k++)
		if (prof[k].ops)
			fprintf(f, "captured %s %u\n", prof[k].ops->name, c->captured[k]);
}

void capture_parse(struct capture *c, const struct agent_prof *prof, char **f, int n)
{
	if (n == 2 && !strcmp(f[0], "next_seq")) {
		c->next_seq = strtoull(f[1], NULL, 10) ?: 1;
	} else if (n == 2 && !strcmp(f[0], "last_upload_ms")) {
		c->last_upload_ms = strtoll(f[1], NULL, 10);
	} else if (n == 3 && !strcmp(f[0], "captured")) {
		for (int k = 0; k < PROFILER_MAX; k++)
			if (prof[k].ops && !strcmp(prof[k].ops->name, f[1]))
				c->captured[k] = (uint32_t)strtoul(f[2], NULL, 10);
	}
}
