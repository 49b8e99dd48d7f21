// SPDX-License-Identifier: GPL-2.0
/*
 * Asks the JVMs among the targets for their perf maps (--jvm-perfmap), on a thread of its own.
 * An ask holds until the JVM answers (up to the attach timeouts, seconds for a JVM that
 * starts its listener or a process that listens and never answers): on the record or daemon
 * loop it would hold the draining and the events.  The thread owns the asking; what the loops
 * read (the summary) and set (the targets, the stop) is behind one lock.
 */
#include <ctype.h>
#include <errno.h>
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "jvm_attach.h"
#include "jvm_perfmap.h"
#include "procmaps.h"
#include "util.h"

#define MAX_JVMS	 64	/* JVMs asked per run; more are counted, not asked */
#define MAX_DEPTH	 64	/* parents walked to find a named ancestor */
#define MAX_PROCS	 (1u << 22)	/* the ppid table's bound (pid_max's own) */
#define ATTACH_TIMEOUT_MS 3000
#define ROUND_BUDGET_NS	 (5 * 1000000000ull)	/* a round stops asking after this; the next one goes on */
#define MAX_TIMEOUTS	 3	/* a JVM that timed out this many times in a row is not asked again */
#define EARLY_ROUNDS	 5	/* the first rounds a second apart: a JVM just started compiles its hot code */
#define EARLY_EVERY_NS	 1000000000ull

struct jvm {
	uint32_t pid;
	uint64_t start_time;	/* with the pid: this process, not a later one */
	bool answered;
	unsigned int timeouts;	/* in a row */
	char why[200];		/* the last failure, reported at the end when it never answered */
};

struct jvm_perfmap {
	uint64_t interval_ns;
	pthread_t worker;
	bool started;
	pthread_mutex_t lock;	/* everything below */
	pthread_cond_t wake;	/* CLOCK_MONOTONIC: a stop or new targets */
	bool stop;
	uint64_t next_ns;	/* the next round, CLOCK_MONOTONIC */
	bool every;		/* every process is a target (record and run without -p) */
	uint32_t *pids;		/* else these and their descendants: the worker takes a copy at each round */
	int npids;
	struct jvm jvms[MAX_JVMS];
	unsigned int njvms, skipped;
	unsigned int rounds, rounds_cut;	/* rounds_cut: out of ROUND_BUDGET_NS */
};

static bool stopping(struct jvm_perfmap *jp)
{
	bool stop;

	pthread_mutex_lock(&jp->lock);
	stop = jp->stop;
	pthread_mutex_unlock(&jp->lock);
	return stop;
}

/* A round's targets: the worker's copy. */
struct targets {
	bool every;
	uint32_t *pids;
	int npids, cap;
};

/* A round's view of the process tree: each process's parent, read once, sorted by pid. */
struct ppid_table {
	struct ppid { uint32_t pid, ppid; } *v;
	size_t n, cap;
};

static int ppid_cmp(const void *a, const void *b)
{
	uint32_t x = ((const struct ppid *)a)->pid, y = ((const struct ppid *)b)->pid;

	return x < y ? -1 : x > y;
}

/* 0 when @pid was not in /proc at the round's start (or has no parent). */
static uint32_t ppid_of(const struct ppid_table *t, uint32_t pid)
{
	struct ppid key = { .pid = pid }, *found = t->n ? bsearch(&key, t->v, t->n, sizeof(*t->v), ppid_cmp) : NULL;

	return found ? found->ppid : 0;
}

/*
 * Each process's parent, one /proc/PID/stat read each: the descendants of the targets are found
 * in this table, not by reading each process's ancestors again for every process.
 */
static void ppid_read(struct ppid_table *t)
{
	struct dirent *d;
	DIR *proc = opendir("/proc");

	t->n = 0;
	while (proc && (d = readdir(proc)) && t->n < MAX_PROCS) {
		uint32_t pid;

		if (!isdigit((unsigned char)d->d_name[0]))
			continue;
		pid = (uint32_t)strtoul(d->d_name, NULL, 10);
		if (array_reserve((void **)&t->v, &t->cap, t->n, sizeof(*t->v), 256))
			break;	/* out of memory: the processes not read are not targets this round */
		t->v[t->n++] = (struct ppid){ .pid = pid, .ppid = proc_parent(pid) };
	}
	if (proc)
		closedir(proc);
	if (t->n)
		qsort(t->v, t->n, sizeof(*t->v), ppid_cmp);
}

/* Whether @pid is a target: any process with every, else a named one or a descendant of one. */
static bool is_target(const struct targets *tg, const struct ppid_table *t, uint32_t pid)
{
	if (tg->every)
		return true;
	for (int depth = 0; pid > 1 && depth < MAX_DEPTH; depth++, pid = ppid_of(t, pid))
		for (int i = 0; i < tg->npids; i++)
			if (tg->pids[i] == pid)
				return true;
	return false;
}

