// SPDX-License-Identifier: GPL-2.0
/*
 * The profiling tasks the OAP hands out (queryTasks): which to accept, when
 * each starts and stops, and when a finished one may be forgotten.  A task
 * runs on the profiler of its TargetType; agent_prof.c follows the changes.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agent_internal.h"
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


void task_free(struct agent_task *t)
{
	if (!t)
		return;
	sw_task_free(&t->t);
	free(t->pids);
	free(t);
}

/* The task @id for the OAP process @process_id. */
static struct agent_task *task_find(struct agent *a, const char *id, const char *process_id)
{
	for (size_t i = 0; i < a->ntasks; i++)
		if (!strcmp(a->tasks[i]->t.task_id, id) &&
		    !strcmp(a->tasks[i]->t.process_ids[0], process_id))
			return a->tasks[i];
	return NULL;
}

/*
 * Local pids of the OAP process @process_id; 0 when it is not known here.
 * Usually one: two local processes share an OAP id only when they share
 * service, instance and process name.
 */
static size_t process_pids(struct agent *a, const char *process_id, uint32_t **out)
{
	uint32_t *pids = calloc(a->nprocs ? a->nprocs : 1, sizeof(*pids));
	size_t n = 0;

	*out = pids;
	if (!pids)
		return 0;
	for (size_t i = 0; i < a->nprocs; i++) {
		const struct agent_proc *p = a->procs[i];

		if (p->sw.process_id && !strcmp(p->sw.process_id, process_id))
			pids[n++] = p->sw.pid;
	}
	return n;
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
int task_kind(const struct sw_task *t)
{
	for (int i = 0; profilers[i]; i++)
		if (profilers[i]->skywalking_target && t->target_name &&
		    strcmp(profilers[i]->skywalking_target, t->target_name) == 0)
			return profilers[i]->id;
	return KIND_NONE;
}

int task_add(struct agent *a, struct agent_task *t)
{
	if (array_reserve((void **)&a->tasks, &a->tasks_cap, a->ntasks, sizeof(*a->tasks), 16))
		return -ENOMEM;
	a->tasks[a->ntasks++] = t;
	return 0;
}

/* Counts @n things the OAP sent past a cap; the first time, says what and the cap. */
void oap_refused(struct agent *a, enum oap_refusal why, uint64_t n)
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
	a->refused[why] += n;
	if (a->refused_said & (1u << why))
		return;
	a->refused_said |= 1u << why;
	snprintf(text, sizeof(text), what[why], cap[why]);
	log_warn("OAP %s: %s refused (%" PRIu64 " this time; said once, the stats line counts them)",
		 a->o.oap, text, n);
}

