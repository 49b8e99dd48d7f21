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
	bool want[PROFILER_MAX];
};

enum { OPT_PIN = 256, OPT_UNPIN, OPT_RESET, OPT_ONCPU, OPT_OFFCPU, OPT_HELP };

static const struct option long_options[] = {
	CLI_PROFILER_LONG_OPTIONS,
	{ "pin", required_argument, NULL, OPT_PIN },
	{ "unpin", no_argument, NULL, OPT_UNPIN },
	{ "reset", no_argument, NULL, OPT_RESET },
	{ "oncpu", no_argument, NULL, OPT_ONCPU },
	{ "offcpu", no_argument, NULL, OPT_OFFCPU },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

static void usage(FILE *out)
{
	fprintf(out,
"Usage: aperture run [--pin DIR] [--oncpu] [--offcpu] [-F HZ] [-p PID,...] [--cgroup PATH]\n"
"       aperture run --unpin [--pin DIR]\n"
"       aperture run --reset [--pin DIR]\n"
"       aperture run --oap HOST:PORT ...   (SkyWalking agent: aperture run --oap x --help)\n"
"\n"
"Without --oap, profile continuously with everything pinned under DIR (default %s):\n"
"the BPF programs keep counting without the loader; read them with `cat DIR/oncpu_folded`,\n"
"steer them through DIR/control and DIR/target_pids (tools/aperture-ctl). Started again, it\n"
"takes over what is pinned instead of loading anew. Ctrl-C / SIGTERM leaves the pins in place.\n"
"  --oncpu, --offcpu     which profilers (default both)\n"
"  -F HZ                 on-CPU frequency (default 99)\n"
"  -p PID[,PID...]       initial target set (default: every process)\n"
"  --cgroup PATH         only tasks of this cgroup v2 directory\n"
"  --min-block-us N, --max-block-us N, --state S, -U, -K, --include-idle: as for record\n"
"  --unpin               detach and remove everything pinned under DIR, then exit\n"
"  --reset               empty the pinned totals and stacks (the maps fill up over time), then exit\n", PIN_DEFAULT_DIR);
}

static int parse_args(struct daemon_opts *o, int argc, char **argv)
{
	int c, handled;

	o->dir = PIN_DEFAULT_DIR;
	cli_profiler_defaults(&o->prof);
	o->prof.keep_totals = true;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, CLI_PROFILER_SHORT "v", long_options, NULL)) != -1) {
		handled = cli_profiler_option(c, optarg, &o->prof, o->pids, MAX_PIDS);
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
		case OPT_ONCPU:
			o->want[PROFILER_ONCPU] = true;
			break;
		case OPT_OFFCPU:
			o->want[PROFILER_OFFCPU] = true;
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
	if (!cli_profiler_check(&o->prof))
		return EXIT_USAGE;
	if (!o->want[PROFILER_ONCPU] && !o->want[PROFILER_OFFCPU])
		o->want[PROFILER_ONCPU] = o->want[PROFILER_OFFCPU] = true;
	o->prof.pids = o->pids;
	return 0;
}

int daemon_main(int argc, char **argv)
{
	struct profiler_shared shared = PROFILER_SHARED_INIT;
	const struct profiler_ops *ops[PROFILER_MAX];
	struct profiler *profs[PROFILER_MAX] = {};
	struct daemon_opts o = {};
	int err, nprofs = 0;

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
		if (o.want[profilers[i]->id])
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