/* The JVM's slot, added when new; NULL when over MAX_JVMS or given up on.  Under the lock. */
static struct jvm *jvm_slot(struct jvm_perfmap *jp, uint32_t pid, uint64_t start_time)
{
	for (unsigned int i = 0; i < jp->njvms; i++)
		if (jp->jvms[i].pid == pid && jp->jvms[i].start_time == start_time)
			return jp->jvms[i].timeouts >= MAX_TIMEOUTS ? NULL : &jp->jvms[i];
	if (jp->njvms == MAX_JVMS) {
		if (!jp->skipped++)
			log_warn("--jvm-perfmap: more than %d JVMs: the others are not asked", MAX_JVMS);
		return NULL;
	}
	jp->jvms[jp->njvms] = (struct jvm){ .pid = pid, .start_time = start_time };
	return &jp->jvms[jp->njvms++];
}

static void ask(struct jvm_perfmap *jp, uint32_t pid)
{
	uint64_t start_time = proc_start_time(pid);
	struct jvm *j;
	char why[200];
	int err;

	if (!start_time || !jvm_maps_libjvm(pid))
		return;
	pthread_mutex_lock(&jp->lock);
	j = jvm_slot(jp, pid, start_time);
	pthread_mutex_unlock(&jp->lock);
	if (!j)
		return;
	/* The slot stays where it is: only this thread adds slots, and none is removed. */
	err = jvm_request_perfmap(pid, ATTACH_TIMEOUT_MS, why, sizeof(why));
	pthread_mutex_lock(&jp->lock);
	if (!err) {
		if (!j->answered)
			log_info("jvm pid %u: perf map written", pid);
		j->answered = true;
		j->timeouts = 0;
	} else {
		snprintf(j->why, sizeof(j->why), "%s", why);
		j->timeouts = err == -ETIMEDOUT ? j->timeouts + 1 : 0;
		if (j->timeouts == MAX_TIMEOUTS)
			log_info("jvm pid %u: not asked again (%d timeouts in a row)", pid, MAX_TIMEOUTS);
	}
	pthread_mutex_unlock(&jp->lock);
}

/* One round over the processes: each target that maps libjvm.so is asked, until the budget or a stop. */
static void round_ask(struct jvm_perfmap *jp, const struct targets *tg, struct ppid_table *t)
{
	uint64_t start = now_ns(CLOCK_MONOTONIC);
	uint32_t self = (uint32_t)getpid();

	if (!tg->every && !tg->npids)
		return;		/* no target (the agent between tasks): nothing to read */
	ppid_read(t);
	for (size_t i = 0; i < t->n && !stopping(jp); i++) {
		if (now_ns(CLOCK_MONOTONIC) - start > ROUND_BUDGET_NS) {
			pthread_mutex_lock(&jp->lock);
			jp->rounds_cut++;
			pthread_mutex_unlock(&jp->lock);
			break;
		}
		if (t->v[i].pid != self && is_target(tg, t, t->v[i].pid))
			ask(jp, t->v[i].pid);
	}
}

/*
 * Waits for the next round (or a stop: false) and takes a copy of the targets into @pids
 * (@cap entries, grown).  Under the lock until the wait ends.
 */
static bool wait_round(struct jvm_perfmap *jp, struct targets *tg)
{
	bool go;

	pthread_mutex_lock(&jp->lock);
	while (!jp->stop) {
		uint64_t now = now_ns(CLOCK_MONOTONIC);
		struct timespec until;

		if (now >= jp->next_ns)
			break;
		until.tv_sec = (time_t)(jp->next_ns / 1000000000ull);
		until.tv_nsec = (long)(jp->next_ns % 1000000000ull);
		pthread_cond_timedwait(&jp->wake, &jp->lock, &until);
	}
	go = !jp->stop;
	if (go && jp->npids > tg->cap) {
		uint32_t *grown = realloc(tg->pids, (size_t)jp->npids * sizeof(*tg->pids));

		if (grown) {
			tg->pids = grown;
			tg->cap = jp->npids;
		}
	}
	if (go && jp->npids <= tg->cap) {
		if (jp->npids)
			memcpy(tg->pids, jp->pids, (size_t)jp->npids * sizeof(*tg->pids));
		tg->npids = jp->npids;
		tg->every = jp->every;
	}	/* else out of memory: the last targets are asked again */
	if (go)
		jp->next_ns = now_ns(CLOCK_MONOTONIC) +
			      (++jp->rounds < EARLY_ROUNDS && jp->interval_ns > EARLY_EVERY_NS ?
			       EARLY_EVERY_NS : jp->interval_ns);
	pthread_mutex_unlock(&jp->lock);
	return go;
}

