/* SPDX-License-Identifier: GPL-2.0 */
/*
 * SkyWalking continuous profiling: the policies the OAP holds for the
 * selected processes' services (queryPolicies), checking them every second
 * against what /proc says, and, when one trips, reporting it
 * (reportProfilingTask) and handing the task the OAP answers with to the
 * task table.  As SkyWalking Rover's pkg/profiling/continuous does (see
 * agent_continuous.c for the commits read and where aperture differs).
 */
#ifndef AGENT_CONTINUOUS_H
#define AGENT_CONTINUOUS_H

#include <stdbool.h>
#include <stdint.h>
#include "agent_oap.h"
#include "agent_opts.h"
#include "agent_procs.h"
#include "agent_silence.h"
#include "agent_tasks.h"

/*
 * Seconds of history kept per check and process: a policy's Period may be at
 * most this long (a longer one is refused, logged).
 */
#define CONT_MAX_PERIOD 120

/* The checks of a policy (Rover's base.CheckType), by what they measure. */
enum cont_check {
	CHECK_PROCESS_CPU,	/* PROCESS_CPU: % of one CPU, over the last second */
	CHECK_THREADS,		/* PROCESS_THREAD_COUNT */
	CHECK_SYSTEM_LOAD,	/* SYSTEM_LOAD: the 1-minute load average */
	CHECK_HTTP_ERROR_RATE,	/* HTTP_ERROR_RATE: not measured here */
	CHECK_HTTP_AVG_RT,	/* HTTP_AVG_RESPONSE_TIME: not measured here */
	CHECK_COUNT,
};
/* Meters (rover_con_p_*) go every this many checks: Rover's check_interval, 5 s. */
#define CONT_METER_EVERY 5
/* Checks with a window per process (the system load has one for all). */
#define CONT_PROCESS_CHECKS 2

/* One check of a policy: on which profiler it starts a task, and its threshold. */
struct cont_item {
	enum cont_check check;
	int kind;			/* the profiler of the task (its SkyWalking target) */
	double threshold;
	int period, count;		/* trips when count of the last period seconds reach it */
};

/* A service's policy as the OAP last sent it. */
struct cont_service {
	char *name;
	char *uuid;			/* what queryPolicies sends back; "" for none held */
	struct cont_item *items;
	size_t nitems;
	bool seen;			/* one of the selected processes is in it (this query) */
};

/* The last seconds of one selected process, NAN where a second has no value. */
struct cont_watch {
	uint32_t pid;
	uint64_t start_time;		/* /proc/PID/stat starttime: a reused pid is another process */
	uint64_t last_ticks, last_ns;	/* the previous reading, for the CPU % */
	double window[CONT_PROCESS_CHECKS][CONT_MAX_PERIOD];
	int64_t last_task_ms[PROFILER_MAX];	/* when a task of that kind last started for it */
	bool seen;
};

struct continuous {
	uint64_t task_s, silence_s;	/* how long a task runs; none again within silence of its start */
	struct cont_service *services;
	size_t nservices, services_cap;
	struct cont_watch *watch;
	size_t nwatch, watch_cap;
	struct silences silences;	/* the last start per OAP process id and kind, kept in the ledger */
	double load_window[CONT_MAX_PERIOD];
	uint64_t second;		/* checks done: the slot of the next value is second % CONT_MAX_PERIOD */
	long clock_ticks;		/* sysconf(_SC_CLK_TCK) */
	uint64_t bad_json_hash;		/* the last undecodable ServiceWithPolicyJSON, said once */
	uint64_t trips, reports;
	uint64_t meters_sent, meters_dropped;	/* rover_con_p_* collections; dropped: the OAP did not take them */
};

void continuous_init(struct continuous *c, const struct agent_opts *o);
/* queryPolicies for the services of @ps's processes; applies what changed. */
void continuous_query(struct continuous *c, struct oap *oap, const struct procs *ps);
/* A ServiceWithPolicyJSON text (continuous_query's answer; the fuzzer's input): what it changes. */
void continuous_apply_json(struct continuous *c, const struct oap *oap, const char *text);
/*
 * One second's check: reads /proc for the processes of services with a
 * policy, and reports what tripped; a task the OAP answers with goes into
 * @ts.  true when @ts took one (the ledger should say so), @changed[kind] set.
 */
bool continuous_check(struct continuous *c, const struct procs *ps, struct oap *oap, struct tasks *ts,
		      bool *changed);
void continuous_free(struct continuous *c);

#endif /* AGENT_CONTINUOUS_H */
