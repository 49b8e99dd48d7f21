// SPDX-License-Identifier: GPL-2.0
/*
 * SkyWalking continuous profiling: the OAP's policies for the selected
 * processes' services, checked every second against /proc, and a task run
 * when one trips.
 *
 * Read from (cited in the README too):
 *   apache/skywalking-data-collect-protocol ebpf/profiling/Continuous.proto (46f89462)
 *   apache/skywalking oap-server/server-receiver-plugin/skywalking-ebpf-receiver-plugin/.../
 *     ContinuousProfilingServiceHandler.java (268002b4): queryPolicies answers only the services
 *     whose policy UUID differs from the one the agent sent, as one ContinuousProfilingPolicyQuery
 *     command whose ServiceWithPolicyJSON argument is a JSON list of {ServiceName, UUID, Profiling:
 *     {TARGET: {CHECK: {Threshold, Period, Count, URIList, URIRegex}}}}; a removed policy comes as
 *     its service with UUID "" and no Profiling.  reportProfilingTask stores a CONTINUOUS_PROFILING
 *     task that starts now for the report's duration and answers one ContinuousProfilingReportTask
 *     command with its TaskId.
 *   apache/skywalking-rover pkg/profiling/continuous (8a3162b4): checkers.go (the policy JSON's
 *     names, Validate: Threshold set, 0 < Count <= Period), base/windows.go (one slot per second
 *     holding that second's value; a check trips when Count slots reach the Threshold, >=),
 *     checker/process_cpu.go and process_thread.go (integer thresholds), system_load.go (load1,
 *     a float threshold), trigger/common.go (one task per process and target; none while one
 *     runs, nor within the silence window of its start), configs/rover_configs.yaml (fetch 1 s,
 *     check 5 s, task 10 min, silence 20 min).
 * Where aperture differs (the README says why): it checks every second, not every 5 s; the CPU %
 * is that of the last second, not gopsutil's average since the process started; a check counts
 * the slots of its own Period; the cause's value is the newest that reached the threshold.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "agent_continuous.h"
#include "json.h"
#include "procmaps.h"
#include "util.h"

static const struct {
	const char *name;		/* in the policy JSON (Rover's base.CheckType) */
	enum sw_cause_type cause;
} checks[CHECK_COUNT] = {
	[CHECK_PROCESS_CPU] = { "PROCESS_CPU", SW_CAUSE_PROCESS_CPU },
	[CHECK_THREADS] = { "PROCESS_THREAD_COUNT", SW_CAUSE_THREAD_COUNT },
	[CHECK_SYSTEM_LOAD] = { "SYSTEM_LOAD", SW_CAUSE_SYSTEM_LOAD },
	[CHECK_HTTP_ERROR_RATE] = { "HTTP_ERROR_RATE", SW_CAUSE_HTTP_ERROR_RATE },
	[CHECK_HTTP_AVG_RT] = { "HTTP_AVG_RESPONSE_TIME", SW_CAUSE_HTTP_AVG_RESPONSE_TIME },
};

void continuous_init(struct continuous *c, const struct agent_opts *o)
{
	*c = (struct continuous){ .task_s = o->continuous_task_s, .silence_s = o->continuous_silence_s };
	c->clock_ticks = sysconf(_SC_CLK_TCK);
	if (c->clock_ticks <= 0)
		c->clock_ticks = 100;
	for (int i = 0; i < CONT_MAX_PERIOD; i++)
		c->load_window[i] = NAN;
}

/* ---- policies ---- */

static const struct profiler_ops *target_ops(const char *target)
{
	for (int i = 0; profilers[i]; i++)
		if (profilers[i]->skywalking_target && !strcmp(profilers[i]->skywalking_target, target))
			return profilers[i];
	return NULL;
}

static int check_of(const char *name)
{
	for (int i = 0; i < CHECK_COUNT; i++)
		if (!strcmp(checks[i].name, name))
			return i;
	return -1;
}

/* Rover parses the CPU and thread thresholds as integers, the load as a float. */
static bool parse_threshold(enum cont_check check, const struct json *v, double *out)
{
	char *end;

	if (v && v->type == JSON_NUMBER) {
		*out = v->num;
		return check == CHECK_SYSTEM_LOAD || v->num == floor(v->num);
	}
	if (!v || v->type != JSON_STRING || !*v->str)
		return false;
	errno = 0;
	if (check == CHECK_SYSTEM_LOAD)
		*out = strtod(v->str, &end);
	else
		*out = (double)strtol(v->str, &end, 10);
	return !errno && !*end && isfinite(*out);
}