static void *worker_main(void *arg)
{
	struct jvm_perfmap *jp = arg;
	struct targets tg = { .every = false };
	struct ppid_table t = { .v = NULL };

	while (wait_round(jp, &tg))
		round_ask(jp, &tg, &t);
	free(tg.pids);
	free(t.v);
	return NULL;
}

static int set_targets(struct jvm_perfmap *jp, const uint32_t *pids, int npids, bool every)
{
	uint32_t *copy = NULL;

	if (npids && !(copy = calloc_logged((size_t)npids, sizeof(*copy))))
		return -ENOMEM;
	if (npids)
		memcpy(copy, pids, (size_t)npids * sizeof(*copy));
	pthread_mutex_lock(&jp->lock);
	free(jp->pids);
	jp->pids = copy;
	jp->npids = npids;
	jp->every = every;
	jp->next_ns = 0;	/* new targets are asked at once */
	pthread_cond_signal(&jp->wake);
	pthread_mutex_unlock(&jp->lock);
	return 0;
}

int jvm_perfmap_set_targets(struct jvm_perfmap *jp, const uint32_t *pids, int npids)
{
	return set_targets(jp, pids, npids, npids == 0);
}

int jvm_perfmap_set_only(struct jvm_perfmap *jp, const uint32_t *pids, int npids)
{
	return set_targets(jp, pids, npids, false);
}

/* The worker takes no signal: the loops' handlers must wake the loops, not this thread. */
static int start_worker(struct jvm_perfmap *jp)
{
	int err = thread_start(&jp->worker, worker_main, jp);

	if (err)
		return err;
	jp->started = true;
	return 0;
}

struct jvm_perfmap *jvm_perfmap_start(unsigned int interval_s, const uint32_t *pids, int npids, bool only)
{
	struct jvm_perfmap *jp = calloc_logged(1, sizeof(*jp));
	pthread_condattr_t attr;
	int err;

	if (!jp)
		return NULL;
	jp->interval_ns = interval_s * 1000000000ull;
	pthread_mutex_init(&jp->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&jp->wake, &attr);
	pthread_condattr_destroy(&attr);
	err = set_targets(jp, pids, npids, !only && npids == 0);
	if (!err)
		err = start_worker(jp);
	if (err) {
		log_error("--jvm-perfmap: cannot start the asking thread: %s", strerror(-err));
		jvm_perfmap_free(jp);
		return NULL;
	}
	return jp;
}

void jvm_perfmap_stop(struct jvm_perfmap *jp)
{
	if (!jp || !jp->started)
		return;
	pthread_mutex_lock(&jp->lock);
	jp->stop = true;
	pthread_cond_signal(&jp->wake);
	pthread_mutex_unlock(&jp->lock);
	pthread_join(jp->worker, NULL);
	jp->started = false;
}

void jvm_perfmap_free(struct jvm_perfmap *jp)
{
	if (!jp)
		return;
	jvm_perfmap_stop(jp);
	pthread_mutex_destroy(&jp->lock);
	pthread_cond_destroy(&jp->wake);
	free(jp->pids);
	free(jp);
}

void jvm_perfmap_summary(struct jvm_perfmap *jp, char *buf, size_t len)
{
	unsigned int answered = 0;
	size_t used;

	pthread_mutex_lock(&jp->lock);
	for (unsigned int i = 0; i < jp->njvms; i++)
		answered += jp->jvms[i].answered;
	used = (size_t)snprintf(buf, len, "jvm perf maps: %u JVM%s asked, %u answered", jp->njvms,
				jp->njvms == 1 ? "" : "s", answered);
	if (jp->skipped && used < len)
		used += (size_t)snprintf(buf + used, len - used, ", %u asks skipped (over %d JVMs)", jp->skipped,
					 MAX_JVMS);
	if (jp->rounds_cut && used < len)
		snprintf(buf + used, len - used, ", %u round%s cut short after 5 s", jp->rounds_cut,
			 jp->rounds_cut == 1 ? "" : "s");
	pthread_mutex_unlock(&jp->lock);
}

void jvm_perfmap_report(struct jvm_perfmap *jp)
{
	char summary[256];

	pthread_mutex_lock(&jp->lock);	/* the warnings: JVMs that never answered */
	for (unsigned int i = 0; i < jp->njvms; i++) {
		const struct jvm *j = &jp->jvms[i];

		if (!j->answered)
			log_warn("--jvm-perfmap: pid %u: perf map not written: %s", j->pid, j->why);
	}
	pthread_mutex_unlock(&jp->lock);
	jvm_perfmap_summary(jp, summary, sizeof(summary));
	log_notice("%s", summary);
}
