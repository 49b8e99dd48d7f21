// SPDX-License-Identifier: GPL-2.0
/*
 * Syscall profiler: owns the syscalls skeleton (bpf/events/syscalls.bpf.c).
 * The kernel keeps per (process, syscall, errno) counts and a log2 latency
 * histogram; this file names syscalls from the kernel headers' table and
 * prints the report: top calls by total time or count, each with its
 * histogram, and errors by errno name.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "profile_event.h"
#include "numparse.h"
#include "profiler.h"
#include "syscall_names.h"
#include "syscalls.h"
#include "syscalls.skel.h"
#include "util.h"

#define NSYSCALLS (sizeof(syscall_names) / sizeof(syscall_names[0]))
#define MAX_ERRNO 4096

_Static_assert(sizeof(struct syscalls_config) <= PROFILER_CONFIG_MAX, "syscalls_config too big");

/* The report's totals for one syscall over the whole run. */
struct syscall_total {
	struct syscalls_value sum;	/* max_ns is a max */
	uint64_t *errors_by_errno;	/* MAX_ERRNO slots, allocated on the first error */
};

struct syscalls_priv {
	struct syscall_total *calls;	/* by syscall number, NSYSCALLS of them */
	bool sort_by_count;		/* copied from the options at open */
	bool errors;
};

/* User-space options that do not reach the kernel live beside the config (same blob). */
struct syscalls_options {
	struct syscalls_config bpf;
	uint32_t sort_by_count;
	uint32_t errors;
};

_Static_assert(sizeof(struct syscalls_options) <= PROFILER_CONFIG_MAX, "syscalls_options too big");

static const char *syscall_name(uint32_t nr, char *buf, size_t len)
{
	if (nr < NSYSCALLS && syscall_names[nr])
		return syscall_names[nr];
	snprintf(buf, len, "syscall_%u", nr);
	return buf;
}

static int syscall_number(const char *name)
{
	char *end;
	unsigned long nr = strtoul(name, &end, 10);

	if (*name && !*end)
		return nr < 1024 ? (int)nr : -1;
	for (size_t i = 0; i < NSYSCALLS; i++)
		if (syscall_names[i] && strcmp(syscall_names[i], name) == 0)
			return (int)i;
	return -1;
}

static int syscalls_open(struct profiler *p, const struct profiler_opts *o)
{
	const struct syscalls_options *so = profiler_config(o, p->ops);
	struct syscalls_priv *priv = calloc_logged(1, sizeof(*priv));

	if (!priv)
		return -ENOMEM;
	priv->calls = calloc_logged(NSYSCALLS, sizeof(*priv->calls));
	if (!priv->calls) {
		free(priv);
		return -ENOMEM;
	}
	priv->sort_by_count = so->sort_by_count;
	priv->errors = so->errors;
	p->priv = priv;
	/* The not-target note needs every fork counted (bpf/events/syscalls.bpf.c). */
	return PROFILER_OPEN_SKEL_PREPARED(p, syscalls, ({
		__skel->rodata->forks_counted = feature_has(FEAT_TP_SCHED_FORK);
		bpf_program__set_autoload(__skel->progs.syscall_fork, __skel->rodata->forks_counted);
	}));
}

static void syscalls_close(struct profiler *p)
{
	struct syscalls_priv *priv = p->priv;

	syscalls_bpf__destroy(p->skel);
	for (size_t i = 0; priv && i < NSYSCALLS; i++)
		free(priv->calls[i].errors_by_errno);
	if (priv)
		free(priv->calls);
	free(priv);
}

/* { calls, total ns, max, errors, histogram } -> { calls, latency ns } */
static void syscalls_to_values(const struct profiler *p, const uint64_t *raw, uint64_t *values)
{
	values[0] = raw[0];
	values[1] = raw[1];
}

/* The leaf frame: "read", or "close:EBADF" for the failed calls. */
static char *syscalls_object_name(const struct profile *prof, const struct profile_sample *s,
				  const uint64_t *raw, const char *known)
{
	uint32_t nr = (uint32_t)s->object, err = (uint32_t)(s->object >> 32);
	const char *errname = err ? strerrorname_np((int)err) : NULL;
	char buf[32], *name = NULL;

	if (asprintf(&name, "%s%s%s", syscall_name(nr, buf, sizeof(buf)), err ? ":" : "",
		     err ? (errname ?: "E?") : "") < 0)
		return NULL;
	return name;
}

