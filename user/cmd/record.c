// SPDX-License-Identifier: GPL-2.0
/*
 * `aperture record`: load the chosen profilers, snapshot them once a second
 * (so that processes are symbolized while they live and maps never fill),
 * then write every requested output.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <bpf/libbpf.h>
#include "cli.h"
#include "event_stream.h"
#include "exporter.h"
#include "jvm_perfmap.h"
#include "profiler.h"
#include "record.h"
#include "run.h"
#include "symbolize.h"
#include "unwinder.h"
#include "usage.h"
#include "util.h"

#define MAX_PIDS 256
#define MAX_OUTPUTS 8
#define MAX_PROFILERS 8
#define SNAPSHOT_INTERVAL_NS 1000000000ull
#define TICK_MS 100		/* the loop's wait while something needs a tick (wait_ms) */

struct record_opts {
	struct profiler_opts prof;
	uint32_t pids[MAX_PIDS];
	uint64_t duration_s;		/* 0: until the command exits or Ctrl-C */
	const char *outputs[MAX_OUTPUTS];
	int noutputs;
	const char *format;		/* NULL: from each file name */
	const char *weight;		/* NULL: each profile's default */
	uint64_t top;
	const char *events_path;	/* --events FILE: the raw event stream */
	char **command;			/* after --, NULL if none */
	uint64_t jvm_perfmap_s;		/* --jvm-perfmap[=S]: 0 off */
};

struct record_run {
	struct record_opts opts;
	struct symbolizer *sym;
	struct profiler *profs[MAX_PROFILERS];
	struct profile profiles[MAX_PROFILERS];
	int nprofs;
	struct run run;			/* one control map, one ring buffer for all profilers */
	struct event_stream *stream;	/* --events */
	pid_t child;
	int child_go_fd;		/* write end: the child execs when it closes */
	int child_status_fd;		/* read end: errno of a failed exec, EOF on success */
	uint64_t start_ns;
	struct jvm_perfmap *jvm;	/* --jvm-perfmap */
};

enum { OPT_WEIGHT = 256, OPT_FORMAT, OPT_TOP, OPT_EVENTS, OPT_HELP, OPT_VERSION, OPT_JVM_PERFMAP };

#define RECORD_PROFILER_OPTIONS (CLI_TARGETS | CLI_KIND_FLAGS | CLI_KIND_OPTIONS | CLI_CAPS)

static const struct option record_options[] = {
	{ "duration", required_argument, NULL, 'd' },
	{ "weight", required_argument, NULL, OPT_WEIGHT },
	{ "output", required_argument, NULL, 'o' },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "top", required_argument, NULL, OPT_TOP },
	{ "events", required_argument, NULL, OPT_EVENTS },
	{ "jvm-perfmap", optional_argument, NULL, OPT_JVM_PERFMAP },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

static void usage(FILE *out)
{
	fprintf(out,
"Usage: aperture record [OPTIONS] [-- COMMAND [ARGS...]]\n"
"Profile the machine (or some processes) for a while and write profiles.\n"
"\n"
"What to profile:\n");
	cli_profiler_help(out, CLI_KIND_FLAGS | CLI_TARGETS);
	fprintf(out,
"  -- COMMAND ARGS          run COMMAND and profile only it, until it exits\n"
"\n"
"How:\n"
"  -d, --duration SECONDS   how long (default 10; with COMMAND: until it exits)\n");
	cli_profiler_help(out, CLI_KIND_OPTIONS | CLI_CAPS);
	fprintf(out,
"      --jvm-perfmap[=S]    ask each JVM target (JDK 17+) to write /tmp/perf-PID.map\n"
"                           (jcmd Compiler.perfmap) at start, each second for 5 s, then\n"
"                           every S s (default %d)\n"
"\n"
"Output:\n"
"  -o, --output FILE        write here; repeatable (default profile.pb.gz). The format\n"
"                           follows the name: .pb.gz/.pprof pprof, .folded/.txt folded\n"
"                           stacks, .svg flame graph. With several profilers, each file\n"
"                           name gets the profiler inserted: p.oncpu.svg, p.offcpu.svg\n"
"      --format F           force the format of every output: %s\n"
"      --weight W           folded/svg weight: samples (on-CPU), time or switches (off-CPU),\n"
"                           contentions, delay or hold (locks), calls or latency (syscalls)\n"
"      --top N              print the N hottest functions (default 15, 0: none)\n"
"      --events FILE        also write raw events as they come (read them with aperture\n"
"                           events FILE): CpuSample with --raw-samples, Syscall over\n"
"                           --syscall-threshold-us, Lock over --lock-threshold-us\n"
"  -v, --verbose            more messages (twice: libbpf debug)\n"
"      --help, --version\n", JVM_PERFMAP_DEFAULT_S, exporter_names());
}

