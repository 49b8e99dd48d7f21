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
 * dropped first, and goes out in order once the OAP answers again.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <ifaddrs.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "agent.h"
#include "cli.h"
#include "grpc.h"
#include "pin.h"
#include "profiler.h"
#include "skywalking.h"
#include "symbolize.h"
#include "util.h"

#define MAX_SELECT 64
#define MS 1000000ull		/* ns per ms */

struct agent_opts {
	const char *oap;
	char *token;
	uint32_t pids[MAX_SELECT];
	int npids;
	const char *exe_patterns[MAX_SELECT];
	int nexe;
	const char *cgroups[MAX_SELECT];	/* paths relative to the cgroup2 root */
	int ncgroups;
	const char *service, *instance;
	uint64_t heartbeat_ms, task_ms, flush_ms, deadline_ms, backoff_max_ms;
	uint64_t report_every;
	uint64_t spool_bytes;
	uint64_t duration_s;
	struct profiler_opts prof;	/* each profiler's own options (-F, --min-block-us, ...) */
	const char *pin_dir;		/* NULL: profilers load per task, nothing pinned */
};

struct agent_proc {
	struct sw_process sw;		/* points into the strings below */
	uint64_t start_time;		/* /proc/PID/stat starttime: tells a reused pid apart */
	char *service, *instance, *name, *cmdline;
	bool seen;			/* in the latest scan */
	bool reported;			/* the OAP answered with its id */
};

enum task_state { TASK_PENDING, TASK_RUNNING, TASK_DONE };
/* A task's kind is the id of the profiler that serves it (an index into agent.prof). */
#define KIND_NONE (-1)

struct agent_task {
	struct sw_task t;
	int kind;			/* profiler id; KIND_NONE: remembered only, never run */
	enum task_state state;
	uint32_t *pids;
	size_t npids;
	int64_t run_start_ms, stop_at_ms;	/* CLOCK_REALTIME */
	uint64_t count;			/* samples / switches queued for the OAP */
	uint64_t messages;
};

struct agent_prof {
	const struct profiler_ops *ops;
	struct profiler *p;
	struct ring_buffer *events;
	uint32_t *pids;			/* p->opts.pids points here */
	int npids;
};

struct spool_batch {
	struct sw_msgs msgs;		/* one collectProfilingData stream */
	struct spool_batch *next;
};

struct spool {
	struct spool_batch *head, *tail;
	size_t bytes, limit, nbatches;
	uint64_t dropped_msgs, dropped_bytes;
};

struct agent {
	struct agent_opts o;
	char agent_id[37];
	char hostname[256];
	char host_ip[INET6_ADDRSTRLEN];
	struct grpc_channel *ch;
	struct symbolizer *sym;
	struct agent_proc **procs;
	size_t nprocs;
	struct agent_task **tasks;
	size_t ntasks;
	struct agent_prof prof[PROFILER_MAX];	/* by profiler id; ops NULL: no SkyWalking target */
	struct profiler_shared shared;	/* --pin: one control map, one target set */
	struct spool spool;
	int64_t latest_update_ms;
	uint64_t heartbeats;
	bool oap_down;			/* the last call failed with a transient error */
	bool fatal;			/* the OAP refused us: stop */
};

static int64_t wall_ms(void)
{
	return (int64_t)(now_ns(CLOCK_REALTIME) / MS);
}

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

/* ---- talking to the OAP ---- */

static bool transient(int code)
{
	return code == GRPC_UNAVAILABLE || code == GRPC_RESOURCE_EXHAUSTED ||
	       code == GRPC_DEADLINE_EXCEEDED || code == GRPC_ABORTED || code == GRPC_CANCELLED;
}

/* Logs a failed call once per outage; returns true when the call failed. */
static bool call_failed(struct agent *a, const char *what, int code, const struct grpc_status *st)
{
	if (code == GRPC_OK) {
		if (a->oap_down)
			log_warn("OAP %s answers again", a->o.oap);
		a->oap_down = false;
		return false;
	}
	if (code == GRPC_PERMISSION_DENIED || code == GRPC_UNAUTHENTICATED) {
		if (!a->fatal)
			log_error("OAP %s refused %s: %s: %s (check the token in --token-file or APERTURE_OAP_TOKEN)",
				  a->o.oap, what, grpc_code_name(code), st->message);
		a->fatal = true;
	} else if (transient(code)) {
		if (!a->oap_down)
			log_warn("OAP %s: %s failed: %s: %s; profiling data is kept in the spool",
				 a->o.oap, what, grpc_code_name(code), st->message);
		else
			log_info("%s failed: %s: %s", what, grpc_code_name(code), st->message);
		a->oap_down = true;
	} else {
		log_warn("OAP %s: %s failed: %s: %s", a->o.oap, what, grpc_code_name(code), st->message);
	}
	return true;
}

/* A unary call; on success @reply holds the answer. */
static bool unary(struct agent *a, const char *what, const char *path, struct sw_msg *req,
		  struct grpc_buf *reply)
{
	struct grpc_status st;
	int code = grpc_unary(a->ch, path, req->data, req->len, a->o.deadline_ms, reply, &st);

	free(req->data);
	req->data = NULL;
	return !call_failed(a, what, code, &st);
}

/* ---- process discovery ---- */

static ssize_t read_small(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return -errno;
	n = fread(buf, 1, size - 1, f);
	fclose(f);
	buf[n] = '\0';
	return (ssize_t)n;
}