/* Adds every drained record into the run's per-syscall totals (histograms included). */
static void syscalls_on_record(struct profiler *p, const struct raw_record *rec)
{
	struct syscalls_priv *priv = p->priv;
	const struct syscalls_value *v = (const void *)rec->values;
	uint32_t nr = (uint32_t)rec->key->object, err = (uint32_t)(rec->key->object >> 32);
	struct syscall_total *t;

	if (!priv || nr >= NSYSCALLS)
		return;
	t = &priv->calls[nr];
	t->sum.calls += v->calls;
	t->sum.total_ns += v->total_ns;
	t->sum.errors += v->errors;
	if (v->max_ns > t->sum.max_ns)
		t->sum.max_ns = v->max_ns;
	for (int i = 0; i < SYSCALL_HIST_SLOTS; i++)
		t->sum.hist[i] += v->hist[i];
	if (!err || err >= MAX_ERRNO)
		return;
	if (!t->errors_by_errno)
		t->errors_by_errno = calloc(MAX_ERRNO, sizeof(uint64_t));
	if (t->errors_by_errno)
		t->errors_by_errno[err] += v->errors;
}

/* 16777216 -> "16ms" (powers of two, in the unit that keeps them short). */
static const char *human_ns(uint64_t ns, char *buf, size_t len)
{
	static const char *const units[] = { "ns", "us", "ms", "s" };
	int u = 0;

	while (u < 3 && ns >= 1024 * 10) {
		ns /= 1000;
		u++;
	}
	snprintf(buf, len, "%" PRIu64 "%s", ns, units[u]);
	return buf;
}

static void print_histogram(const struct syscalls_value *v, FILE *out)
{
	uint64_t most = 0;
	int lo = SYSCALL_HIST_SLOTS, hi = -1;

	for (int i = 0; i < SYSCALL_HIST_SLOTS; i++) {
		if (!v->hist[i])
			continue;
		lo = i < lo ? i : lo;
		hi = i;
		most = v->hist[i] > most ? v->hist[i] : most;
	}
	for (int i = lo; i <= hi; i++) {
		int bar = (int)(v->hist[i] * 40 / most);

		char lo_s[16], hi_s[16];

		fprintf(out, "      %8s .. %-8s %10" PRIu64 " |%.*s%*s|\n",
			human_ns(i ? (uint64_t)1 << i : 0, lo_s, sizeof(lo_s)),
			human_ns((uint64_t)1 << (i + 1), hi_s, sizeof(hi_s)), (uint64_t)v->hist[i], bar,
			"****************************************", 40 - bar, "");
	}
}

static void print_errors(const struct syscall_total *t, FILE *out)
{
	for (int e = 1; t->errors_by_errno && e < MAX_ERRNO; e++)
		if (t->errors_by_errno[e])
			fprintf(out, "      %-12s %10" PRIu64 "\n", strerrorname_np(e) ?: "E?", t->errors_by_errno[e]);
}

static uint64_t sort_key(const struct syscalls_priv *priv, uint32_t nr)
{
	return priv->sort_by_count ? priv->calls[nr].sum.calls : priv->calls[nr].sum.total_ns;
}

/* The top @top syscalls, each with its histogram (and its errors with --syscall-errors). */
static void syscalls_report(struct profiler *p, const struct profile *prof, unsigned int top, FILE *out)
{
	struct syscalls_priv *priv = p->priv;
	char buf[32];
	bool *shown;

	if (!priv || !top || !(shown = calloc(NSYSCALLS, sizeof(*shown))))
		return;
	fprintf(out, "Syscalls: top %u by %s\n  %-20s %10s %8s %12s %10s %10s\n", top,
		priv->sort_by_count ? "count" : "total time", "syscall", "calls", "errors", "total ms",
		"avg us", "max us");
	for (unsigned int n = 0; n < top; n++) {
		int best = -1;

		for (size_t nr = 0; nr < NSYSCALLS; nr++)
			if (!shown[nr] && priv->calls[nr].sum.calls &&
			    (best < 0 || sort_key(priv, nr) > sort_key(priv, best)))
				best = (int)nr;
		if (best < 0)
			break;
		shown[best] = true;
		const struct syscalls_value *v = &priv->calls[best].sum;

		fprintf(out, "  %-20s %10" PRIu64 " %8" PRIu64 " %12.3f %10.3f %10.3f\n",
			syscall_name(best, buf, sizeof(buf)), (uint64_t)v->calls, (uint64_t)v->errors, v->total_ns / 1e6,
			v->total_ns / 1e3 / v->calls, v->max_ns / 1e3);
		print_histogram(v, out);
		if (priv->errors)
			print_errors(&priv->calls[best], out);
	}
	free(shown);
}

static void syscalls_defaults(void *config)
{
	memset(config, 0, sizeof(struct syscalls_options));
}