static int parse_with(void *ctx, int argc, char **argv, const struct cli_getopt *g);

/* --weight W: "time", or the name of a value some profiler carries (samples, switches, delay, hold, ...). */
static bool weight_known(const char *weight)
{
	if (strcmp(weight, "time") == 0)
		return true;
	for (int i = 0; profilers[i]; i++)
		for (int v = 0; v < profilers[i]->schema.nvalues; v++)
			if (strcmp(weight, profilers[i]->schema.value_types[v].type) == 0)
				return true;
	return false;
}

/* Returns 0 to go on, or an exit code (0 after --help). */
static int parse_args(struct record_opts *o, int argc, char **argv)
{
	return cli_parse(argc, argv, "+d:o:v", record_options, RECORD_PROFILER_OPTIONS, parse_with, o);
}

static int parse_with(void *ctx, int argc, char **argv, const struct cli_getopt *g)
{
	struct record_opts *o = ctx;
	int c, handled;

	cli_profiler_defaults(&o->prof);
	o->top = 15;
	optind = 1;
	opterr = 0;
	while ((c = cli_getopt_next(argc, argv, g)) != -1) {
		handled = cli_profiler_option(RECORD_PROFILER_OPTIONS, c, optarg, &o->prof, o->pids, MAX_PIDS);
		if (handled < 0)
			return EXIT_USAGE;
		if (handled)
			continue;
		switch (c) {
		case 'd':
			if (!parse_u64("-d", optarg, 1, 365ull * 86400, &o->duration_s))
				return EXIT_USAGE;
			break;
		case OPT_WEIGHT:
			if (!weight_known(optarg)) {
				log_error("--weight: '%s' is not time or a profile's value (samples, switches, "
					  "contentions, delay, hold, calls, latency)", optarg);
				return EXIT_USAGE;
			}
			o->weight = optarg;
			break;
		case 'o':
			if (o->noutputs == MAX_OUTPUTS) {
				log_error("-o: at most %d outputs", MAX_OUTPUTS);
				return EXIT_USAGE;
			}
			o->outputs[o->noutputs++] = optarg;
			break;
		case OPT_FORMAT:
			if (!exporter_by_name(optarg)) {
				log_error("--format: '%s' is not one of %s", optarg, exporter_names());
				return EXIT_USAGE;
			}
			o->format = optarg;
			break;
		case OPT_EVENTS:
			o->events_path = optarg;
			o->prof.raw_events = true;
			break;
		case OPT_JVM_PERFMAP:
			o->jvm_perfmap_s = JVM_PERFMAP_DEFAULT_S;
			if (optarg && !parse_u64("--jvm-perfmap", optarg, 1, 3600, &o->jvm_perfmap_s))
				return EXIT_USAGE;
			break;
		case OPT_TOP:
			if (!parse_u64("--top", optarg, 0, 100000, &o->top))
				return EXIT_USAGE;
			break;
		case 'v':
			log_verbose++;
			break;
		case OPT_HELP:
			usage(stdout);
			return -1;
		case OPT_VERSION:
			printf("aperture %s\n", APERTURE_VERSION);
			return -1;
		default:
			if (optopt && optopt < 256)
				log_error("record: unknown or incomplete option '-%c' (see aperture record --help)", optopt);
			else
				log_error("record: unknown or incomplete option '%s' (see aperture record --help)",
					  argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	if (optind < argc)
		o->command = argv + optind;
	return 0;
}

static bool wanted(const struct record_opts *o, const struct profiler_ops *ops)
{
	return o->prof.kinds & (1u << ops->id);
}

/* "p.pb.gz" + "oncpu" -> "p.oncpu.pb.gz"; the caller frees. */
static char *path_with_kind(const char *path, const char *kind)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	const char *dot = str_ends_with(path, ".pb.gz") ? path + strlen(path) - 6 : strrchr(base, '.');
	char *out;

	if (!dot || dot == base)
		dot = path + strlen(path);
	if (asprintf(&out, "%.*s.%s%s", (int)(dot - path), path, kind, dot) < 0)
		return NULL;
	return out;
}

static const struct exporter *output_exporter(const struct record_opts *o, const char *path)
{
	return o->format ? exporter_by_name(o->format) : exporter_for_path(path);
}

static int check_outputs(struct record_opts *o)
{
	if (o->noutputs == 0)
		o->outputs[o->noutputs++] = "profile.pb.gz";
	for (int i = 0; i < o->noutputs; i++) {
		if (!output_exporter(o, o->outputs[i])) {
			log_error("-o %s: cannot tell the format from the name; use --format (%s)",
				  o->outputs[i], exporter_names());
			return EXIT_USAGE;
		}
		if (!cli_output_writable(o->outputs[i]))
			return EXIT_USAGE;
	}
	if (o->events_path && !cli_output_writable(o->events_path))
		return EXIT_USAGE;
	return 0;
}

/* Only there to end the loop's wait (wait_tick): the loop reaps the command. */
static void on_sigchld(int sig)
{
	(void)sig;
	wakeup_post();
}

/*
 * Forks COMMAND held on a pipe: it execs once the profilers are attached.
 * A second, close-on-exec pipe carries the errno of a failed exec back.
 */
static int spawn_command(struct record_run *run)
{
	/* SA_RESTART: other calls go on; the loop's wait ends on the wakeup the handler posts. */
	struct sigaction on_child = { .sa_handler = on_sigchld, .sa_flags = SA_RESTART | SA_NOCLDSTOP };
	int go[2], status[2];
	char byte;

	sigemptyset(&on_child.sa_mask);	/* the wakeup: cli_install_signals made it */
	sigaction(SIGCHLD, &on_child, NULL);	/* the command's exit ends the loop's wait */

	if (pipe2(go, O_CLOEXEC))
		return -errno;
	if (pipe2(status, O_CLOEXEC)) {
		close(go[0]);
		close(go[1]);
		return -errno;
	}
	run->child = fork();
	if (run->child < 0)
		return -errno;
	if (run->child == 0) {
		int err;

		close(go[1]);
		close(status[0]);
		if (read(go[0], &byte, 1) < 0)
			_exit(127);
		execvp(run->opts.command[0], run->opts.command);
		err = errno;
		if (write(status[1], &err, sizeof(err)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(status[1]);
	run->child_go_fd = go[1];
	run->child_status_fd = status[0];
	run->opts.pids[run->opts.prof.npids++] = run->child;
	return 0;
}

/* Lets the command exec; false (after an error) when the exec failed. */
static bool release_command(struct record_run *run)
{
	int err = 0;
	ssize_t n;

	close(run->child_go_fd);
	run->child_go_fd = -1;
	do {
		n = read(run->child_status_fd, &err, sizeof(err));
	} while (n < 0 && errno == EINTR);
	close(run->child_status_fd);
	run->child_status_fd = -1;
	if (n <= 0)
		return true;	/* EOF: the exec closed the pipe */
	log_error("cannot run %s: %s", run->opts.command[0], strerror(err));
	return false;
}

static int open_profilers(struct record_run *run)
{
	struct record_opts *o = &run->opts;
	int err = 0;

	o->prof.pids = o->pids;
	if (o->prof.npids)
		o->prof.python_codes = PYTHON_CODES_TARGETED;
	heap_keep_begin();	/* one profiler's load reuses the last one's pages */
	for (int i = 0; profilers[i]; i++) {
		struct profiler *p;

		if (!wanted(o, profilers[i]))
			continue;
		err = profiler_open(&p, &run->run, profilers[i], &o->prof);
		if (err)
			break;
		run->profs[run->nprofs] = p;
		profiler_profile_init(p, &run->profiles[run->nprofs], run->sym);
		run->nprofs++;
		err = profiler_attach(p);
		if (err)
			break;
	}
	heap_keep_end();
	return err;
}

/*
 * Without notifications aperture still works: short-lived processes may stay
 * unnamed (logged).  The raw event stream needs the ring buffer: one line, exit 1.
 */
static int open_events(struct record_run *run)
{
	int err;

	for (int i = 0; i < run->nprofs; i++)
		event_stream_add_profiler(run->stream, run->profs[i]);
	err = run_watch_events(&run->run, run->sym, run->stream ? event_stream_raw : NULL, run->stream);
	if (err && run->stream) {
		log_error("--events: cannot read the BPF ring buffer: %s", strerror(-err));
		return err;
	}
	return 0;
}

/*
 * How long the loop may wait: TICK_MS while something needs the tick (a
 * process announced in the last second, whose maps are read again; a
 * profiler that polls; the raw event stream, whose records come without a
 * wakeup), else up to @until_ns (the next snapshot, or the end).  New
 * processes wake the wait through the ring buffer; SIGINT, SIGTERM and the
 * command's SIGCHLD through the wakeup their handlers post (run_wait: even
 * one that comes between the loop's checks and the wait).  A wakeup is
 * not free: with ten a second, `perf record -p` of a record -F 99 had 36% of
 * the loader's samples in finish_task_switch.
 */
static int wait_ms(struct record_run *run, uint64_t until_ns)
{
	uint64_t now = now_ns(CLOCK_MONOTONIC);

	if (run->stream || run_needs_tick(run->profs, run->nprofs, run->sym))
		return TICK_MS;
	if (until_ns <= now)
		return 0;
	return (until_ns - now) / 1000000 + 1;
}

/* Waits @ms at most; wakes early for new processes to track. */
static int wait_tick(struct record_run *run, int ms)
{
	struct timespec tick = { ms / 1000, (ms % 1000) * 1000000L };
	int err;

	/* APERTURE_TEST_EVENTS_HOLD=PATH: unread while PATH exists, so that a test can fill the ring. */
	if (events_held())
		return nanosleep(&tick, NULL) && errno != EINTR ? -errno : 0;
	err = run_wait(&run->run, ms);
	if (err < 0) {
		log_error("reading BPF notifications: %s", strerror(-err));
		return err;
	}
	event_stream_flush(run->stream);
	return 0;
}

static int snapshot_all(struct record_run *run)
{
	for (int i = 0; i < run->nprofs; i++) {
		int err = profiler_snapshot_into(run->profs[i], &run->profiles[i]);

		if (err)
			return err;
	}
	return 0;
}

static void status_line(struct record_run *run, uint64_t now)
{
	uint64_t stats[STAT_MAX];

	fprintf(stderr, "\r[%6.1fs]", (now - run->start_ns) / 1e9);
	for (int i = 0; i < run->nprofs; i++) {
		if (profiler_stats(run->profs[i], stats))
			continue;
		fprintf(stderr, "  %s: %" PRIu64 " events, %" PRIu64 " lost",
			run->profs[i]->ops->name, stats[STAT_EVENTS], profiler_lost(stats));
	}
	fprintf(stderr, "   \b\b\b");
	fflush(stderr);
}

static bool child_exited(struct record_run *run)
{
	int status;

	if (run->child <= 0)
		return false;
	if (waitpid(run->child, &status, WNOHANG) == run->child) {
		run->child = 0;
		return true;
	}
	return false;
}

/* The profilers that follow processes (the GPU profiler's late attaches). */
static void poll_all(struct record_run *run)
{
	for (int i = 0; i < run->nprofs; i++)
		if (run->profs[i]->ops->poll)
			run->profs[i]->ops->poll(run->profs[i]);
}

static int record_loop(struct record_run *run)
{
	bool tty = isatty(STDERR_FILENO);
	uint64_t deadline = run->opts.duration_s == 0 ? UINT64_MAX :
			    run->start_ns + run->opts.duration_s * 1000000000ull;
	uint64_t next_snapshot = run->start_ns + SNAPSHOT_INTERVAL_NS;
	int err;

	while (!cli_stop) {
		uint64_t now = now_ns(CLOCK_MONOTONIC);

		if (now >= deadline || child_exited(run))
			break;
		if (now >= next_snapshot) {
			err = snapshot_all(run);
			if (err)
				return err;
			if (tty)
				status_line(run, now);
			next_snapshot += SNAPSHOT_INTERVAL_NS;
		}
		err = wait_tick(run, wait_ms(run, deadline < next_snapshot ? deadline : next_snapshot));
		if (err)
			return err;
		symbolizer_reread_young(run->sym);
		poll_all(run);
	}
	if (tty)
		fputc('\n', stderr);
	if (run->run.events)	/* the last raw events */
		ring_buffer__consume(run->run.events);
	return snapshot_all(run);
}

/* The Python frames' naming, when there were any. */
static void report_python(struct record_run *run)
{
	struct sym_usage usage;

	symbolizer_usage(run->sym, &usage);
	if (usage.py_named || usage.py_unnamed)
		fprintf(stderr, "aperture: python: %" PRIu64 " code objects named, %" PRIu64
			" frames unnamed (code object unreadable or replaced)\n", usage.py_named, usage.py_unnamed);
}

/* What the heap holds at the end, by holder, with the profiles still built (usage.h). */
static void report_memory(struct record_run *run)
{
	struct usage_line line = { .len = 0 };
	uint64_t rss_kib, fds;
	size_t build_peak;

	usage_run_memory(&line, run->sym, &run->run, run->profiles, run->nprofs, &build_peak);
	usage_process(&rss_kib, &fds);
	fprintf(stderr, "aperture: %s; the largest unwind table built %zu (freed); rss %" PRIu64 " KiB\n",
		line.text, build_peak >> 10, rss_kib);
}

static void report_stats(struct record_run *run)
{
	uint64_t stats[STAT_MAX];

	for (int i = 0; i < run->nprofs; i++) {
		struct profiler *p = run->profs[i];
		char detail[512] = "";
		size_t len = 0;

		if (profiler_stats(p, stats))
			continue;
		for (int s = STAT_EVENTS + 1; s < STAT_MAX; s++) {
			if (!stats[s])
				continue;
			len += snprintf(detail + len, sizeof(detail) - len, "%s%s: %" PRIu64,
					len ? ", " : "", stat_names[s], stats[s]);
			if (len >= sizeof(detail))
				break;
		}
		fprintf(stderr, "aperture: %s: %" PRIu64 " %s, %" PRIu64 " lost%s%s%s\n",
			p->ops->name, p->drained_events, p->ops->schema.value_types[0].type,
			profiler_lost(stats), len ? " (" : "", detail, len ? ")" : "");
		if (i == 0)	/* the first profiler's line: it loaded the run's tables */
			run_unwind_report(&run->run, stderr);
	}
	report_python(run);
	report_memory(run);
	if (run->jvm) {
		jvm_perfmap_stop(run->jvm);	/* its counts are final */
		jvm_perfmap_report(run->jvm);
	}
}

static int tgid_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* How many processes have samples in any profile. */
static size_t processes_sampled(const struct record_run *run)
{
	size_t n = 0, distinct = 0;
	uint32_t *tgids;

	for (int i = 0; i < run->nprofs; i++)
		n += run->profiles[i].nsamples;
	tgids = calloc_logged(n ? n : 1, sizeof(*tgids));
	if (!tgids)
		return 0;
	n = 0;
	for (int i = 0; i < run->nprofs; i++)
		for (size_t s = 0; s < run->profiles[i].nsamples; s++)
			tgids[n++] = run->profiles[i].samples[s].tgid;
	qsort(tgids, n, sizeof(*tgids), tgid_cmp);
	for (size_t i = 0; i < n; i++)
		distinct += i == 0 || tgids[i] != tgids[i - 1];
	free(tgids);
	return distinct;
}

/*
 * Who was profiled, with -p or COMMAND: the processes named, the children
 * the kernel followed at fork, those a full target set left out, and how
 * many of them all have samples.
 */
static void report_processes(struct record_run *run)
{
	uint64_t stats[STAT_MAX], children = 0, left_out = 0;
	int named = run->opts.prof.npids;
	bool followed = false;
	char why[128];

	if (!named)
		return;	/* every process */
	for (int i = 0; i < run->nprofs; i++) {
		followed |= run->profs[i]->follows_children;
		if (profiler_stats(run->profs[i], stats))
			continue;
		children += stats[STAT_CHILDREN];
		left_out += stats[STAT_CHILDREN_FULL];
	}
	if (!followed) {
		fprintf(stderr, "aperture: profiled %d process%s, %zu with samples (children not followed: %s)\n",
			named, named == 1 ? "" : "es", processes_sampled(run),
			run->opts.prof.no_children ? "--no-children" :
			feature_missing(FEAT_TP_SCHED_FORK, why, sizeof(why)));
		return;
	}
	fprintf(stderr, "aperture: profiled %" PRIu64 " process%s (%d named + %" PRIu64 " children), %zu with "
		"samples", named + children, named + children == 1 ? "" : "es", named, children,
		processes_sampled(run));
	if (left_out)
		fprintf(stderr, "; %" PRIu64 " children not profiled (target set full)", left_out);
	fputc('\n', stderr);
}

/* What the symbolizer would not read of the profiled processes' files (after the outputs named the frames). */
static void report_refusals(const struct symbolizer *sym)
{
	struct sym_usage u;

	symbolizer_usage(sym, &u);
	if (u.files_refused || u.perf_maps_refused)
		log_warn("symbols: refused %" PRIu64 " perf maps (not a regular file, over 256 MiB, or not owned by "
			 "the process's user or root) and %" PRIu64 " mapped files (not the file mapped, not regular, "
			 "or over 4 GiB): their frames are unnamed", u.perf_maps_refused, u.files_refused);
}

/* Index of the value --weight names in @prof, or its default. */
static int weight_index(const struct profile *prof, const char *weight)
{
	if (!weight)
		return prof->default_value;
	for (int i = 0; i < prof->nvalues; i++) {
		if (strcmp(weight, prof->value_types[i].type) == 0)
			return i;
		if (strcmp(weight, "time") == 0 && strcmp(prof->value_types[i].unit, "nanoseconds") == 0)
			return i;
	}
	return prof->default_value;
}

static int write_outputs(struct record_run *run)
{
	struct record_opts *o = &run->opts;
	int err = 0;

	for (int i = 0; i < run->nprofs; i++) {
		struct profile *prof = &run->profiles[i];
		struct export_opts eo = { .value_index = weight_index(prof, o->weight) };

		for (int k = 0; k < o->noutputs; k++) {
			const struct exporter *ex = output_exporter(o, o->outputs[k]);
			char *path = run->nprofs > 1 ? path_with_kind(o->outputs[k], prof->kind) :
						       strdup_logged(o->outputs[k]);

			if (!path)
				return -ENOMEM;
			if (ex->write(prof, path, &eo))
				err = -EIO;
			else
				fprintf(stderr, "aperture: wrote %s (%s, %zu stacks)\n", path, ex->name,
					prof->nsamples);
			free(path);
		}
	}
	return err;
}

struct leaf_weight {
	const char *name;
	uint64_t weight;
};

static int leaf_cmp(const void *a, const void *b)
{
	return strcmp(((const struct leaf_weight *)a)->name, ((const struct leaf_weight *)b)->name);
}

struct leaf_table {
	struct leaf_weight *rows;
	size_t count;
};

static void collect_leaf(const void *node, VISIT which, void *arg)
{
	struct leaf_table *table = arg;

	if (which == postorder || which == leaf)
		table->rows[table->count++] = **(struct leaf_weight *const *)node;
}

static int by_weight_desc(const void *a, const void *b)
{
	uint64_t x = ((const struct leaf_weight *)a)->weight, y = ((const struct leaf_weight *)b)->weight;

	return x < y ? 1 : x > y ? -1 : 0;
}

/*
 * What a top list ranks by: the leaf, except for off-CPU time, whose kernel
 * leaf is always the scheduler: there the innermost user frame says who waits.
 */
static const char *top_frame_name(const struct profile *prof, const struct profile_sample *s)
{
	if (s->nkernel + s->nuser == 0)
		return "[no stack]";
	if (prof->top_by_user_leaf && s->nuser)
		return s->frames[s->nkernel].sym.name;
	return s->frames[0].sym.name;
}

/* The hottest leaf functions of one profile, on stdout. */
static void print_top(const struct profile *prof, int value_index, size_t top)
{
	uint64_t total = profile_total(prof, value_index);
	struct leaf_table table = { 0 };
	void *root = NULL;
	size_t distinct = 0;

	if (!top || !total)
		return;
	for (size_t i = 0; i < prof->nsamples; i++) {
		const struct profile_sample *s = &prof->samples[i];
		struct leaf_weight probe = { .name = top_frame_name(prof, s) };
		struct leaf_weight **slot = tsearch(&probe, &root, leaf_cmp);

		if (!slot)
			goto cleanup;
		if (*slot == &probe) {
			*slot = malloc(sizeof(**slot));
			if (!*slot) {
				tdelete(&probe, &root, leaf_cmp);
				goto cleanup;
			}
			**slot = probe;
			distinct++;
		}
		(*slot)->weight += s->values[value_index];
	}
	table.rows = calloc_logged(distinct, sizeof(*table.rows));
	if (!table.rows)
		goto cleanup;
	twalk_r(root, collect_leaf, &table);
	qsort(table.rows, table.count, sizeof(*table.rows), by_weight_desc);
	printf("%s: top %zu functions by %s %s\n", prof->title, top < table.count ? top : table.count,
	       prof->top_by_user_leaf ? "innermost user frame," : "self", prof->value_types[value_index].type);
	for (size_t i = 0; i < top && i < table.count; i++)
		printf("  %6.2f%%  %12" PRIu64 "  %s\n", 100.0 * table.rows[i].weight / total,
		       table.rows[i].weight, table.rows[i].name);
	free(table.rows);
cleanup:
	tdestroy(root, free);
}

static void run_cleanup(struct record_run *run)
{
	event_stream_close(run->stream);	/* after an error: what was written stays */
	for (int i = 0; i < run->nprofs; i++) {
		profiler_close(run->profs[i]);
		profile_free(&run->profiles[i]);
	}
	run_close(&run->run);
	if (run->child_go_fd >= 0)
		close(run->child_go_fd);
	if (run->child_status_fd >= 0)
		close(run->child_status_fd);
	if (run->child > 0) {
		kill(run->child, SIGTERM);
		waitpid(run->child, NULL, 0);
	}
	symbolizer_free(run->sym);
	jvm_perfmap_free(run->jvm);
}

int record_main(int argc, char **argv)
{
	struct record_run run = {
		.child_go_fd = -1, .child_status_fd = -1,
	};
	struct record_opts *o = &run.opts;
	int err;

	run_init(&run.run);
	err = parse_args(o, argc, argv);
	if (err)
		return err < 0 ? 0 : err;
	if (o->command && o->prof.npids) {
		log_error("give either -p or a command, not both");
		return EXIT_USAGE;
	}
	if (!o->command && !o->duration_s)
		o->duration_s = 10;
	if (!cli_profiler_check(&o->prof))
		return EXIT_USAGE;
	err = check_outputs(o);
	if (err)
		return err;
	if (!cli_check_environment())
		return EXIT_RUNTIME;
	cli_libbpf_logging();
	cli_install_signals();
	run.sym = symbolizer_new(&o->prof.symbols);
	if (!run.sym)
		return EXIT_RUNTIME;
	if (o->command && spawn_command(&run)) {
		log_error("cannot start %s: %s", o->command[0], strerror(errno));
		err = EXIT_RUNTIME;
		goto cleanup;
	}
	if (open_profilers(&run)) {
		err = EXIT_RUNTIME;
		goto cleanup;
	}
	if (o->events_path && !(run.stream = event_stream_open(o->events_path, run.sym))) {
		err = EXIT_RUNTIME;
		goto cleanup;
	}
	if (open_events(&run)) {
		err = EXIT_RUNTIME;
		goto cleanup;
	}
	run.start_ns = now_ns(CLOCK_MONOTONIC);
	for (int i = 0; i < run.nprofs; i++)
		run.profiles[i].time_ns = now_ns(CLOCK_REALTIME);
	if (run.child_go_fd >= 0 && !release_command(&run)) {
		waitpid(run.child, NULL, 0);
		run.child = 0;
		err = EXIT_RUNTIME;
		goto cleanup;
	}
	/* After the attach: the code the JVM compiled so far is named from the first sample. */
	if (o->jvm_perfmap_s &&
	    !(run.jvm = jvm_perfmap_start((unsigned int)o->jvm_perfmap_s, o->pids, o->prof.npids, false))) {
		err = EXIT_RUNTIME;
		goto cleanup;
	}
	err = record_loop(&run) ? EXIT_RUNTIME : 0;
	for (int i = 0; i < run.nprofs; i++)
		run.profiles[i].duration_ns = now_ns(CLOCK_MONOTONIC) - run.start_ns;
	report_stats(&run);
	report_processes(&run);
	if (event_stream_close(run.stream))
		err = EXIT_RUNTIME;
	run.stream = NULL;
	if (write_outputs(&run))
		err = EXIT_RUNTIME;
	for (int i = 0; i < run.nprofs; i++)
		if (run.profs[i]->ops->report)
			run.profs[i]->ops->report(run.profs[i], &run.profiles[i], (unsigned int)o->top, stdout);
		else
			print_top(&run.profiles[i], weight_index(&run.profiles[i], o->weight), o->top);
	report_refusals(run.sym);
cleanup:
	run_cleanup(&run);
	return err;
}
