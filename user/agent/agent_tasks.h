/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The task table: the profiling tasks the OAP hands out (queryTasks), which
 * to accept, when each starts and ends, and when a finished one may be
 * forgotten.  It says what changed and never commits: agent.c does.
 */
#ifndef AGENT_TASKS_H
#define AGENT_TASKS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include "agent_oap.h"
#include "agent_procs.h"
#include "skywalking.h"
#include "util.h"

#define MS 1000000ull		/* ns per ms */

/* Task times are the OAP's: wall-clock ms. */
static inline int64_t wall_ms(void)
{
	return (int64_t)(now_ns(CLOCK_REALTIME) / MS);
}

enum task_state { TASK_PENDING, TASK_RUNNING, TASK_DONE };
/* A task's kind is the id of the profiler that serves it. */
#define KIND_NONE (-1)

/*
 * One task for one process: the OAP sends a task created on a service as one
 * command per process (same TaskId, one ProcessId each), so a task here is
 * (TaskId, ProcessId) and t.process_ids holds exactly that one id.
 */
struct agent_task {
	struct sw_task t;
	int kind;			/* profiler id; KIND_NONE: remembered only, never run */
	enum task_state state;
	uint32_t *pids;
	size_t npids;
	int64_t run_start_ms, stop_at_ms;	/* CLOCK_REALTIME */
	uint64_t count;			/* samples / switches queued for the OAP */
	uint64_t messages;
	bool ending;			/* stop time passed: no longer counted, last flush due */
};

/*
 * Tasks held at most (pending, running and remembered ones): past it a new
 * task is refused.  The real OAP hands out one per (task, process) of this
 * agent's; MAX_AGENT_PROCS processes under one task each would still fit
 * only partly, but no OAP of a sane deployment keeps 1024 live tasks.
 */
#define AGENT_MAX_TASKS 1024
/*
 * How far ahead a task may start (7 days).  The OAP takes any start time;
 * a pending task is held until it starts, so without a bound one that
 * starts in the year 3000 is held for good.
 */
#define TASK_MAX_AHEAD_DAYS 7

/* What the OAP sent past a cap: refused, counted, said once each. */
enum oap_refusal { REFUSED_COMMANDS, REFUSED_ARGS, REFUSED_IDS, REFUSED_TASKS, REFUSED_AHEAD, REFUSED_COUNT };

/* Fields of a "task" line of the ledger. */
#define TASK_FIELDS 14

struct tasks {
	struct agent_task **v;
	size_t n, cap;
	int64_t latest_update_ms;	/* where the next queryTasks starts */
	uint64_t refused[REFUSED_COUNT];	/* by enum oap_refusal */
	unsigned int refused_said;	/* bit per enum oap_refusal: warned once */
};

/* queryTasks: accepts what the OAP hands out; true when the ledger should say so. */
bool tasks_query(struct tasks *ts, struct oap *oap, const struct procs *ps);
/* The TriggerType of a task a continuous profiling policy started (EBPFProfilingTriggerType). */
#define SW_TRIGGER_CONTINUOUS "CONTINUOUS_PROFILING"
/*
 * A task the OAP answered a continuous profiling report with, for the OAP
 * process @process_id (its local @pids, taken): pending from now, started by
 * the next tasks_start_due().  true when the table took it.
 */
bool tasks_add_continuous(struct tasks *ts, const struct oap *oap, const char *task_id, const char *process_id,
			  const char *target, int64_t duration_s, uint32_t *pids, size_t npids);
/* Whether a task of @kind for the OAP process @process_id is pending or running. */
bool tasks_kind_for(const struct tasks *ts, int kind, const char *process_id);
/* Starts the due tasks (their processes tracked by @sym); true if any, @changed[kind] set. */
bool tasks_start_due(struct tasks *ts, int64_t now, struct symbolizer *sym, bool *changed);
/* Marks the running tasks whose time is up as ending; true if any, @changed[kind] set. */
bool tasks_mark_ending(struct tasks *ts, int64_t now, bool *changed);
/* The ending tasks had their last flush: done. */
void tasks_end_marked(struct tasks *ts);
/* Ends the running tasks of @kind: there is nothing to run them with. */
void tasks_abort(struct tasks *ts, int kind);
/* Forgets finished tasks the OAP can no longer hand out as live. */
void tasks_prune(struct tasks *ts);
/* The union of the pids of @kind's counted tasks, in *@out (malloc'd); count or -ENOMEM. */
int tasks_wanted_pids(const struct tasks *ts, int kind, uint32_t **out);
bool tasks_any_ending(const struct tasks *ts, int kind);
bool tasks_any_running(const struct tasks *ts);
/* Says the running tasks' counts at a stop. */
void tasks_log_interrupted(const struct tasks *ts);
void tasks_free(struct tasks *ts);

/* The ledger's lines of the table: latestUpdateTime and the live tasks. */
void tasks_put(FILE *f, const struct tasks *ts);
/* One ledger line's fields @f (@n of them); 0 (not the table's, or taken) or -errno. */
int tasks_parse(struct tasks *ts, char **f, int n, struct symbolizer *sym);

#endif /* AGENT_TASKS_H */