/* The profiler kind to run @t with, or KIND_NONE (after saying why not). */
static int task_run_kind(const struct sw_task *t, int64_t now)
{
	int64_t end = task_end_ms(t);
	int kind = task_kind(t);

	if (kind == KIND_NONE) {
		log_warn("task %s: %s profiling is not supported, ignored", t->task_id, t->target_name);
	} else if (strcmp(t->trigger, "FIXED_TIME")) {
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
static void accept_task(struct agent *a, struct sw_task *t, uint32_t *pids, size_t npids)
{
	struct agent_task *task = task_find(a, t->task_id, t->process_ids[0]);
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
		if (a->ntasks >= AGENT_MAX_TASKS) {
			oap_refused(a, REFUSED_TASKS, 1);
			goto drop;
		}
		task = calloc_logged(1, sizeof(*task));
		if (!task || task_add(a, task)) {
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
static bool accept_for_process(struct agent *a, const struct sw_task *t, size_t i)
{
	struct sw_task one;
	uint32_t *pids;
	size_t npids = process_pids(a, t->process_ids[i], &pids);

	if (npids == 0 || task_for_process(t, i, &one)) {
		free(pids);
		return false;
	}
	accept_task(a, &one, pids, npids);
	return true;
}

/*
 * One EBPFProfilingTaskQuery command.  The OAP sends one per process (a
 * singleton ProcessId); a comma-joined list is split, each process its own
 * task, so that each one's data carries its own processId.
 */
static void handle_command(struct agent *a, const struct sw_command *c, int64_t *max_update)
{
	struct sw_task t;
	bool known = false;
	int err = sw_task_parse(c, &t);

	if (err == -ENOENT) {
		log_info("ignoring OAP command %s", c->name ? c->name : "(unnamed)");
		return;
	}
	if (err) {
		log_warn("OAP %s: malformed profiling task ignored: %s", a->o.oap, strerror(-err));
		return;
	}
	oap_refused(a, REFUSED_IDS, t.ids_dropped);
	if ((t.start_time_ms - wall_ms()) / 86400000 >= TASK_MAX_AHEAD_DAYS) {
		/* Refused for good: latestUpdateTime passes it, so that it is not handed out again. */
		oap_refused(a, REFUSED_AHEAD, 1);
		if (t.update_time_ms > *max_update)
			*max_update = t.update_time_ms;
		sw_task_free(&t);
		return;
	}
	for (size_t i = 0; i < t.nprocess_ids; i++)
		known |= accept_for_process(a, &t, i);
	if (!known) {
		/* Not advancing latestUpdateTime over it: it comes again once we know the process. */
		log_info("task %s: none of its processes is known here yet", t.task_id);
	} else if (t.update_time_ms > *max_update) {
		*max_update = t.update_time_ms;
	}
	sw_task_free(&t);
}

void query_tasks(struct agent *a)
{
	struct sw_commands cmds = { 0 };
	struct grpc_buf reply = { 0 };
	int64_t max_update = a->latest_update_ms;
	struct sw_msg req;
	bool decoded;

	if (sw_encode_task_query(a->agent_id, a->latest_update_ms, &req))
		return;
	if (!unary(a, CALL_QUERY, &req, &reply))
		goto out;
	decoded = sw_decode_commands(reply.data, reply.len, &cmds) == 0;
	answer_decoded(a, CALL_QUERY, decoded);
	if (!decoded)
		goto out;
	oap_refused(a, REFUSED_COMMANDS, cmds.commands_dropped);
	oap_refused(a, REFUSED_ARGS, cmds.args_dropped);
	for (size_t i = 0; i < cmds.n; i++)
		handle_command(a, &cmds.v[i], &max_update);
	if (max_update != a->latest_update_ms || cmds.n) {
		a->latest_update_ms = max_update;
		ledger_commit(a);	/* the tasks accepted, and where the next query starts */
	}
out:
	sw_commands_free(&cmds);
	grpc_buf_free(&reply);
}


/* The tests read this line: "task ID (TYPE, process OAPID) finished: COUNT ..." */
void log_task_end(const struct agent *a, const struct agent_task *t, const char *how)
{
	log_info("task %s (%s, process %s) %s: %" PRIu64 " %s in %" PRIu64 " messages", t->t.task_id,
		 t->t.target_name, t->t.process_ids[0], how, t->count,
		 a->prof[t->kind].ops->value_types[0].type, t->messages);
}

/* Starts the due tasks; true if any started. */
static bool start_due(struct agent *a, int64_t now, bool *changed)
{
	bool started = false;

	for (size_t i = 0; i < a->ntasks; i++) {
		struct agent_task *t = a->tasks[i];

		if (t->state != TASK_PENDING || now < t->t.start_time_ms)
			continue;
		t->state = TASK_RUNNING;
		t->run_start_ms = now;
		t->stop_at_ms = ms_after(now, t->t.duration_s);
		for (size_t j = 0; j < t->npids; j++)
			symbolizer_track(a->sym, t->pids[j]);
		log_info("task %s (%s, process %s) started for %" PRId64 " s", t->t.task_id,
			 t->t.target_name, t->t.process_ids[0], t->t.duration_s);
		changed[t->kind] = started = true;
	}
	return started;
}

/* Marks the running tasks whose time is up as ending; true if any. */
static bool mark_ending(struct agent *a, int64_t now, bool *changed)
{
	bool ending = false;

	for (size_t i = 0; i < a->ntasks; i++) {
		struct agent_task *t = a->tasks[i];

		if (t->state == TASK_RUNNING && now >= t->stop_at_ms) {
			t->ending = true;
			changed[t->kind] = ending = true;
		}
	}
	return ending;
}

static void reconfigure_changed(struct agent *a, bool *changed)
{
	for (int k = 0; k < PROFILER_MAX; k++)
		if (changed[k])
			reconfigure(a, k);
}

/*
 * Starts due tasks, ends finished ones.  A task is in the ledger before its
 * processes are counted, and is no longer counted before its last flush,
 * so that what the kernel counted for it and what is sent are the same.
 */
void tick_tasks(struct agent *a)
{
	int64_t now = wall_ms();
	bool changed[PROFILER_MAX] = { false };

	if (start_due(a, now, changed)) {
		ledger_commit(a);
		reconfigure_changed(a, changed);
	}
	memset(changed, 0, sizeof(changed));
	if (!mark_ending(a, now, changed))
		return;
	reconfigure_changed(a, changed);	/* the ending tasks' processes are no longer counted */
	flush(a);	/* the last interval of the ending tasks */
	for (size_t i = 0; i < a->ntasks; i++) {
		struct agent_task *t = a->tasks[i];

		if (!t->ending || t->state != TASK_RUNNING)
			continue;
		t->state = TASK_DONE;
		t->ending = false;
		log_task_end(a, t, "finished");
	}
	ledger_commit(a);
	reconfigure_changed(a, changed);	/* an unpinned profiler with no task left is closed */
}

/* Forgets finished tasks the OAP can no longer hand out as live. */
void prune_tasks(struct agent *a)
{
	int64_t now = wall_ms();
	size_t kept = 0;

	for (size_t i = 0; i < a->ntasks; i++) {
		struct agent_task *t = a->tasks[i];

		if (t->state == TASK_DONE && now > ms_after(task_end_ms(&t->t), 3600)) {
			task_free(t);
			continue;
		}
		a->tasks[kept++] = t;
	}
	a->ntasks = kept;
}

