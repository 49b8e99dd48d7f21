// SPDX-License-Identifier: GPL-2.0
/*
 * The local pinned daemon.  It loads the profilers (or takes over the ones a
 * previous daemon pinned, which kept counting meanwhile), pins them and then
 * has little to do: the BPF programs aggregate into the pinned totals, the
 * control map steers them, iterators print them.  The totals are never
 * drained, so a restart, even after kill -9, cannot lose or double-count
 * anything.  Each second the live generation is drained (into the
 * --output-dir profiles, or dropped), which keeps it from filling up and
 * lets the stacks no count refers to any more be collected.
 */
#include <dirent.h>
#include <stddef.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "cli.h"
#include "config.h"
#include "daemon.h"
#include "exporter.h"
#include "jvm_perfmap.h"
#include "outdir.h"
#include "pin.h"
#include "pyroscope.h"
#include "profiler.h"
#include "run.h"
#include "settings.h"
#include "usage.h"
#include "util.h"

#define MAX_PIDS 256
#define MAX_OUTPUTS 2
#define STATE_DIR_DEFAULT "/var/lib/aperture"
#define DRAIN_EVERY_NS 1000000000ull	/* generations drained each second */
/* Stacks collected at most this often: a pass walks the stacks and totals maps key by key. */
#define COLLECT_EVERY_NS 5000000000ull
/*
 * The interval's profiles are written early once they hold this much heap: they grow with the
 * distinct processes sampled (about 175 bytes a frame), so a fork storm of 200 a second had them
 * at 51 MB a minute and the daemon's RSS at 66 MB.  Nothing is lost: the next file starts there.
 */
#define PROFILES_MAX_BYTES (24ull << 20)

struct daemon_opts {
	struct profiler_opts prof;
	uint32_t pids[MAX_PIDS];
	const char *dir;
	bool unpin;
	bool reset;
	const char *output_dir;		/* NULL: nothing drained, nothing written */
	const char *output_format;	/* exporter name */
	uint64_t interval_s;		/* the health line's period, and the files' */
	uint64_t keep_files;
	uint64_t keep_mb;
	uint64_t jvm_perfmap_s;		/* --jvm-perfmap[=S]: 0 off */
	struct pyroscope_opts pyro;	/* --pyroscope URL ... */
};

enum {
	OPT_PIN = 256, OPT_UNPIN, OPT_RESET, OPT_HELP, OPT_OUTPUT_DIR, OPT_OUTPUT_FORMAT, OPT_INTERVAL,
	OPT_KEEP_FILES, OPT_KEEP_MB, OPT_JVM_PERFMAP,
	OPT_PYROSCOPE, OPT_PYROSCOPE_APP, OPT_LABEL, OPT_PYROSCOPE_AUTH, OPT_PYROSCOPE_TENANT, OPT_STATE_DIR,
	OPT_PYROSCOPE_CA, OPT_PYROSCOPE_SPOOL,
};

#define DAEMON_PROFILER_OPTIONS (CLI_TARGETS | CLI_KIND_FLAGS | CLI_KIND_OPTIONS | CLI_CAPS)