static int int_member(const struct json *obj, const char *key)
{
	const struct json *v = json_member(obj, key);

	return v && v->type == JSON_NUMBER && v->num >= 0 && v->num <= 1e6 ? (int)v->num : 0;
}

/* What a policy's log line says, built while its items are read. */
struct policy_text {
	char taken[512], left[512];
};

static void text_add(char *buf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void text_add(char *buf, const char *fmt, ...)
{
	size_t len = strlen(buf);
	va_list ap;

	if (len >= 511)
		return;
	if (len)
		snprintf(buf + len, 512 - len, "; ");
	len = strlen(buf);
	va_start(ap, fmt);
	vsnprintf(buf + len, 512 - len, fmt, ap);
	va_end(ap);
}

/* One CHECK of TARGET: an item, or a note of why not. */
static void read_item(const struct json *m, const char *target, const struct profiler_ops *ops,
		      struct cont_service *s, struct policy_text *text)
{
	int check = check_of(m->key);
	struct cont_item it = { .period = int_member(m, "Period"), .count = int_member(m, "Count") };

	if (check < 0) {
		text_add(text->left, "%s %s: unknown check, ignored", target, m->key);
		return;
	}
	if (check == CHECK_HTTP_ERROR_RATE || check == CHECK_HTTP_AVG_RT) {
		text_add(text->left, "%s %s ignored: aperture collects no HTTP request metrics", target, m->key);
		return;
	}
	if (!ops) {
		text_add(text->left, "%s %s ignored: aperture runs no %s tasks", target, m->key, target);
		return;
	}
	if (!parse_threshold(check, json_member(m, "Threshold"), &it.threshold) || it.period <= 0 ||
	    it.count <= 0 || it.count > it.period || it.period > CONT_MAX_PERIOD) {
		text_add(text->left, "%s %s ignored: needs a Threshold and 0 < Count <= Period <= %d", target,
			 m->key, CONT_MAX_PERIOD);
		return;
	}
	it.check = check;
	it.kind = ops->id;
	s->items[s->nitems++] = it;
	text_add(text->taken, "%s when %s >= %g in %d of %d s", target, m->key, it.threshold, it.count,
		 it.period);
}

/* The items of a policy's Profiling object into @s (allocated for all of them). */
static int read_profiling(const struct json *profiling, struct cont_service *s, struct policy_text *text)
{
	size_t n = 0;

	for (const struct json *t = profiling ? profiling->child : NULL; t; t = t->next)
		for (const struct json *m = t->type == JSON_OBJECT ? t->child : NULL; m; m = m->next)
			n++;
	if (!n)
		return 0;
	s->items = calloc(n, sizeof(*s->items));
	if (!s->items)
		return -ENOMEM;
	for (const struct json *t = profiling->child; t; t = t->next)
		for (const struct json *m = t->type == JSON_OBJECT ? t->child : NULL; m; m = m->next)
			read_item(m, t->key, target_ops(t->key), s, text);
	return 0;
}

static struct cont_service *service_find(struct continuous *c, const char *name)
{
	for (size_t i = 0; i < c->nservices; i++)
		if (!strcmp(c->services[i].name, name))
			return &c->services[i];
	return NULL;
}

static struct cont_service *service_get(struct continuous *c, const char *name)
{
	struct cont_service *s = service_find(c, name);

	if (s)
		return s;
	if (array_reserve((void **)&c->services, &c->services_cap, c->nservices, sizeof(*c->services), 4))
		return NULL;
	s = &c->services[c->nservices];
	*s = (struct cont_service){ .name = strdup(name), .uuid = strdup("") };
	if (!s->name || !s->uuid) {
		free(s->name);
		free(s->uuid);
		return NULL;
	}
	c->nservices++;
	return s;
}

static void service_clear(struct cont_service *s)
{
	free(s->items);
	s->items = NULL;
	s->nitems = 0;
}

/* One {ServiceName, UUID, Profiling} of the OAP's list: replaces what the service held. */
static void apply_policy(struct continuous *c, const struct oap *oap, const struct json *p)
{
	const struct json *name = json_member(p, "ServiceName"), *uuid = json_member(p, "UUID");
	struct cont_service *s, next = { 0 };
	struct policy_text text = { "", "" };
	char *uuid_copy;

	if (!name || name->type != JSON_STRING || (uuid && uuid->type != JSON_STRING)) {
		log_warn("OAP %s: a continuous profiling policy without ServiceName or UUID ignored", oap->o->oap);
		return;
	}
	s = service_get(c, name->str);
	uuid_copy = strdup(uuid ? uuid->str : "");
	if (!s || !uuid_copy || read_profiling(json_member(p, "Profiling"), &next, &text)) {
		log_warn("continuous: service %s: out of memory, its policy is not updated", name->str);
		free(uuid_copy);
		return;
	}
	service_clear(s);
	free(s->uuid);
	s->uuid = uuid_copy;
	s->items = next.items;
	s->nitems = next.nitems;
	if (!*s->uuid) {
		log_notice("continuous: service %s: policy removed", s->name);
		return;
	}
	log_notice("continuous: service %s: policy %s: %s%s%s", s->name, s->uuid,
		   s->nitems ? text.taken : "nothing aperture checks", *text.left ? "; " : "", text.left);
}

static uint64_t text_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;	/* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h | 1;	/* never 0: 0 is "none said" */
}