static bool parse_stacks(const char *arg, void *config)
{
	struct syscalls_options *so = config;

	return parse_us_as_ns("--syscall-stacks", arg, 1, &so->bpf.stack_min_ns);
}

/* "read,write,59": names or numbers, added to the set (the option may be repeated). */
static bool parse_filter(const char *arg, void *config)
{
	struct syscalls_options *so = config;
	char *list = strdup_logged(arg), *save = NULL;
	bool ok = list != NULL;

	for (char *name = list ? strtok_r(list, ",", &save) : NULL; ok && name; name = strtok_r(NULL, ",", &save)) {
		int nr = syscall_number(name);

		if (nr < 0 || nr >= SYSCALL_FILTER_NRS) {
			log_error("--syscall-filter: no syscall named '%s'", name);
			ok = false;
			break;
		}
		so->bpf.only[nr / 64] |= 1ull << (nr % 64);
		so->bpf.only_set = 1;
	}
	if (ok && !so->bpf.only_set) {
		log_error("--syscall-filter: '%s' names no syscall", arg);
		ok = false;
	}
	free(list);
	return ok;
}

static bool parse_sort(const char *arg, void *config)
{
	struct syscalls_options *so = config;

	if (strcmp(arg, "time") && strcmp(arg, "count")) {
		log_error("--syscall-sort: '%s' is not one of time, count", arg);
		return false;
	}
	so->sort_by_count = strcmp(arg, "count") == 0;
	return true;
}

static bool parse_errors(const char *arg, void *config)
{
	((struct syscalls_options *)config)->errors = 1;
	return true;
}

static bool parse_threshold(const char *arg, void *config)
{
	struct syscalls_options *so = config;

	return parse_us_as_ns("--syscall-threshold-us", arg, 1, &so->bpf.raw_min_ns);
}

static const struct profiler_option syscalls_options[] = {
	{ "syscall-stacks", 0, "US", "syscalls: take the user stack of calls slower than US us", parse_stacks },
	{ "syscall-filter", 0, "LIST", "syscalls: count only these syscalls (read,write,... names or numbers)",
	  parse_filter },
	{ "syscall-sort", 0, "BY", "syscalls: the report's order: time (default) or count", parse_sort },
	{ "syscall-errors", 0, NULL, "syscalls: the report lists errors by errno", parse_errors },
	{ "syscall-threshold-us", 0, "US", "syscalls: calls slower than US us as Syscall records (--events FILE)",
	  parse_threshold },
	{ NULL },
};

/* --syscall-threshold-us: one slow call (no stacks). */
static bool syscalls_raw_event(struct profiler *p, const struct aperture_raw_event *ev, size_t size,
			       struct raw_frames *f, struct profile_event *e)
{
	(void)p;
	(void)size;	/* the common struct, which the ring buffer's reader checked */
	e->kind = PE_SYSCALL;
	e->sys.syscall_id = (uint32_t)ev->object;
	e->sys.duration_ns = ev->duration_ns;
	e->sys.return_value = ev->ret;
	e->sys.comm = f->comm;
	return true;
}

const struct profiler_ops profiler_syscalls = {
	.name = "syscalls",
	.id = PROFILER_SYSCALLS,
	.cli.title = "Syscalls",
	.cli.help = "syscalls: calls, errors and latency histograms per syscall, in the kernel",
	.cli.opt_in = true,		/* on every syscall's entry and exit */
	.cli.options = syscalls_options,
	.config.size = sizeof(struct syscalls_config),
	.config.defaults = syscalls_defaults,
	.schema.nraw = 4 + SYSCALL_HIST_SLOTS,
	.schema.folded_raw = 1,
	.needs = FEAT_BIT(FEAT_BTF) | FEAT_BIT(FEAT_TASK_STORAGE) | FEAT_BIT(FEAT_TP_SCHED_EXEC) |
		 FEAT_BIT(FEAT_RINGBUF) | FEAT_BIT(FEAT_TP_SYS_ENTER) | FEAT_BIT(FEAT_TP_SYS_EXIT),
	.schema.nvalues = 2,
	.schema.value_types = { { "calls", "count" }, { "latency", "nanoseconds" } },
	.schema.default_value = 1,
	.schema.period_type = { "calls", "count" },
	.schema.to_values = syscalls_to_values,
	.schema.object_name = syscalls_object_name,
	.raw_type = EVENT_SYSCALL,
	.raw_event = syscalls_raw_event,
	.on_record = syscalls_on_record,
	.report = syscalls_report,
	.open = syscalls_open,
	.close = syscalls_close,
};