static const struct option daemon_options[] = {
	{ "pin", required_argument, NULL, OPT_PIN },
	{ "unpin", no_argument, NULL, OPT_UNPIN },
	{ "reset", no_argument, NULL, OPT_RESET },
	{ "output-dir", required_argument, NULL, OPT_OUTPUT_DIR },
	{ "output-format", required_argument, NULL, OPT_OUTPUT_FORMAT },
	{ "interval", required_argument, NULL, OPT_INTERVAL },
	{ "keep-files", required_argument, NULL, OPT_KEEP_FILES },
	{ "keep-mb", required_argument, NULL, OPT_KEEP_MB },
	{ "jvm-perfmap", optional_argument, NULL, OPT_JVM_PERFMAP },
	{ "pyroscope", required_argument, NULL, OPT_PYROSCOPE },
	{ "pyroscope-app", required_argument, NULL, OPT_PYROSCOPE_APP },
	{ "label", required_argument, NULL, OPT_LABEL },
	{ "pyroscope-auth-file", required_argument, NULL, OPT_PYROSCOPE_AUTH },
	{ "pyroscope-tenant-file", required_argument, NULL, OPT_PYROSCOPE_TENANT },
	{ "pyroscope-ca", required_argument, NULL, OPT_PYROSCOPE_CA },
	{ "pyroscope-spool-size", required_argument, NULL, OPT_PYROSCOPE_SPOOL },
	{ "state-dir", required_argument, NULL, OPT_STATE_DIR },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

/* One daemon: its settings, what it opened, and the interval's state. */
struct daemon_run {
	struct daemon_opts o;
	int argc;			/* the command line, parsed again on SIGHUP */
	char **argv;
	struct run run;			/* one control map and target set; with outputs, the events' reader */
	const struct profiler_ops *ops[PROFILER_MAX];
	struct profiler *profs[PROFILER_MAX];
	int nprofs;
	bool took_over;			/* a pinned set was there: this daemon applies its settings to it */
	/* with outputs (--output-dir, --pyroscope) only */
	struct symbolizer *sym;
	struct profile profiles[PROFILER_MAX];
	struct outdir out;
	struct daemon_output { const struct output_ops *ops; void *state; } outputs[MAX_OUTPUTS];
	int noutputs;
	uint64_t outputs_due_ns;	/* the earliest next poll they asked for (poll_outputs); UINT64_MAX: none */
	uint64_t interval_start_ns;	/* CLOCK_MONOTONIC */
	uint64_t next_collect_ns;	/* the next pass of the stacks' garbage collector */
	size_t profiles_held_bytes;	/* what the last interval's profiles took when written */
	uint64_t early_writes;		/* intervals cut short at PROFILES_MAX_BYTES */
	/* the last interval's counters, for deltas */
	uint64_t last_stats[PROFILER_MAX][STAT_MAX];
	struct jvm_perfmap *jvm;	/* --jvm-perfmap: its own thread */
};

static void usage(FILE *out)
{
	fprintf(out,
"Usage: aperture run [--pin DIR] [PROFILERS] [-p PID,...] [--cgroup PATH] [OPTIONS]\n"
"       aperture run --unpin [--pin DIR]\n"
"       aperture run --reset [--pin DIR]\n"
"       aperture run --oap HOST:PORT ...   (SkyWalking agent: aperture run --oap x --help)\n"
"\n"
"Without --oap, profile continuously with everything pinned under DIR (default %s):\n"
"the BPF programs keep counting without the loader; read them with `aperture dump --pin DIR`\n"
"(or `cat DIR/oncpu_folded` where the kernel allows the iterators), steer them through\n"
"DIR/control, DIR/target_pids and DIR/NAME_config (tools/aperture-ctl). Started again, it\n"
"takes over what is pinned instead of loading anew, with the targets and filters of its own\n"
"command line; what the loaded programs cannot change (-F, --unwind, ...) must match them, or\n"
"`--unpin` them first. Ctrl-C / SIGTERM leaves the pins in place.\n"
"\n"
"Profilers (default: all but the opt-in ones:", PIN_DEFAULT_DIR);
	for (int i = 0; profilers[i]; i++)
		if (profilers[i]->cli.opt_in)
			fprintf(out, " --%s", profilers[i]->name);
	fprintf(out, "):\n");
	cli_profiler_help(out, CLI_KIND_FLAGS);
	fprintf(out, "\nWhat and how (the initial target set; default every process):\n");
	cli_profiler_help(out, CLI_TARGETS | CLI_KIND_OPTIONS);
	fprintf(out,
"      --jvm-perfmap[=S]    ask each JVM target (JDK 17+) to write /tmp/perf-PID.map\n"
"                           (Java method names) at start, each second for 5 s, then\n"
"                           every S seconds (default %d)\n", JVM_PERFMAP_DEFAULT_S);
	fprintf(out, "\nCaps (the stats line, SIGUSR1 and every interval, shows each one's use):\n");
	cli_profiler_help(out, CLI_CAPS);
	fprintf(out,
"\n"
"      --pin DIR            the pin directory (bpffs)\n"
"      --unpin              detach and remove everything pinned under DIR, then exit\n"
"      --reset              empty the pinned totals and stacks (the maps fill up over time), then exit\n"
"\n"
"Local outputs and health (README: Running it for months):\n"
"      --output-dir DIR     one profile per interval per kind in DIR (files 0600, written whole)\n"
"      --output-format F    %s (default pprof)\n"
"      --interval S         seconds per file and per health line: 60, 60s, 5m, 1h (default 60s)\n"
"      --keep-files N       keep the newest N files of each kind (default 0: no limit)\n"
"      --keep-mb M          keep at most M MiB of each kind's files (default 0: no limit)\n"
"      --pyroscope URL      push each interval's profiles to Grafana Pyroscope (http[s]://HOST:PORT)\n"
"      --pyroscope-app NAME the application name (default aperture)\n"
"      --label KEY=VALUE    a Pyroscope label of every profile (repeatable)\n"
"      --pyroscope-auth-file FILE    USER:PASSWORD for basic auth, first line\n"
"      --pyroscope-tenant-file FILE  the tenant (X-Scope-OrgID header), first line\n"
"      --pyroscope-ca FILE  https: the CA bundle (PEM) that signed the server (default: the system's)\n"
"      --pyroscope-spool-size BYTES  profiles kept while Pyroscope is away (default 16M)\n"
"      --state-dir DIR      the ledger of unsent profiles (default $APERTURE_STATE_DIR or\n"
"                           " STATE_DIR_DEFAULT ")\n"
"      --config FILE        settings as key = value lines; flags override them\n"
"      --check-config       print the effective settings and where each came from, then exit 0 (2: bad)\n"
"      --log-format F       text (default) or json (one {ts, level, msg} object per line)\n"
"  -v, --verbose            more messages\n"
"SIGHUP reads --config again, SIGUSR1 prints a stats line.\n", exporter_names());
}

/* "60", "60s", "5m", "1h": seconds in [1, 1 day]. */
static bool parse_interval(const char *arg, uint64_t *seconds)
{
	char number[32];
	size_t len = strlen(arg);
	uint64_t unit = 1;

	if (len && len < sizeof(number) && strchr("smh", arg[len - 1])) {
		unit = arg[len - 1] == 'h' ? 3600 : arg[len - 1] == 'm' ? 60 : 1;
		len--;
	}
	snprintf(number, sizeof(number), "%.*s", (int)len, arg);
	if (!parse_u64("--interval", number, 1, 86400 / unit, seconds))
		return false;
	*seconds *= unit;
	return true;
}

static bool pyroscope_option(struct pyroscope_opts *o, int c, const char *arg)
{
	switch (c) {
	case OPT_PYROSCOPE:
		o->url = arg;
		return true;
	case OPT_PYROSCOPE_APP:
		o->app = arg;
		return true;
	case OPT_LABEL:
		if (o->nlabels == PYROSCOPE_MAX_LABELS) {
			log_error("--label: at most %d", PYROSCOPE_MAX_LABELS);
			return false;
		}
		o->labels[o->nlabels++] = arg;
		return true;
	case OPT_PYROSCOPE_AUTH:
		o->auth_file = arg;
		return true;
	case OPT_PYROSCOPE_TENANT:
		o->tenant_file = arg;
		return true;
	case OPT_PYROSCOPE_CA:
		o->ca_file = arg;
		return true;
	case OPT_STATE_DIR:
		o->state_dir = arg;
		return true;
	case OPT_PYROSCOPE_SPOOL:
		return parse_size("--pyroscope-spool-size", arg, &o->spool_bytes);
	}
	return false;
}

static bool daemon_option(struct daemon_opts *o, int c, const char *arg)
{
	switch (c) {
	case OPT_OUTPUT_DIR:
		o->output_dir = arg;
		return true;
	case OPT_OUTPUT_FORMAT:
		if (!exporter_by_name(arg) || strcmp(arg, "skywalking") == 0) {
			log_error("--output-format: '%s' is not one of pprof, folded, svg", arg);
			return false;
		}
		o->output_format = arg;
		return true;
	case OPT_INTERVAL:
		return parse_interval(arg, &o->interval_s);
	case OPT_KEEP_FILES:
		return parse_u64("--keep-files", arg, 0, 1000000, &o->keep_files);
	case OPT_KEEP_MB:
		return parse_u64("--keep-mb", arg, 0, 1u << 30, &o->keep_mb);
	case OPT_JVM_PERFMAP:
		o->jvm_perfmap_s = JVM_PERFMAP_DEFAULT_S;
		return !arg || parse_u64("--jvm-perfmap", arg, 1, 3600, &o->jvm_perfmap_s);
	}
	return pyroscope_option(&o->pyro, c, arg);
}

static int parse_with(void *ctx, int argc, char **argv, const struct cli_getopt *g);

static int parse_args(struct daemon_opts *o, int argc, char **argv)
{
	return cli_parse(argc, argv, "v", daemon_options, DAEMON_PROFILER_OPTIONS, parse_with, o);
}

static int parse_with(void *ctx, int argc, char **argv, const struct cli_getopt *g)
{
	struct daemon_opts *o = ctx;
	int c, handled;

	o->dir = PIN_DEFAULT_DIR;
	o->output_format = "pprof";
	o->interval_s = 60;
	o->pyro.app = "aperture";
	o->pyro.spool_bytes = 16u << 20;
	o->pyro.state_dir = getenv("APERTURE_STATE_DIR") ?: STATE_DIR_DEFAULT;
	o->pyro.stop = &cli_stop;
	cli_profiler_defaults(&o->prof);
	o->prof.keep_totals = true;
	o->prof.gc_stacks = true;	/* drained every second, totals kept: see daemon_loop */
	optind = 1;
	opterr = 0;
	while ((c = cli_getopt_next(argc, argv, g)) != -1) {
		handled = cli_profiler_option(DAEMON_PROFILER_OPTIONS, c, optarg, &o->prof, o->pids, MAX_PIDS);
		if (handled < 0)
			return EXIT_USAGE;
		if (handled)
			continue;
		switch (c) {
		case OPT_PIN:
			o->dir = optarg;
			break;
		case OPT_UNPIN:
			o->unpin = true;
			break;
		case OPT_RESET:
			o->reset = true;
			break;
		case 'v':
			log_verbose++;
			break;
		case OPT_OUTPUT_DIR:
		case OPT_OUTPUT_FORMAT:
		case OPT_INTERVAL:
		case OPT_KEEP_FILES:
		case OPT_KEEP_MB:
		case OPT_JVM_PERFMAP:
		case OPT_PYROSCOPE ... OPT_PYROSCOPE_SPOOL:
			if (!daemon_option(o, c, optarg))
				return EXIT_USAGE;
			break;
		case OPT_HELP:
			usage(stdout);
			return -1;
		default:
			log_error("run: unknown or incomplete option '%s' (see aperture run --help)",
				  argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		log_error("run: unexpected argument '%s'", argv[optind]);
		return EXIT_USAGE;
	}
	/* The daemon runs every profiler but the opt-in ones unless told which. */
	if (!o->prof.kinds)
		for (int i = 0; profilers[i]; i++)
			if (!profilers[i]->cli.opt_in)
				o->prof.kinds |= 1u << profilers[i]->id;
	if (!cli_profiler_check(&o->prof))
		return EXIT_USAGE;
	if (o->pyro.url && !pyroscope_check(&o->pyro))
		return EXIT_USAGE;
	o->prof.pids = o->pids;
	return 0;
}


/* --- health: one line per interval, a stats line on SIGUSR1 --- */

/* Frames no symbol covers, of all frames, in @prof's samples. */
static void count_misses(const struct profile *prof, uint64_t *misses, uint64_t *frames)
{
	for (size_t i = 0; i < prof->nsamples; i++) {
		const struct profile_sample *s = &prof->samples[i];

		for (uint32_t f = 0; f < s->nkernel + s->nuser; f++)
			*misses += !s->frames[f].sym.function;
		*frames += s->nkernel + s->nuser;
	}
}

/* "N lost (stacks map full 3, ...)": the interval's losses, by cause. */
static void losses(struct usage_line *line, const uint64_t *now, const uint64_t *last)
{
	uint64_t delta[STAT_MAX];
	const char *sep = " (";

	for (int s = 0; s < STAT_MAX; s++)
		delta[s] = now[s] - last[s];
	usage_append(line, "%" PRIu64 " lost", profiler_lost(delta));
	if (!profiler_lost(delta))
		return;
#define NOT_LOSS(id, what)
#define LOSS(id, what) \
	if (delta[id]) { usage_append(line, "%s%s %" PRIu64, sep, what, delta[id]); sep = ", "; }
	APERTURE_STATS(NOT_LOSS, LOSS)
#undef NOT_LOSS
#undef LOSS
	usage_append(line, ")");
}

/*
 * "oncpu: N samples, M lost (...); ": each kind's counters since the last call.  Read just
 * before the drain that ends the interval's profiles (its generation flip), so that the line
 * counts what the files hold: the drain and the write take long (a 24 MiB profile under a
 * sanitizer, ~0.3 s), and samples counted meanwhile belong to the next interval's files.
 */
static void health_counts(struct daemon_run *run, struct usage_line *line)
{
	uint64_t stats[STAT_MAX];

	for (int i = 0; i < run->nprofs; i++) {
		struct profiler *p = run->profs[i];

		if (profiler_stats(p, stats))
			continue;
		usage_append(line, "%s: %" PRIu64 " %s, ", p->ops->name,
			     stats[STAT_EVENTS] - run->last_stats[i][STAT_EVENTS], p->ops->schema.value_types[0].type);
		losses(line, stats, run->last_stats[i]);
		usage_append(line, "; ");
		memcpy(run->last_stats[i], stats, sizeof(stats));
	}
}

/* The interval's line: @line (health_counts), then the frames left unnamed and each output's state. */
static void health_line(struct daemon_run *run, struct usage_line *line, uint64_t misses, uint64_t frames)
{
	if (run->noutputs)
		usage_append(line, "symbols missing: %" PRIu64 " of %" PRIu64 " frames; ", misses, frames);
	for (int i = 0; i < run->noutputs; i++)
		if (run->outputs[i].ops->health)
			run->outputs[i].ops->health(run->outputs[i].state, line);
	log_notice("interval %" PRIu64 "s: %soap: none (local daemon); spool: none", run->o.interval_s,
		   line->text);
}

static size_t profiles_bytes(const struct daemon_run *run)
{
	size_t bytes = 0;

	for (int i = 0; run->o.output_dir && i < run->nprofs; i++)
		bytes += run->profiles[i].bytes;
	return bytes;
}

/*
 * "memory KiB: ...": what each holder counts, and the rest of the heap
 * (usage.h); then the high-water marks of what is freed again.
 */
static void memory_parts(struct daemon_run *run, struct usage_line *line)
{
	size_t build_peak;

	usage_run_memory(line, run->sym, &run->run, run->profiles, run->o.output_dir ? run->nprofs : 0,
			 &build_peak);
	usage_append(line, " (freed since: the largest unwind table built %zu, the profiles at the last write %zu;"
		     " written early, over %llu: %" PRIu64 "); ", build_peak >> 10, run->profiles_held_bytes >> 10,
		     PROFILES_MAX_BYTES >> 10, run->early_writes);
}

/* Caps and use: every interval and on SIGUSR1. */
static void stats_line(struct daemon_run *run)
{
	struct usage_line line = { .len = 0 };
	uint64_t rss_kib, fds, files, bytes, heap_kib, heap_free_kib, heap_mmap_kib;

	for (int i = 0; i < run->nprofs; i++) {
		struct profiler *p = run->profs[i];

		usage_profiler(&line, p);
		if (run->o.output_dir) {
			outdir_usage(&run->out, p->ops->name, &files, &bytes);
			usage_append(&line, " files %" PRIu64 "/%" PRIu64 " bytes %" PRIu64 "/%" PRIu64, files,
				     run->o.keep_files, bytes, run->o.keep_mb << 20);
		}
		usage_append(&line, "; ");
	}
	usage_symbols(&line, run->sym);
	if (run->sym)
		usage_append(&line, "; ");
	if (run->jvm) {
		char summary[256];

		jvm_perfmap_summary(run->jvm, summary, sizeof(summary));
		usage_append(&line, "%s; ", summary);
	}
	memory_parts(run, &line);
	usage_process(&rss_kib, &fds);
	usage_heap(&heap_kib, &heap_free_kib, &heap_mmap_kib);
	log_notice("stats: %s(used/cap; 0: no cap) rss %" PRIu64 " KiB, %" PRIu64 " fds; heap %" PRIu64
		   " KiB in use (%" PRIu64 " of it mmap'ed chunks), %" PRIu64 " KiB free in the arenas",
		   line.text, rss_kib, fds, heap_kib, heap_mmap_kib, heap_free_kib);
}

/* --- local outputs --- */

static int drop_record(struct profiler *p, const struct raw_record *rec, void *ctx)
{
	return 0;
}

/*
 * Without --output-dir the live generation is drained and dropped: the
 * totals hold the aggregate, and a live map never drained would fill up and
 * count every new key as lost.  Draining also lets the stacks be collected.
 */
static void drain_all(struct daemon_run *run)
{
	uint64_t now = now_ns(CLOCK_MONOTONIC);
	bool collect = now >= run->next_collect_ns;

	for (int i = 0; i < run->nprofs; i++) {
		struct profiler *p = run->profs[i];
		int err = run->noutputs ? profiler_snapshot_into(p, &run->profiles[i])
					    : profiler_snapshot(p, drop_record, NULL);

		if (err)	/* the counts stay in the kernel's generation: the next drain takes them */
			log_warn("%s: cannot drain the interval's counts: %s", p->ops->name, strerror(-err));
		else if (collect)
			profiler_collect_stacks(p);	/* a failure is said once, and deletes nothing */
	}
	if (collect)
		run->next_collect_ns = now + COLLECT_EVERY_NS;
}

/* The interval starting at @now (CLOCK_MONOTONIC): its wall clock start is the last one's end, exactly. */
static void start_profiles(struct daemon_run *run, uint64_t now)
{
	uint64_t wall = now_ns(CLOCK_REALTIME) - (now_ns(CLOCK_MONOTONIC) - now);

	for (int i = 0; i < run->nprofs; i++) {
		profiler_profile_init(run->profs[i], &run->profiles[i], run->sym);
		run->profiles[i].time_ns = wall;
	}
	run->interval_start_ns = now;
}

/*
 * Hands each kind's profile of the interval ending @now, drained, to every output, and starts
 * the next.
 */
static void write_profiles(struct daemon_run *run, uint64_t now, uint64_t *misses, uint64_t *frames)
{
	run->profiles_held_bytes = profiles_bytes(run);
	for (int i = 0; i < run->nprofs; i++) {
		struct profile *prof = &run->profiles[i];

		prof->duration_ns = now - run->interval_start_ns;
		count_misses(prof, misses, frames);
		for (int o = 0; o < run->noutputs; o++)
			run->outputs[o].ops->write(run->outputs[o].state, prof);
		profile_free(prof);
	}
	symbolizer_trim(run->sym);	/* nothing refers to its frames until the next drain */
	/*
	 * The interval's samples were small blocks between ones the caches keep: freed, they are
	 * holes the arenas keep (under a fork storm 48 MiB of a 60 MiB RSS, 12 MiB in use).  Their
	 * whole pages go back to the system here, once an interval (a few ms).
	 */
	malloc_trim(0);
	start_profiles(run, now);
}

static void end_interval(struct daemon_run *run, uint64_t now)
{
	struct usage_line line = { .len = 0 };
	uint64_t misses = 0, frames = 0;

	health_counts(run, &line);
	if (run->noutputs) {
		drain_all(run);
		write_profiles(run, now, &misses, &frames);
	}
	health_line(run, &line, misses, frames);
	stats_line(run);
}

/* --- SIGHUP --- */

static bool str_differ(const char *a, const char *b)
{
	return (a != NULL) != (b != NULL) || (a && strcmp(a, b));
}

/*
 * What the Pyroscope route cannot change while it runs, named in @keys, @now's values given to
 * @next: turning it on or off, its URL and CA (the ledger is kept per URL: what waits belongs to
 * that server), its ledger's directory and its spool's bound.  App, labels, auth and tenant apply.
 */
static void pyroscope_keep_fixed(const struct pyroscope_opts *now, struct pyroscope_opts *next,
				 struct changed_keys *keys)
{
	if (!now->url || !next->url) {
		if (str_differ(now->url, next->url))
			changed_keys_add(keys, "--pyroscope %s (running: %s)", next->url ?: "none", now->url ?: "none");
		*next = *now;
		return;
	}
	if (strcmp(now->url, next->url))
		changed_keys_add(keys, "--pyroscope %s (running: %s)", next->url, now->url);
	if (str_differ(now->ca_file, next->ca_file))
		changed_keys_add(keys, "--pyroscope-ca %s (running: %s)", next->ca_file ?: "none",
				 now->ca_file ?: "none");
	if (strcmp(now->state_dir, next->state_dir))
		changed_keys_add(keys, "--state-dir %s (running: %s)", next->state_dir, now->state_dir);
	if (now->spool_bytes != next->spool_bytes)
		changed_keys_add(keys, "--pyroscope-spool-size %" PRIu64 " (running: %" PRIu64 ")",
				 next->spool_bytes, now->spool_bytes);
	next->url = now->url;
	next->ca_file = now->ca_file;
	next->state_dir = now->state_dir;
	next->spool_bytes = now->spool_bytes;
	next->stop = now->stop;
}

/*
 * What this process cannot change while it runs (its pin directory, its
 * outputs): named in @keys, @now's values given to @next.
 */
static void keep_own_fixed(const struct daemon_opts *now, struct daemon_opts *next, struct changed_keys *keys)
{
	if (strcmp(now->dir, next->dir))
		changed_keys_add(keys, "--pin %s (running: %s)", next->dir, now->dir);
	if (str_differ(now->output_dir, next->output_dir))
		changed_keys_add(keys, "--output-dir %s (running: %s)", next->output_dir ?: "none",
				 now->output_dir ?: "none");
	if (strcmp(now->output_format, next->output_format))
		changed_keys_add(keys, "--output-format %s (running: %s)", next->output_format,
				 now->output_format);
	pyroscope_keep_fixed(&now->pyro, &next->pyro, keys);
	if (now->jvm_perfmap_s != next->jvm_perfmap_s)
		changed_keys_add(keys, "--jvm-perfmap %" PRIu64 " (running: %" PRIu64 "; 0: off)",
				 next->jvm_perfmap_s, now->jvm_perfmap_s);
	next->dir = now->dir;
	next->output_dir = now->output_dir;
	next->output_format = now->output_format;
	next->jvm_perfmap_s = now->jvm_perfmap_s;
}

/*
 * Keeps the running values of what cannot change live, one line for each
 * group @next changed, and takes the rest from @next.
 */
static void take_live(struct daemon_opts *now, struct daemon_opts *next)
{
	struct changed_keys loaded = { .n = 0 }, own = { .n = 0 };

	if (settings_keep_fixed(&now->prof, &next->prof, false, &loaded))
		log_warn("reload: %s: not applied, the loaded programs cannot change them "
			 "(`aperture run --unpin --pin %s`, then start again)", loaded.text, now->dir);
	keep_own_fixed(now, next, &own);
	if (own.n)
		log_warn("reload: %s: not applied, they need a restart", own.text);
	*now = *next;
	now->prof.pids = now->pids;
}

static int apply_live(struct daemon_run *run)
{
	for (int i = 0; i < run->nprofs; i++) {
		struct profiler *p = run->profs[i];
		int err;

		p->opts.stack_mode = run->o.prof.stack_mode;
		p->opts.cgroup_id = run->o.prof.cgroup_id;
		memcpy(p->opts.config[p->ops->id], run->o.prof.config[p->ops->id], sizeof(p->opts.config[0]));
		err = profiler_set_pids(p, run->o.pids, run->o.prof.npids);
		if (err)
			return err;
	}
	if (run->jvm && jvm_perfmap_set_targets(run->jvm, run->o.pids, run->o.prof.npids))
		return -ENOMEM;
	run->out.keep_files = run->o.keep_files;
	run->out.keep_bytes = run->o.keep_mb << 20;
	if (run->sym)
		symbolizer_apply(run->sym, &run->o.prof.symbols);
	for (int i = 0; i < run->noutputs; i++)
		if (run->outputs[i].ops == &pyroscope_output)
			pyroscope_reload(run->outputs[i].state, &run->o.pyro);	/* a failure is said, kept */
	return 0;
}

/*
 * Reads the command line and its --config file again.  Nothing is drained or
 * reset: the counts go on into the same maps, only the filters change.
 */
static void daemon_reload(struct daemon_run *run)
{
	static struct daemon_opts next;	/* a profiler_opts is 4 KiB */
	int err;

	memset(&next, 0, sizeof(next));
	log_notice("SIGHUP: reading %s again", config_path() ? config_path() : "the command line");
	err = parse_args(&next, run->argc, run->argv);
	if (err) {
		log_error("reload: the settings above are wrong; the running ones are kept");
		return;
	}
	take_live(&run->o, &next);
	err = apply_live(run);
	if (err)
		log_error("reload: cannot apply the new targets and filters: %s", strerror(-err));
	else
		log_notice("reload: targets (%d pids, cgroup %" PRIu64 "), filters, interval %" PRIu64
			   "s and rotation applied", run->o.prof.npids, (uint64_t)run->o.prof.cgroup_id,
			   run->o.interval_s);
}

/* --- the daemon --- */

/*
 * A set left pinned in DIR runs with what its first daemon loaded.  What this
 * command line asks otherwise of that (settings.h) refuses the start, in one
 * line, before anything is touched; the rest is applied after the takeover.
 * 0, or an exit code.
 */
static int check_takeover(struct daemon_run *run)
{
	static struct profiler_opts loaded;	/* 4 KiB */
	struct changed_keys keys = { .n = 0 };
	struct daemon_opts *o = &run->o;
	int err;

	loaded = o->prof;	/* what the pins do not tell is taken as asked */
	err = pin_read_fixed(o->dir, &loaded);
	if (err == -ENOENT)
		return 0;	/* nothing pinned: a fresh start */
	if (err)
		return EXIT_RUNTIME;
	run->took_over = true;
	if (!settings_keep_fixed(&loaded, &o->prof, true, &keys))
		return 0;
	log_error("run: %s holds programs loaded with other settings: %s; they cannot change while loaded: "
		  "start with the loaded values, or remove them first (`aperture run --unpin --pin %s`)",
		  o->dir, keys.text, o->dir);
	return EXIT_USAGE;
}

/*
 * New processes get their unwinding tables built (and, with outputs, their
 * symbols kept) from before the programs count: a process met in the first
 * second is not walked by frame pointers for longer than its tables take.
 */
static void watch_processes(struct profiler *p, void *ctx)
{
	struct daemon_run *run = ctx;

	(void)p;
	if (run->run.watched)
		return;	/* the first profiler gave the run its maps: they are read already */
	run_watch_events(&run->run, run->sym, NULL, NULL);	/* degrades, logged */
	run_track(&run->run, run->o.pids, run->o.prof.npids);
}

static void *open_outdir(struct daemon_run *run)
{
	if (outdir_open(&run->out, run->o.output_dir, exporter_by_name(run->o.output_format)))
		return NULL;
	run->out.keep_files = run->o.keep_files;
	run->out.keep_bytes = run->o.keep_mb << 20;
	return &run->out;
}

static void *open_pyroscope(struct daemon_run *run)
{
	return pyroscope_open(&run->o.pyro);
}

/* The interval outputs: each kind's profile goes to every one the command line asks for. */
static const struct {
	const struct output_ops *ops;
	size_t on;			/* offset of the option that turns it on (a string) in daemon_opts */
	void *(*open)(struct daemon_run *run);	/* NULL after one line */
} output_table[MAX_OUTPUTS] = {
	{ &outdir_output, offsetof(struct daemon_opts, output_dir), open_outdir },
	{ &pyroscope_output, offsetof(struct daemon_opts, pyro.url), open_pyroscope },
};

static int open_outputs(struct daemon_run *run)
{
	run->outputs_due_ns = UINT64_MAX;
	for (int i = 0; i < MAX_OUTPUTS; i++) {
		void *state;

		if (!*(const char *const *)((const char *)&run->o + output_table[i].on))
			continue;
		state = output_table[i].open(run);
		if (!state)
			return -EINVAL;
		run->outputs[run->noutputs++] = (struct daemon_output){ output_table[i].ops, state };
	}
	return 0;
}

/* Between intervals: the outputs' own work (Pyroscope's retries), and when they want it next. */
static void poll_outputs(struct daemon_run *run, bool stopping)
{
	run->outputs_due_ns = UINT64_MAX;
	for (int i = 0; i < run->noutputs; i++) {
		uint64_t due;

		if (!run->outputs[i].ops->poll)
			continue;
		due = run->outputs[i].ops->poll(run->outputs[i].state, stopping);
		if (due < run->outputs_due_ns)
			run->outputs_due_ns = due;
	}
}

static int daemon_start(struct daemon_run *run)
{
	struct daemon_opts *o = &run->o;
	struct usage_line first = { .len = 0 };
	int err;

	for (int i = 0; profilers[i]; i++)
		if (o->prof.kinds & (1u << profilers[i]->id))
			run->ops[run->nprofs++] = profilers[i];
	err = open_outputs(run);
	if (err)
		return err;
	if (run->noutputs && !(run->sym = symbolizer_new(&o->prof.symbols)))
		return -ENOMEM;
	err = pin_start(o->dir, &run->run, run->ops, run->nprofs, &o->prof, run->profs, watch_processes, run);
	if (err)
		return err;
	if (run->took_over) {
		/* The pinned programs still run their last daemon's targets and filters: this one's replace them. */
		err = apply_live(run);
		if (err) {
			log_error("cannot apply the targets and filters to the pinned programs: %s", strerror(-err));
			return err;
		}
		log_notice("took over %s: targets (%d pids, cgroup %" PRIu64 ") and filters of this command line "
			   "applied", o->dir, o->prof.npids, (uint64_t)o->prof.cgroup_id);
	}
	start_profiles(run, now_ns(CLOCK_MONOTONIC));
	/*
	 * Maps this daemon created counted from zero, and the first file holds all they counted
	 * (under a sanitizer ~0.2 s of samples came before this point).  Taken over, they counted for
	 * the last daemon too: its final drain is its files', and what came since is in this one's
	 * first file but not in its first health line.
	 */
	if (run->took_over)
		health_counts(run, &first);	/* nothing said */
	/* After the attach: the code the JVMs compiled so far is named from the first drain. */
	if (o->jvm_perfmap_s && !(run->jvm = jvm_perfmap_start((unsigned int)o->jvm_perfmap_s, o->pids,
								o->prof.npids, false)))
		return -ENOMEM;
	return 0;
}

/*
 * Sleeps until @until (CLOCK_MONOTONIC ns) or an output's poll (Pyroscope's
 * retry), at most 100 ms while run_needs_tick, reading new-process
 * notifications meanwhile.
 */
static void wait_until(struct daemon_run *run, uint64_t until)
{
	uint64_t now = now_ns(CLOCK_MONOTONIC), ms;

	if (until > run->outputs_due_ns)
		until = run->outputs_due_ns;
	ms = until > now ? (until - now) / 1000000 + 1 : 0;

	if (ms > 100 && run_needs_tick(run->profs, run->nprofs, run->sym))
		ms = 100;
	(void)run_wait(&run->run, (int)ms);	/* an unreadable ring was never fatal here: the drains go on */
	if (run->run.events && run->sym)
		symbolizer_reread_young(run->sym);
}

/*
 * Each profiler's tick (the GPU profiler attaches to the CUDA libraries that
 * processes loaded since); what it attached is pinned with the rest.
 */
static void poll_profilers(struct daemon_run *run)
{
	for (int i = 0; i < run->nprofs; i++) {
		struct profiler *p = run->profs[i];

		if (!p->ops->poll)
			continue;
		p->ops->poll(p);
		if (p->nlinks > p->nlinks_pinned)
			pin_new_links(run->o.dir, p);
	}
}

static void daemon_loop(struct daemon_run *run)
{
	uint64_t next_drain = run->interval_start_ns + DRAIN_EVERY_NS;

	while (!cli_stop) {
		uint64_t now = now_ns(CLOCK_MONOTONIC);
		uint64_t interval_end = run->interval_start_ns + run->o.interval_s * 1000000000ull;

		if (cli_reload) {
			cli_reload = 0;
			daemon_reload(run);
		}
		if (cli_stats) {
			cli_stats = 0;
			stats_line(run);
		}
		if (now >= interval_end) {
			end_interval(run, now);
			poll_outputs(run, false);
			if (!run->noutputs)	/* with outputs, start_profiles moved the start */
				run->interval_start_ns = now;
			continue;
		}
		if (now >= next_drain) {
			drain_all(run);
			next_drain = now + DRAIN_EVERY_NS;
			if (profiles_bytes(run) > PROFILES_MAX_BYTES) {
				log_notice("the interval's profiles hold over %llu KiB: written after %" PRIu64
					   " s (the interval line below says the configured length)",
					   PROFILES_MAX_BYTES >> 10, (now - run->interval_start_ns) / 1000000000);
				run->early_writes++;
				end_interval(run, now);
				continue;
			}
		}
		wait_until(run, next_drain < interval_end ? next_drain : interval_end);
		poll_profilers(run);
		poll_outputs(run, false);
	}
	/* The partial last interval: what was counted since the last file is not lost. */
	if (run->noutputs) {
		end_interval(run, now_ns(CLOCK_MONOTONIC));
		poll_outputs(run, true);
	}
}

static void daemon_close(struct daemon_run *run)
{
	if (run->jvm) {
		jvm_perfmap_stop(run->jvm);
		jvm_perfmap_report(run->jvm);
		jvm_perfmap_free(run->jvm);
	}
	for (int i = 0; i < run->nprofs; i++) {
		if (run->sym)
			profile_free(&run->profiles[i]);
		profiler_close(run->profs[i]);
	}
	run_close(&run->run);
	for (int i = 0; i < run->noutputs; i++)
		run->outputs[i].ops->close(run->outputs[i].state);
	symbolizer_free(run->sym);
}

int daemon_main(int argc, char **argv)
{
	static struct daemon_run run;	/* the profiles and options are big */
	struct daemon_opts *o = &run.o;
	int err;

	run_init(&run.run);
	run.out.dirfd = -1;
	run.argc = argc;
	run.argv = argv;
	err = parse_args(o, argc, argv);
	if (err)
		return err < 0 ? 0 : err;
	if (!cli_check_environment())
		return EXIT_RUNTIME;
	if (o->reset) {
		err = pin_reset(o->dir);
		if (!err)
			log_notice("emptied the totals and stacks pinned under %s", o->dir);
		return err ? EXIT_RUNTIME : 0;
	}
	if (o->unpin) {
		err = pin_remove_all(o->dir);
		if (!err)
			log_notice("removed everything pinned under %s", o->dir);
		return err ? EXIT_RUNTIME : 0;
	}
	cli_libbpf_logging();
	err = check_takeover(&run);
	if (err)
		return err;
	cli_install_signals();
	cli_install_daemon_signals();
	err = daemon_start(&run);
	if (!err) {
		log_notice("profiling; pinned under %s (aperture dump --pin %s)%s%s", o->dir, o->dir,
			   o->output_dir ? "; profiles into " : "", o->output_dir ? o->output_dir : "");
		if (o->pyro.url)
			log_notice("pushing every %" PRIu64 "s to Pyroscope %s as %s", o->interval_s, o->pyro.url,
				   o->pyro.app);
		daemon_loop(&run);
		log_notice("stopped; the programs keep running pinned under %s "
			   "(`aperture run --unpin --pin %s` removes them)", o->dir, o->dir);
	}
	daemon_close(&run);
	return err ? EXIT_RUNTIME : 0;
}
