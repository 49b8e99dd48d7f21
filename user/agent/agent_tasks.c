// SPDX-License-Identifier: GPL-2.0
/*
 * The task table: the profiling tasks the OAP hands out (queryTasks), which
 * to accept, when each starts and stops, and when a finished one may be
 * forgotten.  A task runs on the profiler of its TargetType; the table says
 * which kinds changed, agent.c commits and retargets the profilers.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agent_store.h"
#include "agent_tasks.h"
#include "symbolize.h"

/* @ms + @s seconds, saturated: task times come from the OAP and may be anything. */
static int64_t ms_after(int64_t ms, int64_t s)
{
	int64_t delta, r;

	if (__builtin_mul_overflow(s, 1000, &delta) || __builtin_add_overflow(ms, delta, &r))
		return s > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

/* When a task handed out now could run no longer: TaskStartTime + FixedTriggerDuration. */
static int64_t task_end_ms(const struct sw_task *t)
{
	return ms_after(t->start_time_ms, t->duration_s);
}

static void task_free(struct agent_task *t)
{
	if (!t)
		return;
	sw_task_free(&t->t);
	free(t->pids);
	free(t);
}

/* The task @id for the OAP process @process_id. */
static struct agent_task *task_find(const struct tasks *ts, const char *id, const char *process_id)
{
	for (size_t i = 0; i < ts->n; i++)
		if (!strcmp(ts->v[i]->t.task_id, id) &&
		    !strcmp(ts->v[i]->t.process_ids[0], process_id))
			return ts->v[i];
	return NULL;
}

/* @t narrowed to its @i-th process id: a copy that owns its strings. 0 or -ENOMEM. */
static int task_for_process(const struct sw_task *t, size_t i, struct sw_task *out)
{
	*out = *t;
	out->task_id = strdup(t->task_id);
	out->target_name = strdup(t->target_name);
	out->trigger = strdup(t->trigger);
	out->process_ids = calloc(1, sizeof(*out->process_ids));
	if (out->process_ids)
		out->process_ids[0] = strdup(t->process_ids[i]);
	out->nprocess_ids = out->process_ids && out->process_ids[0] ? 1 : 0;
	if (!out->task_id || !out->target_name || !out->trigger || !out->nprocess_ids) {
		sw_task_free(out);
		return -ENOMEM;
	}
	return 0;
}

/* The profiler that serves @t's TargetType, by its ops.skywalking_target. */
static int task_kind(const struct sw_task *t)
{
	for (int i = 0; profilers[i]; i++)
		if (profilers[i]->skywalking_target && t->target_name &&
		    strcmp(profilers[i]->skywalking_target, t->target_name) == 0)
			return profilers[i]->id;
	return KIND_NONE;
}

/* The profiler that serves @kind (a kind task_kind() gave). */
static const struct profiler_ops *kind_ops(int kind)
{
	for (int i = 0; profilers[i]; i++)
		if ((int)profilers[i]->id == kind)
			return profilers[i];
	return NULL;
}

static int task_add(struct tasks *ts, struct agent_task *t)
{
	if (array_reserve((void **)&ts->v, &ts->cap, ts->n, sizeof(*ts->v), 16))
		return -ENOMEM;
	ts->v[ts->n++] = t;
	return 0;
}

/* Counts @n things the OAP sent past a cap; the first time, says what and the cap. */
static void count_refused(struct tasks *ts, const struct oap *oap, enum oap_refusal why, uint64_t n)
{
	static const char *const what[REFUSED_COUNT] = {
		[REFUSED_COMMANDS] = "commands past %d in one reply",
		[REFUSED_ARGS] = "command arguments past %d in a command",
		[REFUSED_IDS] = "process ids past %d in a task",
		[REFUSED_TASKS] = "new tasks past %d held",
		[REFUSED_AHEAD] = "tasks starting more than %d days ahead",
	};
	static const int cap[REFUSED_COUNT] = {
		[REFUSED_COMMANDS] = SW_MAX_COMMANDS, [REFUSED_ARGS] = SW_MAX_COMMAND_ARGS,
		[REFUSED_IDS] = SW_MAX_PROCESS_IDS, [REFUSED_TASKS] = AGENT_MAX_TASKS,
		[REFUSED_AHEAD] = TASK_MAX_AHEAD_DAYS,
	};
	char text[96];

	if (!n)
		return;
	ts->refused[why] += n;
	if (ts->refused_said & (1u << why))
		return;
	ts->refused_said |= 1u << why;
	snprintf(text, sizeof(text), what[why], cap[why]);
	log_warn("OAP %s: %s refused (%" PRIu64 " this time; said once, the stats line counts them)",
		 oap->o->oap, text, n);
}

/* The profiler kind to run @t with, or KIND_NONE (after saying why not). */
static int task_run_kind(const struct sw_task *t, int64_t now)
{
	int64_t end = task_end_ms(t);
	int kind = task_kind(t);

	if (kind == KIND_NONE) {
		log_warn("task %s: %s profiling is not supported, ignored", t->task_id, t->target_name);
	} else if (strcmp(t->trigger, "FIXED_TIME") && strcmp(t->trigger, SW_TRIGGER_CONTINUOUS)) {
		log_warn("task %s: trigger %s is not supported, ignored", t->task_id, t->trigger);
		kind = KIND_NONE;
	} else if (now > end) {
		log_info("task %s (%s) expired %" PRId64 " s ago, skipped", t->task_id, t->target_name,
			 (now - end) / 1000);
		kind = KIND_NONE;
	}
	return kind;
}

/* Takes @t (narrowed to one process) and @pids (that process's, known here). */
static void accept_task(struct tasks *ts, const struct oap *oap, struct sw_task *t, uint32_t *pids,
			size_t npids)
{
	struct agent_task *task = task_find(ts, t->task_id, t->process_ids[0]);
	int64_t now = wall_ms();
	int kind;

	if (task && task->state == TASK_RUNNING) {
		/* The same task again only re-arms its stop time. */
		task->stop_at_ms = ms_after(now, task->t.duration_s);
		log_info("task %s (process %s) re-armed: stops in %" PRId64 " s", task->t.task_id,
			 task->t.process_ids[0], task->t.duration_s);
		goto drop;
	}
	if (task && (task->state == TASK_PENDING || task->kind == KIND_NONE))
		goto drop;
	kind = task_run_kind(t, now);
	if (task && kind == KIND_NONE)
		goto drop;	/* keep what ran before */
	if (task) {
		/* A finished task handed out again before its end time: run it again. */
		sw_task_free(&task->t);
		free(task->pids);
	} else {
		if (ts->n >= AGENT_MAX_TASKS) {
			count_refused(ts, oap, REFUSED_TASKS, 1);
			goto drop;
		}
		task = calloc_logged(1, sizeof(*task));
		if (!task || task_add(ts, task)) {
			free(task);
			goto drop;
		}
	}
	/* A task that cannot run is remembered (TASK_DONE), so that it is said once. */
	*task = (struct agent_task){
		.t = *t, .pids = pids, .npids = npids, .kind = kind,
		.state = kind == KIND_NONE ? TASK_DONE : TASK_PENDING,
	};
	if (kind != KIND_NONE)
		log_info("task %s (%s, %" PRId64 " s, process %s: pid %u%s) accepted", t->task_id,
			 t->target_name, t->duration_s, t->process_ids[0], pids[0],
			 npids > 1 ? " and others of the same name" : "");
	return;
drop:
	sw_task_free(t);
	free(pids);
}

/* Accepts @t for its @i-th process if that process is known here; false if it is not. */
static bool accept_for_process(struct tasks *ts, const struct oap *oap, const struct procs *ps,
			       const struct sw_task *t, size_t i)
{
	struct sw_task one;
	uint32_t *pids;
	size_t npids = procs_pids(ps, t->process_ids[i], &pids);

	if (npids == 0 || task_for_process(t, i, &one)) {
		free(pids);
		return false;
	}
	accept_task(ts, oap, &one, pids, npids);
	return true;
}

/*
 * One EBPFProfilingTaskQuery command.  The OAP sends one per process (a
 * singleton ProcessId); a comma-joined list is split, each process its own
 * task, so that each one's data carries its own processId.
 */
static void handle_command(struct tasks *ts, const struct oap *oap, const struct procs *ps,
			   const struct sw_command *c, int64_t *max_update)
{
	struct sw_task t;
	bool known = false;
	int err = sw_task_parse(c, &t);

	if (err == -ENOENT) {
		log_info("ignoring OAP command %s", c->name ? c->name : "(unnamed)");
		return;
	}
	if (err) {
		log_warn("OAP %s: malformed profiling task ignored: %s", oap->o->oap, strerror(-err));
		return;
	}
	count_refused(ts, oap, REFUSED_IDS, t.ids_dropped);
	if ((t.start_time_ms - wall_ms()) / 86400000 >= TASK_MAX_AHEAD_DAYS) {
		/* Refused for good: latestUpdateTime passes it, so that it is not handed out again. */
		count_refused(ts, oap, REFUSED_AHEAD, 1);
		if (t.update_time_ms > *max_update)
			*max_update = t.update_time_ms;
		sw_task_free(&t);
		return;
	}
	for (size_t i = 0; i < t.nprocess_ids; i++)
		known |= accept_for_process(ts, oap, ps, &t, i);
	if (!known) {
		/* Not advancing latestUpdateTime over it: it comes again once we know the process. */
		log_info("task %s: none of its processes is known here yet", t.task_id);
	} else if (t.update_time_ms > *max_update) {
		*max_update = t.update_time_ms;
	}
	sw_task_free(&t);
}

bool tasks_query(struct tasks *ts, struct oap *oap, const struct procs *ps)
{
	struct sw_commands cmds = { 0 };
	struct grpc_buf reply = { 0 };
	int64_t max_update = ts->latest_update_ms;
	struct sw_msg req;
	bool decoded, changed = false;

	if (sw_encode_task_query(oap->agent_id, ts->latest_update_ms, &req))
		return false;
	if (!oap_unary(oap, CALL_QUERY, &req, &reply))
		goto out;
	decoded = sw_decode_commands(reply.data, reply.len, &cmds) == 0;
	oap_answer_decoded(oap, CALL_QUERY, decoded);
	if (!decoded)
		goto out;
	count_refused(ts, oap, REFUSED_COMMANDS, cmds.commands_dropped);
	count_refused(ts, oap, REFUSED_ARGS, cmds.args_dropped);
	for (size_t i = 0; i < cmds.n; i++)
		handle_command(ts, oap, ps, &cmds.v[i], &max_update);
	if (max_update != ts->latest_update_ms || cmds.n) {
		ts->latest_update_ms = max_update;
		changed = true;	/* the tasks accepted, and where the next query starts */
	}
out:
	sw_commands_free(&cmds);
	grpc_buf_free(&reply);
	return changed;
}

bool tasks_add_continuous(struct tasks *ts, const struct oap *oap, const char *task_id, const char *process_id,
			  const char *target, int64_t duration_s, uint32_t *pids, size_t npids)
{
	int64_t now = wall_ms();
	char *ids[1] = { (char *)process_id };
	/* As the OAP's record of it: starts now, for the duration the report asked for. */
	const struct sw_task as_sent = {
		.task_id = (char *)task_id, .process_ids = ids, .nprocess_ids = 1, .update_time_ms = now,
		.start_time_ms = now, .duration_s = duration_s, .target_name = (char *)target,
		.trigger = (char *)SW_TRIGGER_CONTINUOUS,
	};
	struct sw_task one;
	size_t before = ts->n;

	if (task_for_process(&as_sent, 0, &one)) {
		free(pids);
		return false;
	}
	accept_task(ts, oap, &one, pids, npids);
	return ts->n > before;
}

bool tasks_kind_for(const struct tasks *ts, int kind, const char *process_id)
{
	for (size_t i = 0; i < ts->n; i++) {
		const struct agent_task *t = ts->v[i];

		if (t->kind == kind && t->state != TASK_DONE && !strcmp(t->t.process_ids[0], process_id))
			return true;
	}
	return false;
}

/* The tests read this line: "task ID (TYPE, process OAPID) finished: COUNT ..." */
static void log_task_end(const struct agent_task *t, const char *how)
{
	log_info("task %s (%s, process %s) %s: %" PRIu64 " %s in %" PRIu64 " messages", t->t.task_id,
		 t->t.target_name, t->t.process_ids[0], how, t->count,
		 kind_ops(t->kind)->schema.value_types[0].type, t->messages);
}

bool tasks_start_due(struct tasks *ts, int64_t now, struct symbolizer *sym, bool *changed)
{
	bool started = false;

	for (size_t i = 0; i < ts->n; i++) {
		struct agent_task *t = ts->v[i];

		if (t->state != TASK_PENDING || now < t->t.start_time_ms)
			continue;
		t->state = TASK_RUNNING;
		t->run_start_ms = now;
		t->stop_at_ms = ms_after(now, t->t.duration_s);
		for (size_t j = 0; j < t->npids; j++)
			symbolizer_track(sym, t->pids[j]);
		log_info("task %s (%s, process %s) started for %" PRId64 " s", t->t.task_id,
			 t->t.target_name, t->t.process_ids[0], t->t.duration_s);
		changed[t->kind] = started = true;
	}
	return started;
}

bool tasks_mark_ending(struct tasks *ts, int64_t now, bool *changed)
{
	bool ending = false;

	for (size_t i = 0; i < ts->n; i++) {
		struct agent_task *t = ts->v[i];

		if (t->state == TASK_RUNNING && now >= t->stop_at_ms) {
			t->ending = true;
			changed[t->kind] = ending = true;
		}
	}
	return ending;
}

void tasks_end_marked(struct tasks *ts)
{
	for (size_t i = 0; i < ts->n; i++) {
		struct agent_task *t = ts->v[i];

		if (!t->ending || t->state != TASK_RUNNING)
			continue;
		t->state = TASK_DONE;
		t->ending = false;
		log_task_end(t, "finished");
	}
}

void tasks_abort(struct tasks *ts, int kind)
{
	for (size_t i = 0; i < ts->n; i++) {
		struct agent_task *t = ts->v[i];

		if (t->kind == kind && t->state == TASK_RUNNING) {
			t->state = TASK_DONE;
			log_warn("task %s (%s) ended: its profiler cannot run", t->t.task_id,
				 t->t.target_name);
		}
	}
}

void tasks_prune(struct tasks *ts)
{
	int64_t now = wall_ms();
	size_t kept = 0;

	for (size_t i = 0; i < ts->n; i++) {
		struct agent_task *t = ts->v[i];

		if (t->state == TASK_DONE && now > ms_after(task_end_ms(&t->t), 3600)) {
			task_free(t);
			continue;
		}
		ts->v[kept++] = t;
	}
	ts->n = kept;
}

/* Whether @t's processes are counted by @kind's profiler: running and not ending. */
static bool counted(const struct agent_task *t, int kind)
{
	return t->kind == kind && t->state == TASK_RUNNING && !t->ending;
}

int tasks_wanted_pids(const struct tasks *ts, int kind, uint32_t **out)
{
	uint32_t *want = NULL;
	size_t cap = 0, n = 0;

	*out = NULL;
	for (size_t i = 0; i < ts->n; i++)
		if (counted(ts->v[i], kind))
			cap += ts->v[i]->npids;
	if (cap == 0)
		return 0;
	want = calloc(cap, sizeof(*want));
	if (!want)
		return -ENOMEM;
	for (size_t i = 0; i < ts->n; i++) {
		const struct agent_task *t = ts->v[i];

		if (!counted(t, kind))
			continue;
		for (size_t j = 0; j < t->npids; j++)
			if (!pid_in(want, n, t->pids[j]))
				want[n++] = t->pids[j];
	}
	*out = want;
	return (int)n;
}

bool tasks_any_ending(const struct tasks *ts, int kind)
{
	for (size_t i = 0; i < ts->n; i++)
		if (ts->v[i]->kind == kind && ts->v[i]->ending)
			return true;
	return false;
}

bool tasks_any_running(const struct tasks *ts)
{
	for (size_t i = 0; i < ts->n; i++)
		if (ts->v[i]->state == TASK_RUNNING)
			return true;
	return false;
}

void tasks_log_interrupted(const struct tasks *ts)
{
	for (size_t i = 0; i < ts->n; i++)
		if (ts->v[i]->state == TASK_RUNNING)
			log_task_end(ts->v[i], "interrupted");
}

void tasks_free(struct tasks *ts)
{
	for (size_t i = 0; i < ts->n; i++)
		task_free(ts->v[i]);
	free(ts->v);
	ts->v = NULL;
	ts->n = ts->cap = 0;
}

static void put_task(FILE *f, const struct agent_task *t)
{
	fputs("task ", f);
	store_put_field(f, t->t.task_id);
	fputc(' ', f);
	store_put_field(f, t->t.process_ids[0]);
	fputc(' ', f);
	store_put_field(f, t->t.target_name);
	fputc(' ', f);
	store_put_field(f, t->t.trigger);
	fprintf(f, " %" PRId64 " %" PRId64 " %" PRId64 " %c %" PRId64 " %" PRId64 " %" PRIu64 " %" PRIu64 " ",
		t->t.update_time_ms, t->t.start_time_ms, t->t.duration_s,
		t->state == TASK_RUNNING ? 'R' : 'P', t->run_start_ms, t->stop_at_ms, t->count,
		t->messages);
	for (size_t i = 0; i < t->npids; i++)
		fprintf(f, "%s%u", i ? "," : "", t->pids[i]);
	fputc('\n', f);
}

void tasks_put(FILE *f, const struct tasks *ts)
{
	fprintf(f, "latest_update_ms %" PRId64 "\n", ts->latest_update_ms);
	for (size_t i = 0; i < ts->n; i++) {
		const struct agent_task *t = ts->v[i];

		/* Finished tasks are not kept: latestUpdateTime keeps the OAP from sending them again. */
		if (t->state != TASK_DONE && t->kind != KIND_NONE)
			put_task(f, t);
	}
}

static int parse_pids(char *list, struct agent_task *t)
{
	size_t n = 1;
	char *save = NULL;

	for (char *c = list; *c; c++)
		n += *c == ',';
	t->pids = calloc(n, sizeof(*t->pids));
	if (!t->pids)
		return -ENOMEM;
	for (char *s = strtok_r(list, ",", &save); s && t->npids < n; s = strtok_r(NULL, ",", &save))
		t->pids[t->npids++] = (uint32_t)strtoul(s, NULL, 10);
	return t->npids ? 0 : -EINVAL;
}

/* A "task" line's fields (f[0] is "task") into a new task. */
static int restore_task(struct tasks *ts, char **f, struct symbolizer *sym)
{
	struct agent_task *t = calloc_logged(1, sizeof(*t));
	int err = -ENOMEM;

	if (!t)
		return -ENOMEM;
	t->t.process_ids = calloc(1, sizeof(char *));
	if (!t->t.process_ids)
		goto fail;
	t->t.task_id = strdup(store_field(f[1]));
	t->t.process_ids[0] = strdup(store_field(f[2]));
	t->t.nprocess_ids = 1;
	t->t.target_name = strdup(store_field(f[3]));
	t->t.trigger = strdup(store_field(f[4]));
	if (!t->t.task_id || !t->t.process_ids[0] || !t->t.target_name || !t->t.trigger)
		goto fail;
	t->t.update_time_ms = strtoll(f[5], NULL, 10);
	t->t.start_time_ms = strtoll(f[6], NULL, 10);
	t->t.duration_s = strtoll(f[7], NULL, 10);
	t->state = f[8][0] == 'R' ? TASK_RUNNING : TASK_PENDING;
	t->run_start_ms = strtoll(f[9], NULL, 10);
	t->stop_at_ms = strtoll(f[10], NULL, 10);
	t->count = strtoull(f[11], NULL, 10);
	t->messages = strtoull(f[12], NULL, 10);
	err = parse_pids(f[13], t);
	t->kind = task_kind(&t->t);
	if (!err && t->kind == KIND_NONE)
		err = -EINVAL;
	err = err ?: task_add(ts, t);
	if (err)
		goto fail;
	for (size_t i = 0; t->state == TASK_RUNNING && i < t->npids; i++)
		symbolizer_track(sym, t->pids[i]);
	log_info("task %s (%s, process %s) restored from the ledger: %s", t->t.task_id,
		 t->t.target_name, t->t.process_ids[0], t->state == TASK_RUNNING ? "running" : "pending");
	return 0;
fail:
	task_free(t);
	return err;
}

int tasks_parse(struct tasks *ts, char **f, int n, struct symbolizer *sym)
{
	if (n == 2 && !strcmp(f[0], "latest_update_ms"))
		ts->latest_update_ms = strtoll(f[1], NULL, 10);
	else if (n == TASK_FIELDS && !strcmp(f[0], "task"))
		return restore_task(ts, f, sym);
	return 0;
}