static uint64_t proc_start_time(uint32_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long start = 0;
	int field;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	if (read_small(path, buf, sizeof(buf)) <= 0)
		return 0;
	/* comm may hold spaces and parens: fields count from the last ')'. */
	p = strrchr(buf, ')');
	if (!p)
		return 0;
	for (field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	if (p)
		sscanf(p + 1, "%llu", &start);
	return start;
}

static bool cgroup_selected(const struct agent_opts *o, uint32_t pid)
{
	char path[64], buf[4096], *line, *save = NULL;

	if (o->ncgroups == 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%u/cgroup", pid);
	if (read_small(path, buf, sizeof(buf)) <= 0)
		return false;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "0::", 3))
			continue;
		for (int i = 0; i < o->ncgroups; i++) {
			size_t n = strlen(o->cgroups[i]);

			if (!strcmp(o->cgroups[i], "/") ||
			    (!strncmp(line + 3, o->cgroups[i], n) && (line[3 + n] == '\0' || line[3 + n] == '/')))
				return true;
		}
	}
	return false;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

static bool exe_selected(const struct agent_opts *o, const char *exe, const char *comm)
{
	const char *base = base_name(exe);

	for (int i = 0; i < o->nexe; i++)
		if ((*exe && (!fnmatch(o->exe_patterns[i], exe, 0) || !fnmatch(o->exe_patterns[i], base, 0))) ||
		    !fnmatch(o->exe_patterns[i], comm, 0))
			return true;
	return false;
}

static char *read_cmdline(uint32_t pid)
{
	char path[64], buf[4096];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%u/cmdline", pid);
	n = read_small(path, buf, sizeof(buf));
	if (n < 0)
		n = 0;
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
	while (n > 0 && buf[n - 1] == ' ')
		buf[--n] = '\0';
	return strdup_logged(buf);
}

static void proc_free(struct agent_proc *p)
{
	if (!p)
		return;
	free(p->sw.process_id);
	free(p->service);
	free(p->instance);
	free(p->name);
	free(p->cmdline);
	free(p);
}

static struct agent_proc *proc_new(struct agent *a, uint32_t pid, uint64_t start, const char *exe,
				   const char *comm)
{
	struct agent_proc *p = calloc_logged(1, sizeof(*p));
	const char *base = base_name(exe);

	if (!p)
		return NULL;
	p->name = strdup_logged(*base ? base : comm);
	p->service = strdup_logged(a->o.service ? a->o.service : a->hostname);
	p->instance = strdup_logged(a->o.instance ? a->o.instance : p->name ? p->name : comm);
	p->cmdline = read_cmdline(pid);
	if (!p->name || !p->service || !p->instance || !p->cmdline) {
		proc_free(p);
		return NULL;
	}
	p->start_time = start;
	p->seen = true;
	p->sw = (struct sw_process){
		.pid = pid, .service = p->service, .instance = p->instance,
		.process_name = p->name, .command_line = p->cmdline, .host_ip = a->host_ip,
	};
	return p;
}

static struct agent_proc *proc_find(struct agent *a, uint32_t pid, uint64_t start)
{
	for (size_t i = 0; i < a->nprocs; i++)
		if (a->procs[i]->sw.pid == pid && a->procs[i]->start_time == start)
			return a->procs[i];
	return NULL;
}