/*
 * ServiceWithPolicyJSON.  Text that does not decode is said once (the OAP
 * sends it again at every query, since the UUID held stays the old one) and
 * changes nothing: the policies held are kept.
 */
void continuous_apply_json(struct continuous *c, const struct oap *oap, const char *text)
{
	const char *err = NULL;
	size_t at = 0;
	struct json *list = json_parse(text, strlen(text), &err, &at);

	if (!list || list->type != JSON_ARRAY) {
		uint64_t h = text_hash(text);

		if (h != c->bad_json_hash)
			log_warn("OAP %s: continuous profiling policies do not decode (%s at byte %zu): "
				 "ignored, the policies held are kept", oap->o->oap, list ? "not a list" : err, at);
		c->bad_json_hash = h;
		json_free(list);
		return;
	}
	c->bad_json_hash = 0;
	for (const struct json *p = list->child; p; p = p->next)
		apply_policy(c, oap, p);
	json_free(list);
}

/* The distinct services of @ps's processes, with the UUID held for each ("" for none). */
static size_t services_of(struct continuous *c, const struct procs *ps, struct sw_service_policy *out,
			  size_t cap)
{
	size_t n = 0;

	for (size_t i = 0; i < ps->n && n < cap; i++) {
		const char *name = ps->v[i]->sw.service;
		const struct cont_service *s;
		size_t j;

		if (!name)
			continue;
		for (j = 0; j < n && strcmp(out[j].service, name); j++)
			;
		if (j < n)
			continue;
		s = service_find(c, name);
		out[n++] = (struct sw_service_policy){ name, s ? s->uuid : "" };
	}
	return n;
}

void continuous_query(struct continuous *c, struct oap *oap, const struct procs *ps)
{
	struct sw_service_policy *q = calloc(ps->n ? ps->n : 1, sizeof(*q));
	struct sw_commands cmds = { 0 };
	struct grpc_buf reply = { 0 };
	struct sw_msg req = { 0 };
	size_t n;
	bool decoded;

	if (!q)
		return;
	n = services_of(c, ps, q, ps->n);
	if (!n || sw_encode_policy_query(q, n, &req) || !oap_unary(oap, CALL_POLICIES, &req, &reply))
		goto out;
	decoded = sw_decode_commands(reply.data, reply.len, &cmds) == 0;
	oap_answer_decoded(oap, CALL_POLICIES, decoded);
	for (size_t i = 0; decoded && i < cmds.n; i++) {
		const char *json = sw_command_arg(&cmds.v[i], SW_POLICY_ARG);

		if (cmds.v[i].name && !strcmp(cmds.v[i].name, SW_POLICY_COMMAND) && json)
			continuous_apply_json(c, oap, json);
		else
			log_info("queryPolicies: ignoring OAP command %s", cmds.v[i].name ? cmds.v[i].name : "(unnamed)");
	}
out:
	free(req.data);
	sw_commands_free(&cmds);
	grpc_buf_free(&reply);
	free(q);
}

/* ---- meters ---- */

/*
 * The newest values of @p's checked kinds, as Rover's MetricsAppender names them (the prefix
 * rover_con_p, "_", the check type in lower case; labels process_name and layer): one
 * MeterDataCollection for the process's service and instance, appended to @out.
 */
