// SPDX-License-Identifier: GPL-2.0
/*
 * `aperture run` options, --help and the OAP token.  The token is never
 * taken from the command line (it would show in ps).
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "agent_opts.h"
#include "cli.h"
#include "jvm_perfmap.h"
#include "skywalking.h"
#include "util.h"

enum {
	OPT_OAP = 256, OPT_TOKEN_FILE, OPT_TOKEN, OPT_EXE, OPT_CGROUP, OPT_SERVICE, OPT_INSTANCE,
	OPT_HEARTBEAT, OPT_TASK, OPT_FLUSH, OPT_REPORT_EVERY, OPT_SPOOL, OPT_DEADLINE,
	OPT_RECONNECT, OPT_PIN, OPT_LAYER, OPT_LABEL, OPT_EXE_LABEL, OPT_STATE_DIR, OPT_JVM_PERFMAP,
};

/* TLS to the OAP, as SkyWalking Rover's reporter.grpc.tls options (codes of 300 up are the profilers'). */
enum { OPT_TLS = 280, OPT_CA, OPT_CERT, OPT_KEY, OPT_SKIP_VERIFY };
/* SkyWalking continuous profiling (agent_continuous.c). */
enum { OPT_CONTINUOUS = 290, OPT_CONT_TASK, OPT_CONT_SILENCE };

