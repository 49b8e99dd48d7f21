// SPDX-License-Identifier: GPL-2.0
/*
 * The local pinned daemon.  It loads the profilers (or takes over the ones a
 * previous daemon pinned, which kept counting meanwhile), pins them and then
 * has nothing to do: the BPF programs aggregate into the pinned totals, the
 * control map steers them, iterators print them.  Nothing is drained here,
 * so a restart, even after kill -9, cannot lose or double-count anything.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cli.h"
#include "daemon.h"
#include "pin.h"
#include "profiler.h"
#include "util.h"

#define MAX_PIDS 256

struct daemon_opts {
	struct profiler_opts prof;
	uint32_t pids[MAX_PIDS];
	const char *dir;
	bool unpin;
	bool reset;
};

enum { OPT_PIN = 256, OPT_UNPIN, OPT_RESET, OPT_HELP };

#define DAEMON_PROFILER_OPTIONS (CLI_TARGETS | CLI_KIND_FLAGS | CLI_KIND_OPTIONS)

static const struct option daemon_options[] = {
	{ "pin", required_argument, NULL, OPT_PIN },
	{ "unpin", no_argument, NULL, OPT_UNPIN },
	{ "reset", no_argument, NULL, OPT_RESET },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
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
"takes over what is pinned instead of loading anew. Ctrl-C / SIGTERM leaves the pins in place.\n"
"\n"
"Profilers (default: all but the opt-in ones:", PIN_DEFAULT_DIR);
	for (int i = 0; profilers[i]; i++)
		if (profilers[i]->opt_in)
			fprintf(out, " --%s", profilers[i]->name);
	fprintf(out, "):\n");
	cli_profiler_help(out, CLI_KIND_FLAGS);
	fprintf(out, "\nWhat and how (the initial target set; default every process):\n");
	cli_profiler_help(out, CLI_TARGETS | CLI_KIND_OPTIONS);
	fprintf(out,
"\n"
"      --pin DIR            the pin directory (bpffs)\n"
"      --unpin              detach and remove everything pinned under DIR, then exit\n"
"      --reset              empty the pinned totals and stacks (the maps fill up over time), then exit\n"
"  -v, --verbose            more messages\n");
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
	cli_profiler_defaults(&o->prof);
	o->prof.keep_totals = true;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, g->shorts, g->opts, NULL)) != -1) {
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
			if (!profilers[i]->opt_in)
				o->prof.kinds |= 1u << profilers[i]->id;
	if (!cli_profiler_check(&o->prof))
		return EXIT_USAGE;
	o->prof.pids = o->pids;
	return 0;
}

int daemon_main(int argc, char **argv)
{
	struct profiler_shared shared;
	const struct profiler_ops *ops[PROFILER_MAX];
	struct profiler *profs[PROFILER_MAX] = {};
	struct daemon_opts o = {};
	int err, nprofs = 0;

	profiler_shared_init(&shared);
	err = parse_args(&o, argc, argv);
	if (err)
		return err < 0 ? 0 : err;
	if (!cli_check_environment())
		return EXIT_RUNTIME;
	if (o.reset) {
		err = pin_reset(o.dir);
		if (!err)
			fprintf(stderr, "aperture: emptied the totals and stacks pinned under %s\n", o.dir);
		return err ? EXIT_RUNTIME : 0;
	}
	if (o.unpin) {
		err = pin_remove_all(o.dir);
		if (!err)
			fprintf(stderr, "aperture: removed everything pinned under %s\n", o.dir);
		return err ? EXIT_RUNTIME : 0;
	}
	cli_libbpf_logging();
	cli_install_signals();
	o.prof.shared = &shared;
	for (int i = 0; profilers[i]; i++)
		if (o.prof.kinds & (1u << profilers[i]->id))
			ops[nprofs++] = profilers[i];
	err = pin_start(o.dir, ops, nprofs, &o.prof, profs);
	if (err)
		goto cleanup;
	fprintf(stderr, "aperture: profiling; pinned under %s (aperture dump --pin %s)\n", o.dir, o.dir);
	while (!cli_stop)
		pause();
	fprintf(stderr, "aperture: stopped; the programs keep running pinned under %s "
		"(`aperture run --unpin --pin %s` removes them)\n", o.dir, o.dir);
cleanup:
	for (int i = 0; i < nprofs; i++)
		profiler_close(profs[i]);
	profiler_shared_close(&shared);
	return err ? EXIT_RUNTIME : 0;
}