static void append_meters(const struct continuous *c, const struct cont_service *s, const struct cont_watch *w,
			  const struct agent_proc *p, size_t slot, struct sw_msgs *out)
{
	static const char *const names[CONT_PROCESS_CHECKS + 1] = {
		[CHECK_PROCESS_CPU] = "rover_con_p_process_cpu",
		[CHECK_THREADS] = "rover_con_p_process_thread_count",
		[CHECK_SYSTEM_LOAD] = "rover_con_p_system_load",
	};
	struct sw_meter m[CONT_PROCESS_CHECKS + 1];
	bool have[CONT_PROCESS_CHECKS + 1] = { false };
	struct sw_msg msg;
	size_t n = 0;

	for (size_t i = 0; i < s->nitems; i++) {
		enum cont_check k = s->items[i].check;
		double v = k == CHECK_SYSTEM_LOAD ? c->load_window[slot] : w->window[k][slot];

		if (k > CHECK_SYSTEM_LOAD || have[k] || isnan(v))
			continue;
		have[k] = true;
		m[n++] = (struct sw_meter){ names[k], v, p->sw.process_name, p->sw.layer };
	}
	if (n && !sw_encode_meters(p->sw.service, p->sw.instance, wall_ms(), m, n, &msg) && sw_msgs_push(out, msg))
		free(msg.data);
}

/* One collectBatch stream of @meters; what the OAP did not take is counted as dropped. */
static void send_meters(struct continuous *c, struct oap *oap, struct sw_msgs *meters)
{
	if (!meters->n)
		return;
	if (oap_stream(oap, CALL_METERS, meters))
		c->meters_sent += meters->n;
	else
		c->meters_dropped += meters->n;
	sw_msgs_free(meters);
}

/* ---- checks ---- */

static bool any_items(const struct continuous *c, enum cont_check check)
{
	for (size_t i = 0; i < c->nservices; i++)
		for (size_t j = 0; j < c->services[i].nitems; j++)
			if (check == CHECK_COUNT || c->services[i].items[j].check == check)
				return true;
	return false;
}

static struct cont_watch *watch_get(struct continuous *c, uint32_t pid, uint64_t start_time)
{
	struct cont_watch *w;

	for (size_t i = 0; i < c->nwatch; i++) {
		w = &c->watch[i];
		if (w->pid != pid)
			continue;
		if (w->start_time != start_time)
			break;	/* the pid of an exited process, reused: a new watch in its place */
		return w;
	}
	if (array_reserve((void **)&c->watch, &c->watch_cap, c->nwatch, sizeof(*c->watch), 8))
		return NULL;
	for (size_t i = 0; i < c->nwatch; i++)
		if (c->watch[i].pid == pid)
			c->watch[i].pid = 0;	/* dropped at the end of this check */
	w = &c->watch[c->nwatch++];
	memset(w, 0, sizeof(*w));
	w->pid = pid;
	w->start_time = start_time;
	for (int k = 0; k < CONT_PROCESS_CHECKS; k++)
		for (int i = 0; i < CONT_MAX_PERIOD; i++)
			w->window[k][i] = NAN;
	return w;
}

/* This second's values of @p's process into slot @slot of its watch. */
static struct cont_watch *watch_read(struct continuous *c, const struct agent_proc *p, size_t slot,
				     uint64_t now)
{
	struct proc_cpu cpu;
	struct cont_watch *w;

	if (!proc_cpu_read(p->sw.pid, &cpu) || cpu.start_time != p->start_time)
		return NULL;	/* gone: the next heartbeat forgets it */
	w = watch_get(c, p->sw.pid, cpu.start_time);
	if (!w)
		return NULL;
	w->seen = true;
	w->window[CHECK_PROCESS_CPU][slot] = NAN;
	if (w->last_ns && now > w->last_ns && cpu.cpu_ticks >= w->last_ticks)
		w->window[CHECK_PROCESS_CPU][slot] = (double)(cpu.cpu_ticks - w->last_ticks) / c->clock_ticks /
						     ((double)(now - w->last_ns) / 1e9) * 100.0;
	w->window[CHECK_THREADS][slot] = (double)cpu.threads;
	w->last_ticks = cpu.cpu_ticks;
	w->last_ns = now;
	return w;
}

static double read_load1(void)
{
	char buf[128];
	double load;

	if (read_small_file("/proc/loadavg", buf, sizeof(buf)) <= 0 || sscanf(buf, "%lf", &load) != 1)
		return NAN;
	return load;
}

/*
 * Whether @it tripped: @count of the last @period slots up to @slot reached
 * the threshold; *@current gets the newest value that did.
 */
