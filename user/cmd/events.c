// SPDX-License-Identifier: GPL-2.0
/* aperture events: reads what `record --events FILE` wrote (events.h). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bincode.h"
#include "cli.h"
#include "events.h"
#include "util.h"

struct pid_count {
	int32_t pid;
	char comm[32];
	uint64_t total, kinds[PE_KINDS];
};

struct summary {
	uint64_t kinds[PE_KINDS];
	struct pid_count *pids;
	size_t n, cap;
	size_t last;		/* the previous record's pid: runs of one pid are the common case */
};

static const char *event_comm(const struct profile_event *e)
{
	switch (e->kind) {
	case PE_CPU_SAMPLE: return e->cpu.comm;
	case PE_LOCK: return e->lock.comm;
	case PE_SYSCALL: return e->sys.comm;
	default: return NULL;
	}
}

static int summary_add(struct summary *s, const struct profile_event *e)
{
	int32_t pid = pe_pid(e);
	const char *comm = event_comm(e);
	struct pid_count *pc = NULL;

	s->kinds[e->kind]++;
	if (s->last < s->n && s->pids[s->last].pid == pid)
		pc = &s->pids[s->last];
	for (size_t i = 0; !pc && i < s->n; i++)
		if (s->pids[i].pid == pid)
			pc = &s->pids[s->last = i];
	if (!pc) {
		if (s->n == s->cap) {
			size_t cap = s->cap ? 2 * s->cap : 64;
			struct pid_count *p = realloc(s->pids, cap * sizeof(*p));

			if (!p)
				return -1;
			s->pids = p;
			s->cap = cap;
		}
		pc = &s->pids[s->last = s->n++];
		memset(pc, 0, sizeof(*pc));
		pc->pid = pid;
	}
	if (!pc->comm[0] && comm)
		snprintf(pc->comm, sizeof(pc->comm), "%s", comm);
	pc->total++;
	pc->kinds[e->kind]++;
	return 0;
}

static int by_total(const void *a, const void *b)
{
	const struct pid_count *x = a, *y = b;

	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* records N / kind NAME N / pid PID total N NAME=N... comm=COMM, busiest pid first. */
static void summary_print(FILE *out, struct summary *s, uint64_t records)
{
	fprintf(out, "records %llu\n", (unsigned long long)records);
	for (int k = 0; k < PE_KINDS; k++)
		fprintf(out, "kind %s %llu\n", pe_kind_name(k), (unsigned long long)s->kinds[k]);
	if (s->n > 1)	/* s->pids is NULL in a file without records, and qsort's base must not be */
		qsort(s->pids, s->n, sizeof(*s->pids), by_total);
	for (size_t i = 0; i < s->n; i++) {
		fprintf(out, "pid %d total %llu", s->pids[i].pid, (unsigned long long)s->pids[i].total);
		for (int k = 0; k < PE_KINDS; k++)
			if (s->pids[i].kinds[k])
				fprintf(out, " %s=%llu", pe_kind_name(k),
					(unsigned long long)s->pids[i].kinds[k]);
		fprintf(out, " comm=%s\n", s->pids[i].comm);
	}
}

static void usage(FILE *out)
{
	fprintf(out, "Usage: aperture events FILE [--json | --summary]\n\n"
		"Decodes a raw event stream written by `aperture record --events FILE`: the seed's\n"
		"ProfileEvent records (bincode, fixint little endian, each after its u32 length).\n"
		"  --json     one JSON object a line, {\"Kind\":{fields}} (the default)\n"
		"  --summary  records per kind and per pid\n");
}

int events_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "summary", no_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct summary sum = { 0 };
	struct profile_event e;
	struct pe_reader r;
	bool summary = false;
	char err[512];
	FILE *f;
	int c, rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'j': summary = false; break;
		case 's': summary = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		log_error("events: one FILE expected (aperture events --help)");
		return EXIT_USAGE;
	}
	f = strcmp(argv[optind], "-") ? fopen(argv[optind], "rb") : stdin;
	if (!f) {
		log_error("events: %s: %s", argv[optind], strerror(errno));
		return EXIT_RUNTIME;
	}
	pe_reader_init(&r, f);
	while ((rc = pe_read(&r, &e, err, sizeof(err))) > 0) {
		if (summary)
			rc = summary_add(&sum, &e) < 0 ? -2 : 1;
		else
			pe_print_json(stdout, &e);
		pe_free(&e);
		if (rc < 0)
			break;
	}
	if (rc == -2)
		snprintf(err, sizeof(err), "out of memory");
	if (rc == 0 && ferror(f)) {
		snprintf(err, sizeof(err), "read error at byte %llu: %s", (unsigned long long)r.offset,
			 strerror(errno));
		rc = -1;
	}
	if (summary && rc == 0)
		summary_print(stdout, &sum, r.count);
	fflush(stdout);
	if (rc < 0)
		log_error("events: %s: %s", argv[optind], err);
	free(sum.pids);
	pe_reader_free(&r);
	if (f != stdin)
		fclose(f);
	return rc < 0 ? EXIT_RUNTIME : 0;
}