static int proc_add(struct agent *a, struct agent_proc *p)
{
	struct agent_proc **v = realloc(a->procs, (a->nprocs + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	a->procs = v;
	a->procs[a->nprocs++] = p;
	return 0;
}

/* Looks at one /proc entry; a selected process not seen before is added. */
static void scan_one(struct agent *a, uint32_t pid, int *added)
{
	char path[64], exe[PATH_MAX] = "", comm[64] = "";
	struct agent_proc *p;
	uint64_t start;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%u/exe", pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	if (n > 10 && !strcmp(exe + n - 10, " (deleted)"))
		exe[n - 10] = '\0';
	snprintf(path, sizeof(path), "/proc/%u/comm", pid);
	if (read_small(path, comm, sizeof(comm)) < 0)
		return;		/* gone */
	comm[strcspn(comm, "\n")] = '\0';
	/* Kernel threads (no exe) have no user stacks: only when asked by pid. */
	if (!pid_in(a->o.pids, a->o.npids, pid) &&
	    (!*exe || (!exe_selected(&a->o, exe, comm) && !cgroup_selected(&a->o, pid))))
		return;
	start = proc_start_time(pid);
	p = proc_find(a, pid, start);
	if (p) {
		p->seen = true;
		return;
	}
	p = proc_new(a, pid, start, exe, comm);
	if (!p || proc_add(a, p)) {
		proc_free(p);
		return;
	}
	log_info("process %u (%s) selected", pid, p->name);
	(*added)++;
}

/* Rescans /proc: picks up new processes, forgets exited ones.  Returns how many are new. */
static int scan_processes(struct agent *a)
{
	DIR *dir = opendir("/proc");
	struct dirent *de;
	uint32_t self = (uint32_t)getpid();
	int added = 0;
	size_t i, kept = 0;

	if (!dir) {
		log_warn("cannot read /proc: %s", strerror(errno));
		return 0;
	}
	for (i = 0; i < a->nprocs; i++)
		a->procs[i]->seen = false;
	while ((de = readdir(dir))) {
		char *end;
		unsigned long pid = strtoul(de->d_name, &end, 10);

		if (*end || pid == 0 || pid == self)
			continue;
		scan_one(a, (uint32_t)pid, &added);
	}
	closedir(dir);
	for (i = 0; i < a->nprocs; i++) {
		if (a->procs[i]->seen) {
			a->procs[kept++] = a->procs[i];
			continue;
		}
		log_info("process %u (%s) exited", a->procs[i]->sw.pid, a->procs[i]->name);
		proc_free(a->procs[i]);
	}
	a->nprocs = kept;
	return added;
}

enum proc_filter { PROCS_ALL, PROCS_UNREPORTED, PROCS_REPORTED };

/* The sw_process of each process @which selects; NULL on ENOMEM. */
static struct sw_process **proc_list(const struct agent *a, enum proc_filter which, size_t *n)
{
	struct sw_process **list = calloc(a->nprocs ? a->nprocs : 1, sizeof(*list));

	*n = 0;
	if (!list) {
		log_warn("out of memory listing processes");
		return NULL;
	}
	for (size_t i = 0; i < a->nprocs; i++)
		if (which == PROCS_ALL || a->procs[i]->reported == (which == PROCS_REPORTED))
			list[(*n)++] = &a->procs[i]->sw;
	return list;
}

/* reportProcesses with every process (@all) or those the OAP has no id for yet. */
static void report_processes(struct agent *a, bool all)
{
	struct grpc_buf reply = { 0 };
	struct sw_process **list;
	struct sw_msg req;
	size_t n, i;
	int matched;

	list = proc_list(a, all ? PROCS_ALL : PROCS_UNREPORTED, &n);
	if (!list || n == 0 || sw_encode_report(list, n, a->agent_id, &req))
		goto out;
	if (!unary(a, "reportProcesses", SW_PATH_REPORT_PROCESSES, &req, &reply))
		goto out;
	matched = sw_decode_downstream(reply.data, reply.len, list, n);
	if (matched < 0) {
		log_warn("OAP %s: reportProcesses answer does not decode", a->o.oap);
		goto out;
	}
	for (i = 0; i < a->nprocs; i++)
		if (a->procs[i]->sw.process_id)
			a->procs[i]->reported = true;
	log_info("reported %zu processes, the OAP identified %d", n, matched);
out:
	grpc_buf_free(&reply);
	free(list);
}

static void keep_alive(struct agent *a)
{
	struct grpc_buf reply = { 0 };
	struct sw_process **list;
	struct sw_msg req;
	size_t n;

	list = proc_list(a, PROCS_REPORTED, &n);
	if (list && n && !sw_encode_ping(list, n, a->agent_id, &req))
		unary(a, "keepAlive", SW_PATH_KEEP_ALIVE, &req, &reply);
	grpc_buf_free(&reply);
	free(list);
}

static bool any_unreported(const struct agent *a)
{
	for (size_t i = 0; i < a->nprocs; i++)
		if (!a->procs[i]->reported)
			return true;
	return false;
}

static void heartbeat(struct agent *a)
{
	scan_processes(a);
	if (a->heartbeats % a->o.report_every == 0)
		report_processes(a, true);
	else if (any_unreported(a))
		report_processes(a, false);
	if (!a->fatal)
		keep_alive(a);
	a->heartbeats++;
}

/* ---- tasks ---- */

static void task_free(struct agent_task *t)
{
	if (!t)
		return;
	sw_task_free(&t->t);
	free(t->pids);
	free(t);
}

static struct agent_task *task_find(struct agent *a, const char *id)
{
	for (size_t i = 0; i < a->ntasks; i++)
		if (!strcmp(a->tasks[i]->t.task_id, id))
			return a->tasks[i];
	return NULL;
}

/* Local pids of the OAP process ids a task names; 0 when none is known here. */
static size_t task_pids(struct agent *a, const struct sw_task *t, uint32_t **out)
{
	uint32_t *pids = calloc(a->nprocs ? a->nprocs : 1, sizeof(*pids));
	size_t n = 0;

	*out = pids;
	if (!pids)
		return 0;
	for (size_t i = 0; i < a->nprocs; i++) {
		const struct agent_proc *p = a->procs[i];

		if (!p->sw.process_id)
			continue;
		for (size_t j = 0; j < t->nprocess_ids; j++) {
			if (!strcmp(p->sw.process_id, t->process_ids[j])) {
				pids[n++] = p->sw.pid;
				break;
			}
		}
	}
	return n;
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

static int task_add(struct agent *a, struct agent_task *t)
{
	struct agent_task **v = realloc(a->tasks, (a->ntasks + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	a->tasks = v;
	a->tasks[a->ntasks++] = t;
	return 0;
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

/* Takes @t and @pids (a task whose processes are known here). */
static void accept_task(struct agent *a, struct sw_task *t, uint32_t *pids, size_t npids)
{
	struct agent_task *task = task_find(a, t->task_id);
	int64_t now = wall_ms();
	int kind;

	if (task && task->state == TASK_RUNNING) {
		/* The same task again only re-arms its stop time. */
		task->stop_at_ms = ms_after(now, task->t.duration_s);
		log_info("task %s re-armed: stops in %" PRId64 " s", task->t.task_id, task->t.duration_s);
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
		log_info("task %s (%s, %" PRId64 " s, %zu processes) accepted", t->task_id,
			 t->target_name, t->duration_s, npids);
	return;
drop:
	sw_task_free(t);
	free(pids);
}

static void handle_command(struct agent *a, const struct sw_command *c, int64_t *max_update)
{
	struct sw_task t;
	uint32_t *pids;
	size_t npids;
	int err = sw_task_parse(c, &t);

	if (err == -ENOENT) {
		log_info("ignoring OAP command %s", c->name ? c->name : "(unnamed)");
		return;
	}
	if (err) {
		log_warn("OAP %s: malformed profiling task ignored: %s", a->o.oap, strerror(-err));
		return;
	}
	npids = task_pids(a, &t, &pids);
	if (npids == 0) {
		/* Not advancing latestUpdateTime over it: it comes again once we know the process. */
		log_info("task %s: none of its processes is known here yet", t.task_id);
		free(pids);
		sw_task_free(&t);
		return;
	}
	if (t.update_time_ms > *max_update)
		*max_update = t.update_time_ms;
	accept_task(a, &t, pids, npids);
}

static void query_tasks(struct agent *a)
{
	struct sw_commands cmds = { 0 };
	struct grpc_buf reply = { 0 };
	int64_t max_update = a->latest_update_ms;
	struct sw_msg req;

	if (sw_encode_task_query(a->agent_id, a->latest_update_ms, &req))
		return;
	if (!unary(a, "queryTasks", SW_PATH_QUERY_TASKS, &req, &reply))
		goto out;
	if (sw_decode_commands(reply.data, reply.len, &cmds)) {
		log_warn("OAP %s: queryTasks answer does not decode", a->o.oap);
		goto out;
	}
	for (size_t i = 0; i < cmds.n; i++)
		handle_command(a, &cmds.v[i], &max_update);
	a->latest_update_ms = max_update;
out:
	sw_commands_free(&cmds);
	grpc_buf_free(&reply);
}

/* ---- profilers ---- */

static void prof_close(struct agent_prof *ap)
{
	ring_buffer__free(ap->events);
	ap->events = NULL;
	profiler_close(ap->p);
	ap->p = NULL;
	free(ap->pids);
	ap->pids = NULL;
	ap->npids = 0;
}

static int prof_open(struct agent *a, struct agent_prof *ap, uint32_t *pids, int npids)
{
	struct profiler_opts opts = a->o.prof;
	int err;

	opts.pids = pids;
	opts.npids = npids;
	ap->pids = pids;
	ap->npids = npids;
	err = profiler_open(&ap->p, ap->ops, &opts);
	if (!err)
		err = profiler_attach(ap->p);
	if (!err)
		profiler_watch_processes(ap->p, &ap->events, a->sym);	/* degrades, logged */
	if (err)
		prof_close(ap);
	return err;
}

/* The union of the pids of @kind's running tasks, in *@out (malloc'd); count or -ENOMEM. */
static int wanted_pids(const struct agent *a, int kind, uint32_t **out)
{
	uint32_t *want = NULL;
	size_t cap = 0, n = 0;

	*out = NULL;
	for (size_t i = 0; i < a->ntasks; i++)
		if (a->tasks[i]->kind == kind && a->tasks[i]->state == TASK_RUNNING)
			cap += a->tasks[i]->npids;
	if (cap == 0)
		return 0;
	want = calloc(cap, sizeof(*want));
	if (!want)
		return -ENOMEM;
	for (size_t i = 0; i < a->ntasks; i++) {
		const struct agent_task *t = a->tasks[i];

		if (t->kind != kind || t->state != TASK_RUNNING)
			continue;
		for (size_t j = 0; j < t->npids; j++)
			if (!pid_in(want, n, t->pids[j]))
				want[n++] = t->pids[j];
	}
	*out = want;
	return (int)n;
}

/* Ends the running tasks of @kind: there is nothing to run them with. */
static void abort_tasks(struct agent *a, int kind)
{
	for (size_t i = 0; i < a->ntasks; i++) {
		struct agent_task *t = a->tasks[i];

		if (t->kind == kind && t->state == TASK_RUNNING) {
			t->state = TASK_DONE;
			log_warn("task %s (%s) ended: its profiler cannot run", t->t.task_id,
				 t->t.target_name);
		}
	}
}

/*
 * Pinned profilers stay loaded: with no task they are disabled through the
 * control map; their share of the target set follows their tasks.  Takes @want.
 */
static void reconfigure_pinned(struct agent_prof *ap, uint32_t *want, int nwant)
{
	if (!ap->p) {
		free(want);
		return;
	}
	ap->p->opts.disabled = nwant == 0;
	if (profiler_set_pids(ap->p, want, nwant))
		log_warn("%s: the profiled processes could not all be updated", ap->ops->name);
	free(ap->pids);
	ap->pids = want;
	ap->npids = nwant;
}

/* Loads (or takes over) both profilers pinned under --pin, idle until a task comes. */
static int open_pinned(struct agent *a)
{
	struct profiler_opts opts = a->o.prof;
	const struct profiler_ops *ops[PROFILER_MAX];
	struct profiler *profs[PROFILER_MAX];
	int err, n = 0;

	opts.shared = &a->shared;
	opts.keep_totals = true;
	opts.targets_only = true;
	opts.disabled = true;
	for (int k = 0; k < PROFILER_MAX; k++)
		if (a->prof[k].ops)
			ops[n++] = a->prof[k].ops;
	err = pin_start(a->o.pin_dir, ops, n, &opts, profs);
	for (int i = 0; i < n && !err; i++) {
		struct agent_prof *ap = &a->prof[ops[i]->id];

		ap->p = profs[i];
		/* A taken-over profiler still runs its last tasks' filter: reset it. */
		err = profiler_set_pids(ap->p, NULL, 0);
		profiler_watch_processes(ap->p, &ap->events, a->sym);	/* degrades, logged */
	}
	return err;
}

/* The kernel-side PID filter of @kind follows the union of its running tasks' processes. */
static void reconfigure(struct agent *a, int kind)
{
	struct agent_prof *ap = &a->prof[kind];
	uint32_t *want;
	int nwant = wanted_pids(a, kind, &want);

	if (nwant < 0) {
		log_warn("%s: out of memory, the profiled processes are not updated", ap->ops->name);
		return;
	}
	if (a->o.pin_dir) {
		reconfigure_pinned(ap, want, nwant);
		return;
	}
	if (nwant == 0) {
		if (ap->p)
			log_info("%s: no task left, profiler stopped", ap->ops->name);
		prof_close(ap);
		return;
	}
	if (!ap->p) {
		if (prof_open(a, ap, want, nwant))
			abort_tasks(a, kind);
		else
			log_info("%s: profiling %d processes", ap->ops->name, nwant);
		return;
	}
	/* Live: the kernel-side set follows the tasks. */
	if (profiler_set_pids(ap->p, want, nwant))
		log_warn("%s: the profiled processes could not all be updated", ap->ops->name);
	free(ap->pids);
	ap->pids = want;
	ap->npids = nwant;
}

/* ---- the spool and data upload ---- */

static void spool_pop(struct spool *s)
{
	struct spool_batch *b = s->head;

	s->head = b->next;
	if (!s->head)
		s->tail = NULL;
	s->bytes -= b->msgs.bytes;
	s->nbatches--;
	sw_msgs_free(&b->msgs);
	free(b);
}

static void spool_drop_oldest(struct spool *s)
{
	s->dropped_msgs += s->head->msgs.n;
	s->dropped_bytes += s->head->msgs.bytes;
	spool_pop(s);
}

/* Queues @msgs (taken); drops the oldest batches to stay under the limit. */
static void spool_push(struct spool *s, struct sw_msgs *msgs)
{
	struct spool_batch *b = calloc_logged(1, sizeof(*b));
	uint64_t dropped = s->dropped_msgs;

	if (!b) {
		s->dropped_msgs += msgs->n;
		s->dropped_bytes += msgs->bytes;
		sw_msgs_free(msgs);
		return;
	}
	while (s->head && s->bytes + msgs->bytes > s->limit)
		spool_drop_oldest(s);
	if (s->dropped_msgs != dropped)
		log_warn("spool full (%zu bytes): dropped the oldest data, %" PRIu64 " messages (%" PRIu64
			 " bytes) dropped so far", s->limit, s->dropped_msgs, s->dropped_bytes);
	b->msgs = *msgs;
	*msgs = (struct sw_msgs){ 0 };
	if (s->tail)
		s->tail->next = b;
	else
		s->head = b;
	s->tail = b;
	s->bytes += b->msgs.bytes;
	s->nbatches++;
}

static int send_batch(struct agent *a, const struct sw_msgs *msgs, struct grpc_status *st)
{
	struct grpc_buf reply = { 0 };
	struct grpc_call *call;
	int code;

	code = grpc_stream_open(a->ch, SW_PATH_COLLECT, a->o.deadline_ms, &call, st);
	if (code)
		return code;
	for (size_t i = 0; i < msgs->n; i++)
		if (grpc_stream_send(call, msgs->v[i].data, msgs->v[i].len))
			break;	/* finish tells why */
	code = grpc_stream_finish(call, &reply, st);
	grpc_buf_free(&reply);
	return code;
}

/* Sends spooled batches in order until one fails transiently. */
static void spool_send(struct agent *a)
{
	struct spool *s = &a->spool;

	while (s->head && !a->fatal) {
		struct grpc_status st;
		int code = send_batch(a, &s->head->msgs, &st);

		if (!call_failed(a, "collectProfilingData", code, &st)) {
			log_info("sent %zu profiling messages (%zu bytes)", s->head->msgs.n,
				 s->head->msgs.bytes);
			spool_pop(s);
			continue;
		}
		if (transient(code) || a->fatal)
			return;
		/* Rejected for good (e.g. INVALID_ARGUMENT): resending would not help. */
		log_warn("dropped %zu profiling messages the OAP rejected", s->head->msgs.n);
		spool_drop_oldest(s);
	}
}

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

/* Drains the profilers into one batch of messages for every running task, and sends. */
static void flush(struct agent *a)
{
	struct sw_msgs batch = { 0 };
	int64_t now = wall_ms();

	for (int k = 0; k < PROFILER_MAX; k++)
		if (a->prof[k].p)
			flush_kind(a, k, now, &batch);
	if (batch.n)
		spool_push(&a->spool, &batch);
	sw_msgs_free(&batch);
	spool_send(a);
}

/* The tests read this line: "task ID (TYPE) finished: COUNT ..." */
static void log_task_end(const struct agent *a, const struct agent_task *t, const char *how)
{
	log_info("task %s (%s) %s: %" PRIu64 " %s in %" PRIu64 " messages", t->t.task_id,
		 t->t.target_name, how, t->count, a->prof[t->kind].ops->value_types[0].type,
		 t->messages);
}

/* Starts due tasks, ends finished ones (after a last flush). */
static void tick_tasks(struct agent *a)
{
	int64_t now = wall_ms();
	bool changed[PROFILER_MAX] = { false }, stopping = false;
	size_t i;

	for (i = 0; i < a->ntasks; i++) {
		struct agent_task *t = a->tasks[i];

		if (t->state == TASK_PENDING && now >= t->t.start_time_ms) {
			t->state = TASK_RUNNING;
			t->run_start_ms = now;
			t->stop_at_ms = ms_after(now, t->t.duration_s);
			for (size_t j = 0; j < t->npids; j++)
				symbolizer_track(a->sym, t->pids[j]);
			log_info("task %s (%s) started for %" PRId64 " s", t->t.task_id, t->t.target_name,
				 t->t.duration_s);
			changed[t->kind] = true;
		} else if (t->state == TASK_RUNNING && now >= t->stop_at_ms) {
			stopping = true;
		}
	}
	if (stopping) {
		flush(a);	/* the last interval of the ending tasks */
		for (i = 0; i < a->ntasks; i++) {
			struct agent_task *t = a->tasks[i];

			if (t->state != TASK_RUNNING || now < t->stop_at_ms)
				continue;
			t->state = TASK_DONE;
			changed[t->kind] = true;
			log_task_end(a, t, "finished");
		}
	}
	for (int k = 0; k < PROFILER_MAX; k++)
		if (changed[k])
			reconfigure(a, k);
}

/* Forgets finished tasks the OAP can no longer hand out as live. */
static void prune_tasks(struct agent *a)
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

/* ---- options ---- */

enum {
	OPT_OAP = 256, OPT_TOKEN_FILE, OPT_TOKEN, OPT_EXE, OPT_CGROUP, OPT_SERVICE, OPT_INSTANCE,
	OPT_HEARTBEAT, OPT_TASK, OPT_FLUSH, OPT_REPORT_EVERY, OPT_SPOOL, OPT_DEADLINE,
	OPT_RECONNECT, OPT_PIN,
};

static const struct option agent_options[] = {
	{ "oap", required_argument, NULL, OPT_OAP },
	{ "token-file", required_argument, NULL, OPT_TOKEN_FILE },
	{ "token", required_argument, NULL, OPT_TOKEN },
	{ "pid", required_argument, NULL, 'p' },
	{ "exe-pattern", required_argument, NULL, OPT_EXE },
	{ "cgroup", required_argument, NULL, OPT_CGROUP },
	{ "service", required_argument, NULL, OPT_SERVICE },
	{ "instance", required_argument, NULL, OPT_INSTANCE },
	{ "heartbeat-interval", required_argument, NULL, OPT_HEARTBEAT },
	{ "task-interval", required_argument, NULL, OPT_TASK },
	{ "flush-interval", required_argument, NULL, OPT_FLUSH },
	{ "report-every", required_argument, NULL, OPT_REPORT_EVERY },
	{ "spool-size", required_argument, NULL, OPT_SPOOL },
	{ "deadline", required_argument, NULL, OPT_DEADLINE },
	{ "reconnect-max", required_argument, NULL, OPT_RECONNECT },
	{ "pin", required_argument, NULL, OPT_PIN },
	{ "duration", required_argument, NULL, 'd' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

static void usage(FILE *out)
{
	fprintf(out,
"Usage: aperture run --oap HOST:PORT [--pid N] [--exe-pattern GLOB] [--cgroup PATH] [OPTIONS]\n"
"Serves Apache SkyWalking OAP eBPF profiling tasks (ON_CPU, OFF_CPU) for host processes.\n\n"
"Process selection (any match; at least one):\n"
"  -p, --pid N[,N...]         these processes\n"
"      --exe-pattern GLOB     executable path or name (or comm) matches GLOB\n"
"      --cgroup PATH          in this cgroup v2 (path under /sys/fs/cgroup, or the cgroup path)\n"
"  Each option may be repeated.\n\n"
"Reporting:\n"
"      --oap HOST:PORT        the OAP's gRPC address (plaintext HTTP/2)\n"
"      --token-file FILE      authentication token (else $APERTURE_OAP_TOKEN)\n"
"      --service NAME         service name (default: the host name)\n"
"      --instance NAME        instance name (default: the process name)\n"
"      --heartbeat-interval S keepAlive period (default 20); every --report-every N-th (10)\n"
"                             heartbeat re-reports every process\n"
"      --task-interval S      queryTasks period (default 10)\n"
"      --flush-interval S     profiling data upload period (default 5)\n"
"      --spool-size BYTES     data kept while the OAP is unreachable (default 16M)\n"
"      --deadline S           per-call deadline (default 10)\n"
"      --reconnect-max S      reconnect backoff cap (default 30)\n\n"
"Profiling (each profiler's options, for the tasks it serves):\n");
	cli_profiler_help(out, CLI_KIND_OPTIONS);
	fprintf(out,
"      --pin DIR              keep both profilers loaded and pinned under DIR (bpffs): the\n"
"                             control map, target set, totals and iterators of `aperture run\n"
"                             --pin` (see the README); they survive a restart, and a restarted\n"
"                             agent takes them over. `aperture run --unpin --pin DIR` removes them\n"
"  -d, --duration S           exit after S seconds (default: run until SIGINT/SIGTERM)\n"
"  -v, --verbose              log what happens\n");
}

static bool parse_seconds(const char *what, const char *arg, uint64_t *ms)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || *end || !(v >= 0.01) || v > 86400 * 365.0) {
		log_error("%s: '%s' is not a number of seconds >= 0.01", what, arg);
		return false;
	}
	*ms = (uint64_t)(v * 1000 + 0.5);
	return true;
}

static bool parse_size(const char *what, const char *arg, uint64_t *out)
{
	char *end;
	unsigned long long v;
	int shift = 0;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (*end == 'K' || *end == 'k')
		shift = 10;
	else if (*end == 'M' || *end == 'm')
		shift = 20;
	else if (*end == 'G' || *end == 'g')
		shift = 30;
	if (shift)
		end++;
	if (errno || end == arg || *end || arg[0] == '-' || v == 0 || v > (1ull << 40) >> shift) {
		log_error("%s: '%s' is not a size (e.g. 16M)", what, arg);
		return false;
	}
	*out = (uint64_t)v << shift;
	return true;
}

/* The first line of @path, surrounding white space removed. */
static char *read_token_file(const char *path)
{
	char buf[4096], *start, *end;
	ssize_t n = read_small(path, buf, sizeof(buf));

	if (n < 0) {
		log_error("--token-file %s: %s", path, strerror((int)-n));
		return NULL;
	}
	buf[strcspn(buf, "\r\n")] = '\0';
	for (start = buf; isspace((unsigned char)*start); start++)
		;
	for (end = start + strlen(start); end > start && isspace((unsigned char)end[-1]); end--)
		;
	*end = '\0';
	if (!*start) {
		log_error("--token-file %s: empty", path);
		return NULL;
	}
	return strdup_logged(start);
}

static bool add_cgroup(struct agent_opts *o, const char *arg)
{
	static const char root[] = "/sys/fs/cgroup";
	uint64_t id;

	if (o->ncgroups == MAX_SELECT) {
		log_error("--cgroup: at most %d", MAX_SELECT);
		return false;
	}
	if (!strncmp(arg, root, sizeof(root) - 1) &&
	    (arg[sizeof(root) - 1] == '/' || arg[sizeof(root) - 1] == '\0')) {
		if (!cli_cgroup_id(arg, &id))
			return false;
		arg += sizeof(root) - 1;
		if (!*arg)
			arg = "/";
	} else if (arg[0] != '/') {
		log_error("--cgroup %s: want an absolute path", arg);
		return false;
	}
	o->cgroups[o->ncgroups++] = arg;
	return true;
}

/* Checks across options, and reads the token.  0 or an exit code. */
static int check_args(struct agent_opts *o, const char *token_file)
{
	const char *env = getenv("APERTURE_OAP_TOKEN");

	if (o->deadline_ms > 3600000 || o->backoff_max_ms > 3600000) {
		log_error("run: --deadline and --reconnect-max are at most 3600 s");
		return EXIT_USAGE;
	}
	if (!o->oap) {
		log_error("run: --oap HOST:PORT is required");
		return EXIT_USAGE;
	}
	if (!o->npids && !o->nexe && !o->ncgroups) {
		log_error("run: select processes with --pid, --exe-pattern or --cgroup");
		return EXIT_USAGE;
	}
	if (token_file) {
		o->token = read_token_file(token_file);
		if (!o->token)
			return EXIT_USAGE;
	} else if (env && *env) {
		o->token = strdup_logged(env);
		if (!o->token)
			return EXIT_RUNTIME;
	}
	return 0;
}

static int parse_with(struct agent_opts *o, int argc, char **argv, const struct cli_getopt *g)
{
	const char *token_file = NULL;
	int c, n;

	*o = (struct agent_opts){
		.heartbeat_ms = 20000, .task_ms = 10000, .flush_ms = 5000, .deadline_ms = 10000,
		.backoff_max_ms = 30000, .report_every = 10, .spool_bytes = 16u << 20,
	};
	cli_profiler_defaults(&o->prof);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, g->shorts, g->opts, NULL)) != -1) {
		bool ok = true;

		n = cli_profiler_option(CLI_KIND_OPTIONS, c, optarg, &o->prof, NULL, 0);
		if (n < 0)
			return EXIT_USAGE;
		if (n)
			continue;
		switch (c) {
		case OPT_OAP: o->oap = optarg; break;
		case OPT_PIN: o->pin_dir = optarg; break;
		case OPT_TOKEN_FILE: token_file = optarg; break;
		case OPT_TOKEN:
			log_error("--token: a token on the command line shows in ps; use --token-file FILE or APERTURE_OAP_TOKEN");
			return EXIT_USAGE;
		case 'p':
			n = cli_parse_pids(optarg, o->pids + o->npids, MAX_SELECT - o->npids);
			ok = n > 0;
			if (ok)
				o->npids += n;
			break;
		case OPT_EXE:
			ok = o->nexe < MAX_SELECT;
			if (ok)
				o->exe_patterns[o->nexe++] = optarg;
			else
				log_error("--exe-pattern: at most %d", MAX_SELECT);
			break;
		case OPT_CGROUP: ok = add_cgroup(o, optarg); break;
		case OPT_SERVICE: o->service = optarg; break;
		case OPT_INSTANCE: o->instance = optarg; break;
		case OPT_HEARTBEAT: ok = parse_seconds("--heartbeat-interval", optarg, &o->heartbeat_ms); break;
		case OPT_TASK: ok = parse_seconds("--task-interval", optarg, &o->task_ms); break;
		case OPT_FLUSH: ok = parse_seconds("--flush-interval", optarg, &o->flush_ms); break;
		case OPT_DEADLINE: ok = parse_seconds("--deadline", optarg, &o->deadline_ms); break;
		case OPT_RECONNECT: ok = parse_seconds("--reconnect-max", optarg, &o->backoff_max_ms); break;
		case OPT_REPORT_EVERY: ok = cli_parse_u64("--report-every", optarg, 1, 1000000, &o->report_every); break;
		case OPT_SPOOL: ok = parse_size("--spool-size", optarg, &o->spool_bytes); break;
		case 'd': ok = cli_parse_u64("-d", optarg, 1, 365ull * 86400, &o->duration_s); break;
		case 'v': log_verbose++; break;
		case 'h': usage(stdout); return -1;
		default:
			log_error("run: unknown or incomplete option '%s' (try aperture run --help)", argv[optind - 1]);
			return EXIT_USAGE;
		}
		if (!ok)
			return EXIT_USAGE;
	}
	if (optind < argc) {
		log_error("run: unexpected argument '%s'", argv[optind]);
		return EXIT_USAGE;
	}
	if (!cli_profiler_check(&o->prof))
		return EXIT_USAGE;
	return check_args(o, token_file);
}

/* Returns 0 to go on, -1 after --help, or an exit code. */
static int parse_args(struct agent_opts *o, int argc, char **argv)
{
	struct cli_getopt g;
	int err = EXIT_RUNTIME;

	if (cli_getopt_build(&g, "+p:d:vh", agent_options, CLI_KIND_OPTIONS))
		err = parse_with(o, argc, argv, &g);
	cli_getopt_free(&g);
	return err;
}

/* ---- the daemon ---- */

static void host_identity(struct agent *a)
{
	struct ifaddrs *ifs, *i;

	if (gethostname(a->hostname, sizeof(a->hostname) - 1) || !a->hostname[0])
		snprintf(a->hostname, sizeof(a->hostname), "localhost");
	snprintf(a->host_ip, sizeof(a->host_ip), "127.0.0.1");
	if (getifaddrs(&ifs))
		return;
	for (i = ifs; i; i = i->ifa_next) {
		const struct sockaddr_in *sin = (const void *)i->ifa_addr;

		if (!sin || sin->sin_family != AF_INET || !strcmp(i->ifa_name, "lo") ||
		    ntohl(sin->sin_addr.s_addr) >> 24 == 127)
			continue;
		inet_ntop(AF_INET, &sin->sin_addr, a->host_ip, sizeof(a->host_ip));
		break;
	}
	freeifaddrs(ifs);
}

static void consume_events(struct agent *a)
{
	for (int k = 0; k < PROFILER_MAX; k++)
		if (a->prof[k].events)
			ring_buffer__consume(a->prof[k].events);
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
		if (now >= next_heartbeat) {
			heartbeat(a);
			next_heartbeat = next_tick(next_heartbeat, a->o.heartbeat_ms, now);
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
			next_flush = next_tick(next_flush, a->o.flush_ms, now);
		}
		consume_events(a);
		/* Short naps: task start and stop times are checked every 100 ms at most. */
		wake = min_u64(min_u64(next_heartbeat, next_query), min_u64(next_flush, end));
		now = now_ns(CLOCK_MONOTONIC);
		if (wake > now)
			usleep((useconds_t)(min_u64(wake - now, 100 * MS) / 1000));
	}
	if (cli_stop)
		log_warn("stopping: sending the last data (a second Ctrl-C quits at once)");
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
	if (a->spool.head) {
		size_t pending = 0;

		for (struct spool_batch *b = a->spool.head; b; b = b->next)
			pending += b->msgs.n;
		log_warn("%zu profiling messages (%zu bytes) could not be sent to %s", pending,
			 a->spool.bytes, a->o.oap);
	}
	if (a->spool.dropped_msgs)
		log_warn("%" PRIu64 " profiling messages (%" PRIu64 " bytes) were dropped: the spool was full",
			 a->spool.dropped_msgs, a->spool.dropped_bytes);
}

static void agent_free(struct agent *a)
{
	for (int k = 0; k < PROFILER_MAX; k++)
		prof_close(&a->prof[k]);
	if (a->o.pin_dir)
		profiler_shared_close(&a->shared);
	while (a->spool.head)
		spool_pop(&a->spool);
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

int agent_main(int argc, char **argv)
{
	struct agent a = { 0 };
	struct grpc_opts gopts = { 0 };
	int err;

	profiler_shared_init(&a.shared);
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
	sw_uuid(a.agent_id);
	host_identity(&a);
	gopts.target = a.o.oap;
	gopts.cancel = &cli_abort;	/* a second Ctrl-C does not wait for deadlines */
	gopts.token = a.o.token;
	gopts.backoff_max_ms = (unsigned int)a.o.backoff_max_ms;
	gopts.backoff_initial_ms = (unsigned int)min_u64(1000, a.o.backoff_max_ms);
	a.ch = grpc_channel_new(&gopts);
	a.sym = symbolizer_new();
	if (!a.ch || !a.sym)
		goto out;
	if (a.o.pin_dir && open_pinned(&a))
		goto out;
	log_info("agent %s on %s (%s), OAP %s%s", a.agent_id, a.hostname, a.host_ip, a.o.oap,
		 a.o.token ? ", with a token" : "");
	agent_loop(&a);
	agent_shutdown(&a);
	err = a.fatal ? EXIT_RUNTIME : 0;
out:
	agent_free(&a);
	return err;
}