static bool item_tripped(const struct cont_item *it, const double *window, size_t slot, double *current)
{
	int reached = 0;
	bool have = false;

	for (int i = 0; i < it->period; i++) {
		double v = window[(slot + CONT_MAX_PERIOD - (size_t)i) % CONT_MAX_PERIOD];

		if (!isnan(v) && v >= it->threshold) {
			if (!have)
				*current = v;
			have = true;
			reached++;
		}
	}
	return reached >= it->count;
}

/* The causes and their log text for one report. */
struct trip {
	struct sw_cause causes[CHECK_COUNT];
	size_t n;
	char text[256];
};

static const char *target_of_kind(int kind)
{
	for (int i = 0; profilers[i]; i++)
		if ((int)profilers[i]->id == kind)
			return profilers[i]->skywalking_target;
	return NULL;
}

/* The task id of the OAP's answer (Rover: exactly one ContinuousProfilingReportTask command). */
static char *answered_task(const struct grpc_buf *reply, struct oap *oap)
{
	struct sw_commands cmds = { 0 };
	const char *id = NULL;
	char *out = NULL;
	bool decoded = sw_decode_commands(reply->data, reply->len, &cmds) == 0;

	oap_answer_decoded(oap, CALL_TRIGGER, decoded);
	if (decoded && cmds.n == 1 && cmds.v[0].name && !strcmp(cmds.v[0].name, SW_REPORT_COMMAND))
		id = sw_command_arg(&cmds.v[0], "TaskId");
	if (id && *id)
		out = strdup(id);
	else if (decoded)
		log_warn("OAP %s: reportProfilingTask answered no %s command with a TaskId", oap->o->oap,
			 SW_REPORT_COMMAND);
	sw_commands_free(&cmds);
	return out;
}

/* Every watch of the pids of the task just taken: the silence starts now. */
static void mark_started(struct continuous *c, const struct tasks *ts, const char *process_id, int kind,
			 int64_t now_ms)
{
	for (size_t i = 0; i < ts->n; i++) {
		const struct agent_task *t = ts->v[i];

		if (t->kind != kind || strcmp(t->t.process_ids[0], process_id))
			continue;
		for (size_t j = 0; j < c->nwatch; j++)
			if (pid_in(t->pids, t->npids, c->watch[j].pid))
				c->watch[j].last_task_ms[kind] = now_ms;
	}	silences_note(&c->silences, process_id, kind, now_ms);	/* for the ledger: a restart keeps it */
}

/* reportProfilingTask for @p's @trip, and the answered task into @ts; true when @ts took it. */
static bool report_trip(struct continuous *c, const struct procs *ps, const struct agent_proc *p, int kind,
			const struct trip *trip, struct oap *oap, struct tasks *ts)
{
	const char *target = target_of_kind(kind);
	const struct sw_continuous_report r = {
		.layer = p->sw.layer, .service = p->sw.service, .instance = p->sw.instance,
		.process_name = p->sw.process_name, .causes = trip->causes, .ncauses = trip->n,
		.duration_s = (int32_t)c->task_s, .target = !strcmp(target, "OFF_CPU") ? SW_TARGET_OFF_CPU : SW_TARGET_ON_CPU,
	};
	struct grpc_buf reply = { 0 };
	struct sw_msg req = { 0 };
	char *task_id = NULL;
	uint32_t *pids = NULL;
	size_t npids;
	bool taken = false;

	c->trips++;
	if (sw_encode_continuous_report(&r, &req) || !oap_unary(oap, CALL_TRIGGER, &req, &reply))
		goto out;
	task_id = answered_task(&reply, oap);
	if (!task_id)
		goto out;
	c->reports++;
	npids = procs_pids(ps, p->sw.process_id, &pids);
	if (!npids) {
		free(pids);
		goto out;
	}
	taken = tasks_add_continuous(ts, oap, task_id, p->sw.process_id, target, (int64_t)c->task_s, pids, npids);
	log_notice("continuous: %s in process %s (pid %u, OAP id %s) of service %s: reported, task %s (%s, %" PRIu64
		   " s)%s", trip->text, p->sw.process_name, p->sw.pid, p->sw.process_id, p->sw.service, task_id,
		   target, c->task_s, taken ? "" : " not taken");
	if (taken)
		mark_started(c, ts, p->sw.process_id, kind, wall_ms());
out:
	free(req.data);
	free(task_id);
	grpc_buf_free(&reply);
	return taken;
}

