// SPDX-License-Identifier: GPL-2.0
/* --jvm-perfmap: finds the JVMs among the targets and asks each for its perf map (jvm_perfmap.h). */
#include <ctype.h>
#include <errno.h>
#include <dirent.h>
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
#define ATTACH_TIMEOUT_MS 3000
#define ROUND_BUDGET_NS	 (5 * 1000000000ull)	/* a round stops asking after this: the record loop waits */
#define MAX_TIMEOUTS	 3	/* a JVM that timed out this many times in a row is not asked again */
#define EARLY_ROUNDS	 5	/* the first rounds a second apart: a JVM just started compiles its hot code */
#define EARLY_EVERY_NS	 1000000000ull

struct jvm {
	uint32_t pid;
	uint64_t start_time;	/* with the pid: this process, not a later one */
	bool answered;
	unsigned int timeouts;	/* in a row: each held the record loop */
	char why[200];		/* the last failure, reported at the end when it never answered */
};

struct jvm_perfmap {
	uint64_t interval_ns, next_ns;
	const uint32_t *pids;
	int npids;
	struct jvm jvms[MAX_JVMS];
	unsigned int njvms, skipped;
	unsigned int rounds, rounds_cut;	/* rounds_cut: out of ROUND_BUDGET_NS */
};

struct jvm_perfmap *jvm_perfmap_new(unsigned int interval_s, const uint32_t *pids, int npids)
{
	struct jvm_perfmap *jp = calloc_logged(1, sizeof(*jp));

	if (!jp)
		return NULL;
	jp->interval_ns = interval_s * 1000000000ull;
	jp->pids = pids;
	jp->npids = npids;
	return jp;
}

void jvm_perfmap_free(struct jvm_perfmap *jp)
{
	free(jp);
}

/* Whether @pid is a target: any process without -p, else a named one or a descendant of one. */
static bool is_target(const struct jvm_perfmap *jp, uint32_t pid)
{
	if (!jp->npids)
		return true;
	for (int depth = 0; pid > 1 && depth < MAX_DEPTH; depth++, pid = proc_parent(pid))
		for (int i = 0; i < jp->npids; i++)
			if (jp->pids[i] == pid)
				return true;
	return false;
}

static struct jvm *jvm_slot(struct jvm_perfmap *jp, uint32_t pid, uint64_t start_time)
{
	for (unsigned int i = 0; i < jp->njvms; i++)
		if (jp->jvms[i].pid == pid && jp->jvms[i].start_time == start_time)
			return &jp->jvms[i];
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

	if (!start_time || !jvm_maps_libjvm(pid) || !(j = jvm_slot(jp, pid, start_time)) ||
	    j->timeouts >= MAX_TIMEOUTS)
		return;
	err = jvm_request_perfmap(pid, ATTACH_TIMEOUT_MS, why, sizeof(why));
	if (!err) {
		if (!j->answered)
			log_info("jvm pid %u: perf map written", pid);
		j->answered = true;
		j->timeouts = 0;
		return;
	}
	snprintf(j->why, sizeof(j->why), "%s", why);
	j->timeouts = err == -ETIMEDOUT ? j->timeouts + 1 : 0;
	if (j->timeouts == MAX_TIMEOUTS)
		log_info("jvm pid %u: not asked again (%d timeouts in a row)", pid, MAX_TIMEOUTS);
}

void jvm_perfmap_tick(struct jvm_perfmap *jp)
{
	uint64_t now = now_ns(CLOCK_MONOTONIC);
	uint32_t self = (uint32_t)getpid();
	struct dirent *d;
	DIR *proc;

	if (now < jp->next_ns)
		return;
	jp->next_ns = now + (++jp->rounds < EARLY_ROUNDS && jp->interval_ns > EARLY_EVERY_NS ?
			     EARLY_EVERY_NS : jp->interval_ns);
	proc = opendir("/proc");
	if (!proc)
		return;
	while ((d = readdir(proc))) {
		uint32_t pid;

		if (!isdigit((unsigned char)d->d_name[0]))
			continue;
		pid = (uint32_t)strtoul(d->d_name, NULL, 10);
		if (now_ns(CLOCK_MONOTONIC) - now > ROUND_BUDGET_NS) {
			jp->rounds_cut++;
			break;
		}
		if (pid != self && is_target(jp, pid))
			ask(jp, pid);
	}
	closedir(proc);
}

void jvm_perfmap_report(const struct jvm_perfmap *jp, FILE *out)
{
	unsigned int answered = 0;

	for (unsigned int i = 0; i < jp->njvms; i++) {
		const struct jvm *j = &jp->jvms[i];

		answered += j->answered;
		if (!j->answered)
			log_warn("--jvm-perfmap: pid %u: perf map not written: %s", j->pid, j->why);
	}
	fprintf(out, "aperture: jvm perf maps: %u JVM%s asked, %u answered", jp->njvms, jp->njvms == 1 ? "" : "s",
		answered);
	if (jp->skipped)
		fprintf(out, ", %u asks skipped (over %d JVMs)", jp->skipped, MAX_JVMS);
	if (jp->rounds_cut)
		fprintf(out, ", %u round%s cut short after 5 s", jp->rounds_cut, jp->rounds_cut == 1 ? "" : "s");
	fputc('\n', out);
}