static const struct option agent_options[] = {
	{ "oap", required_argument, NULL, OPT_OAP },
	{ "token-file", required_argument, NULL, OPT_TOKEN_FILE },
	{ "token", required_argument, NULL, OPT_TOKEN },
	{ "pid", required_argument, NULL, 'p' },
	{ "exe-pattern", required_argument, NULL, OPT_EXE },
	{ "cgroup", required_argument, NULL, OPT_CGROUP },
	{ "service", required_argument, NULL, OPT_SERVICE },
	{ "instance", required_argument, NULL, OPT_INSTANCE },
	{ "layer", required_argument, NULL, OPT_LAYER },
	{ "label", required_argument, NULL, OPT_LABEL },
	{ "exe-label", required_argument, NULL, OPT_EXE_LABEL },
	{ "heartbeat-interval", required_argument, NULL, OPT_HEARTBEAT },
	{ "task-interval", required_argument, NULL, OPT_TASK },
	{ "flush-interval", required_argument, NULL, OPT_FLUSH },
	{ "report-every", required_argument, NULL, OPT_REPORT_EVERY },
	{ "spool-size", required_argument, NULL, OPT_SPOOL },
	{ "deadline", required_argument, NULL, OPT_DEADLINE },
	{ "reconnect-max", required_argument, NULL, OPT_RECONNECT },
	{ "pin", required_argument, NULL, OPT_PIN },
	{ "state-dir", required_argument, NULL, OPT_STATE_DIR },
	{ "jvm-perfmap", optional_argument, NULL, OPT_JVM_PERFMAP },
	{ "tls", no_argument, NULL, OPT_TLS },
	{ "ca", required_argument, NULL, OPT_CA },
	{ "cert", required_argument, NULL, OPT_CERT },
	{ "key", required_argument, NULL, OPT_KEY },
	{ "insecure-skip-verify", no_argument, NULL, OPT_SKIP_VERIFY },
	{ "continuous", no_argument, NULL, OPT_CONTINUOUS },
	{ "continuous-task", required_argument, NULL, OPT_CONT_TASK },
	{ "continuous-silence", required_argument, NULL, OPT_CONT_SILENCE },
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
"      --oap HOST:PORT        the OAP's gRPC address (plaintext HTTP/2 unless --tls)\n"
"      --token-file FILE      authentication token (else $APERTURE_OAP_TOKEN)\n"
"      --service NAME         service name (default: the host name); give the name an\n"
"                             instrumented service reports (its agent's service name)\n"
"                             to see profiling next to that service's traces\n"
"      --instance NAME        instance name (default: the process name)\n"
"      --layer LAYER          the service's layer (default GENERAL: the General Service\n"
"                             dashboard has the eBPF profiling tab; OS_LINUX has none)\n"
"      --label LABEL          a label of every process (repeatable; a plain string such\n"
"                             as env=prod): tasks created for some labels only reach\n"
"                             processes with all of them\n"
"      --exe-label GLOB=LABEL the label of the processes GLOB matches, as --exe-pattern\n"
"                             does (repeatable; the GLOB is up to the first '=')\n"
"      --heartbeat-interval S keepAlive period (default 20); every --report-every N-th (10)\n"
"                             heartbeat re-reports every process\n"
"      --task-interval S      queryTasks period (default 10)\n"
"      --flush-interval S     profiling data upload period (default 5)\n"
"      --spool-size BYTES     data kept while the OAP is unreachable (default 16M)\n"
"      --state-dir DIR        the ledger: tasks and unacknowledged uploads survive a crash\n"
"                             (default $APERTURE_STATE_DIR or /var/lib/aperture)\n"
"      --deadline S           per-call deadline (default 10)\n"
"      --reconnect-max S      reconnect backoff cap (default 30)\n\n"
"TLS (an OAP with gRPCSslEnabled; each option below implies --tls):\n"
"      --tls                  TLS 1.2 with ALPN h2; the OAP's certificate must be for the\n"
"                             HOST of --oap and signed by a CA of the system's bundle\n"
"      --ca FILE              ... or by this CA (PEM)\n"
"      --cert FILE --key FILE client certificate and its key (PEM), for mutual TLS\n"
"      --insecure-skip-verify do not check the OAP's certificate (tests only)\n\n"
"Continuous profiling (SkyWalking's policies, set on a service in the OAP UI):\n"
"      --continuous           query the policies of the selected processes' services (every\n"
"                             --task-interval), check them every second (process CPU %%,\n"
"                             thread count, system load; not the HTTP ones), and when one\n"
"                             trips, report it and run the task the OAP answers with\n"
"      --continuous-task S    how long that task runs (default 600, as Rover's)\n"
"      --continuous-silence S no new task for the same process and kind within S of the\n"
"                             last one's start (default 1200, as Rover's)\n\n"
"Profiling (each profiler's options, for the tasks it serves).  OFF_CPU tasks count\n"
"every switch out as SkyWalking Rover does: --state all --min-block-us 0 unless given.\n");
	cli_profiler_help(out, CLI_KIND_OPTIONS);
	fprintf(out,
"      --jvm-perfmap[=S]      ask each JVM among the running tasks' processes (JDK 17+) to\n"
"                             write /tmp/perf-PID.map (Java method names), at the task's\n"
"                             start, each second for 5 s, then every S s (default %d)\n",
		JVM_PERFMAP_DEFAULT_S);
	fprintf(out, "\nCaps (SIGUSR1 and every heartbeat: a stats line with each one's use):\n");
	cli_profiler_help(out, CLI_CAPS);
	fprintf(out,
"\n"
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

/* The first line of @path, surrounding white space removed. */
static char *read_token_file(const char *path)
{
	char buf[4096], *start, *end;
	ssize_t n = read_small_file(path, buf, sizeof(buf));

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

static bool set_layer(struct agent_opts *o, const char *arg)
{
	if (!sw_layer_known(arg)) {
		log_error("--layer %s: not a layer of the OAP (%s)", arg, sw_layer_names());
		return false;
	}
	o->layer = arg;
	return true;
}

/*
 * The OAP keeps a process's labels as a JSON list in a 500-character column
 * (ProcessTraffic.labels_json) and matches tasks' labels exactly.
 */
#define LABELS_JSON_MAX 500

/* The JSON list of the most labels a process can have: every --label and every --exe-label. */
static size_t labels_json_len(const struct agent_opts *o)
{
	size_t len = 2;		/* [] */

	for (int i = 0; i < o->nlabels; i++)
		len += strlen(o->labels[i]) + 3;	/* "label" and a comma */
	for (int i = 0; i < o->nexe_labels; i++)
		len += strlen(o->exe_labels[i].label) + 3;
	return len;
}

static bool label_ok(const char *opt, const char *label)
{
	if (!*label || strpbrk(label, "\"\\")) {
		log_error("%s '%s': want a non-empty label without quotes or backslashes", opt, label);
		return false;
	}
	return true;
}

static bool labels_fit(const char *opt, const struct agent_opts *o)
{
	if (labels_json_len(o) > LABELS_JSON_MAX) {
		log_error("%s: the labels take more than the OAP's %d characters", opt, LABELS_JSON_MAX);
		return false;
	}
	return true;
}

static bool add_label(struct agent_opts *o, const char *arg)
{
	if (!label_ok("--label", arg))
		return false;
	if (o->nlabels == MAX_SELECT) {
		log_error("--label: at most %d", MAX_SELECT);
		return false;
	}
	o->labels[o->nlabels++] = arg;
	return labels_fit("--label", o);
}

static bool add_exe_label(struct agent_opts *o, const char *arg)
{
	const char *eq = strchr(arg, '=');

	if (!eq || eq == arg) {
		log_error("--exe-label '%s': want GLOB=LABEL", arg);
		return false;
	}
	if (!label_ok("--exe-label", eq + 1))
		return false;
	if (eq - arg >= PATH_MAX) {
		log_error("--exe-label: the glob is longer than %d", PATH_MAX - 1);
		return false;
	}
	if (o->nexe_labels == MAX_SELECT) {
		log_error("--exe-label: at most %d", MAX_SELECT);
		return false;
	}
	o->exe_labels[o->nexe_labels++] = (struct exe_label){ arg, (size_t)(eq - arg), eq + 1 };
	return labels_fit("--exe-label", o);
}

/*
 * SkyWalking Rover counts every switch out of a profiled process, preemption
 * included, with no minimum (bpf/profiling/offcpu.c, a kprobe on
 * finish_task_switch): OFF_CPU tasks mean that across agents.  Set through
 * the profiler's own options, before the command line, which may narrow it.
 */
static const struct { const char *profiler, *option, *value; } rover_defaults[] = {
	{ "offcpu", "state", "all" },
	{ "offcpu", "min-block-us", "0" },
};

static void apply_rover_defaults(struct agent_opts *o)
{
	for (size_t d = 0; d < sizeof(rover_defaults) / sizeof(rover_defaults[0]); d++) {
		for (int k = 0; profilers[k]; k++) {
			const struct profiler_option *po = profilers[k]->cli.options;

			if (strcmp(profilers[k]->name, rover_defaults[d].profiler))
				continue;
			for (int i = 0; po && po[i].name; i++)
				if (!strcmp(po[i].name, rover_defaults[d].option))
					po[i].parse(rover_defaults[d].value, profiler_config(&o->prof, profilers[k]));
		}
	}
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

/* The TLS files exist and go together; they are parsed when the channel is made. */
static bool check_tls(const struct tls_opts *t)
{
	const char *files[][2] = { { "--ca", t->ca_file }, { "--cert", t->cert_file }, { "--key", t->key_file } };

	if (!t->cert_file != !t->key_file) {
		log_error("run: --cert and --key go together (mutual TLS)");
		return false;
	}
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		if (files[i][1] && access(files[i][1], R_OK)) {
			log_error("%s %s: %s", files[i][0], files[i][1], strerror(errno));
			return false;
		}
	}
	if (t->skip_verify)
		log_warn("--insecure-skip-verify: the OAP's certificate is not checked; anyone between can read and change the data");
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
	if (!check_tls(&o->tls))
		return EXIT_USAGE;
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

static int parse_with(void *ctx, int argc, char **argv, const struct cli_getopt *g)
{
	struct agent_opts *o = ctx;
	const char *token_file = NULL;
	int c, n;

	*o = (struct agent_opts){
		.heartbeat_ms = 20000, .task_ms = 10000, .flush_ms = 5000, .deadline_ms = 10000,
		.backoff_max_ms = 30000, .report_every = 10, .spool_bytes = 16u << 20,
		.continuous_task_s = 600, .continuous_silence_s = 1200,
	};
	o->layer = SW_LAYER_DEFAULT;
	o->state_dir = getenv("APERTURE_STATE_DIR") ?: STATE_DIR_DEFAULT;
	cli_profiler_defaults(&o->prof);
	o->prof.gc_stacks = true;	/* every flush drains the counts */
	/*
	 * A task is for one process entity, as Rover's: a child the process
	 * starts is not part of its data (README, "Children").
	 */
	o->prof.no_children = true;
	apply_rover_defaults(o);
	optind = 1;
	opterr = 0;
	while ((c = cli_getopt_next(argc, argv, g)) != -1) {
		bool ok = true;

		n = cli_profiler_option(CLI_KIND_OPTIONS | CLI_CAPS, c, optarg, &o->prof, NULL, 0);
		if (n < 0)
			return EXIT_USAGE;
		if (n)
			continue;
		switch (c) {
		case OPT_OAP: o->oap = optarg; break;
		case OPT_PIN: o->pin_dir = optarg; break;
		case OPT_STATE_DIR: o->state_dir = optarg; break;
		case OPT_JVM_PERFMAP:
			o->jvm_perfmap_s = JVM_PERFMAP_DEFAULT_S;
			ok = !optarg || parse_u64("--jvm-perfmap", optarg, 1, 3600, &o->jvm_perfmap_s);
			break;
		case OPT_TLS: o->tls.enabled = true; break;
		case OPT_CA: o->tls.enabled = true; o->tls.ca_file = optarg; break;
		case OPT_CERT: o->tls.enabled = true; o->tls.cert_file = optarg; break;
		case OPT_KEY: o->tls.enabled = true; o->tls.key_file = optarg; break;
		case OPT_SKIP_VERIFY: o->tls.enabled = o->tls.skip_verify = true; break;
		case OPT_CONTINUOUS: o->continuous = true; break;
		case OPT_CONT_TASK: ok = parse_u64("--continuous-task", optarg, 1, 86400, &o->continuous_task_s); break;
		case OPT_CONT_SILENCE:
			ok = parse_u64("--continuous-silence", optarg, 0, 86400, &o->continuous_silence_s);
			break;
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
		case OPT_LAYER: ok = set_layer(o, optarg); break;
		case OPT_LABEL: ok = add_label(o, optarg); break;
		case OPT_EXE_LABEL: ok = add_exe_label(o, optarg); break;
		case OPT_HEARTBEAT: ok = parse_seconds("--heartbeat-interval", optarg, &o->heartbeat_ms); break;
		case OPT_TASK: ok = parse_seconds("--task-interval", optarg, &o->task_ms); break;
		case OPT_FLUSH: ok = parse_seconds("--flush-interval", optarg, &o->flush_ms); break;
		case OPT_DEADLINE: ok = parse_seconds("--deadline", optarg, &o->deadline_ms); break;
		case OPT_RECONNECT: ok = parse_seconds("--reconnect-max", optarg, &o->backoff_max_ms); break;
		case OPT_REPORT_EVERY: ok = parse_u64("--report-every", optarg, 1, 1000000, &o->report_every); break;
		case OPT_SPOOL: ok = parse_size("--spool-size", optarg, &o->spool_bytes); break;
		case 'd': ok = parse_u64("-d", optarg, 1, 365ull * 86400, &o->duration_s); break;
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
int opts_parse(struct agent_opts *o, int argc, char **argv)
{
	return cli_parse(argc, argv, "+p:d:vh", agent_options, CLI_KIND_OPTIONS | CLI_CAPS, parse_with, o);
}

void opts_free_token(struct agent_opts *o)
{
	if (o->token) {
		memset(o->token, 0, strlen(o->token));
		free(o->token);
	}
	o->token = NULL;
}