/* What tripped of @s's items of @kind for @w's process. */
static void find_causes(const struct continuous *c, const struct cont_service *s, const struct cont_watch *w,
			int kind, size_t slot, struct trip *trip)
{
	trip->n = 0;
	trip->text[0] = '\0';
	for (size_t i = 0; i < s->nitems && trip->n < CHECK_COUNT; i++) {
		const struct cont_item *it = &s->items[i];
		const double *window = it->check == CHECK_SYSTEM_LOAD ? c->load_window : w->window[it->check];
		double current = 0;
		size_t len = strlen(trip->text);

		if (it->kind != kind || !item_tripped(it, window, slot, &current))
			continue;
		trip->causes[trip->n++] = (struct sw_cause){ checks[it->check].cause, it->threshold, current };
		snprintf(trip->text + len, sizeof(trip->text) - len, "%s%s %.1f >= %g in %d of %d s",
			 len ? ", " : "", checks[it->check].name, current, it->threshold, it->count, it->period);
	}
}

/* Whether a new task of @kind may start for @p now (Rover's BaseTrigger.shouldTriggerFromDimension). */
static bool may_start(const struct continuous *c, const struct cont_watch *w, const struct agent_proc *p,
		      int kind, const struct tasks *ts, int64_t now_ms)
{
	int64_t last = silences_last(&c->silences, p->sw.process_id, kind);

	if (tasks_kind_for(ts, kind, p->sw.process_id))
		return false;	/* one runs: a trip does not start a second */
	if (w->last_task_ms[kind] > last)
		last = w->last_task_ms[kind];
	return !last || now_ms - last >= (int64_t)c->silence_s * 1000;
}

/* @p's checks this second; true when a task was taken. */
static bool check_process(struct continuous *c, const struct procs *ps, const struct agent_proc *p,
			  size_t slot, uint64_t now, struct oap *oap, struct tasks *ts, bool *changed,
			  struct sw_msgs *meters)
{
	const struct cont_service *s = p->sw.service ? service_find(c, p->sw.service) : NULL;
	struct cont_watch *w;
	bool taken = false;

	if (!s || !s->nitems || !p->sw.process_id)
		return false;
	w = watch_read(c, p, slot, now);
	if (w && meters)
		append_meters(c, s, w, p, slot, meters);
	for (int kind = 0; w && kind < PROFILER_MAX && !oap->fatal; kind++) {
		struct trip trip;

		if (!may_start(c, w, p, kind, ts, wall_ms()))
			continue;
		find_causes(c, s, w, kind, slot, &trip);
		if (trip.n && report_trip(c, ps, p, kind, &trip, oap, ts))
			changed[kind] = taken = true;
	}
	return taken;
}

/* Watches of processes no longer selected (or whose pid was reused) go. */
static void watches_prune(struct continuous *c)
{
	size_t kept = 0;

	for (size_t i = 0; i < c->nwatch; i++) {
		if (!c->watch[i].seen || !c->watch[i].pid)
			continue;
		c->watch[i].seen = false;
		if (kept != i)
			c->watch[kept] = c->watch[i];
		kept++;
	}
	c->nwatch = kept;
}

bool continuous_check(struct continuous *c, const struct procs *ps, struct oap *oap, struct tasks *ts,
		      bool *changed)
{
	/* Rover sends them at every check (check_interval, 5 s), the values of the last second */
	bool meter_due = c->second % CONT_METER_EVERY == 0;
	size_t slot = c->second++ % CONT_MAX_PERIOD;
	uint64_t now = now_ns(CLOCK_MONOTONIC);
	struct sw_msgs meters = { 0 };
	bool taken = false;

	c->load_window[slot] = NAN;
	if (!any_items(c, CHECK_COUNT)) {
		c->nwatch = 0;
		return false;
	}
	if (any_items(c, CHECK_SYSTEM_LOAD))
		c->load_window[slot] = read_load1();
	for (size_t i = 0; i < ps->n; i++)
		taken |= check_process(c, ps, ps->v[i], slot, now, oap, ts, changed, meter_due ? &meters : NULL);
	watches_prune(c);
	if (!oap->fatal)
		send_meters(c, oap, &meters);
	sw_msgs_free(&meters);
	return taken;
}

void continuous_free(struct continuous *c)
{
	for (size_t i = 0; i < c->nservices; i++) {
		service_clear(&c->services[i]);
		free(c->services[i].name);
		free(c->services[i].uuid);
	}
	free(c->services);
	free(c->watch);
	silences_free(&c->silences);
	*c = (struct continuous){ 0 };
}
