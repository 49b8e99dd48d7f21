// SPDX-License-Identifier: GPL-2.0
/* aperture's main(): dispatches to a command (record, run, dump, doctor, events), nothing more. */
#include <stdio.h>
#include <string.h>
#include "agent.h"
#include "cli.h"
#include "config.h"
#include "daemon.h"
#include "doctor.h"
#include "dump.h"
#include "events.h"
#include "record.h"
#include "util.h"


/* `run --oap` (or oap = in its --config file) is the SkyWalking agent; without it, the local pinned daemon. */
static int run_main(int argc, char **argv)
{
	return config_sets(argc, argv, "oap") ? agent_main(argc, argv) : daemon_main(argc, argv);
}

struct command {
	const char *name;
	int (*main)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
	{ "record", record_main, "profile for a while, write pprof / folded / SVG files" },
	{ "run", run_main, "daemon: pinned maps for bpftool/cat, or serve SkyWalking OAP tasks (--oap)" },
	{ "dump", dump_main, "print a pinned daemon's totals as folded stacks" },
	{ "events", events_main, "decode a raw event stream (record --events FILE) as JSON lines" },
	{ "doctor", doctor_main, "what this kernel lets aperture do, and why not" },
};

static void usage(FILE *out)
{
	fprintf(out, "Usage: aperture COMMAND [OPTIONS]\n\nCommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\nAPERTURE COMMAND --help tells more.  aperture --version prints the version.\n");
}

int main(int argc, char **argv)
{
	heap_defaults();
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
		printf("aperture %s\n", APERTURE_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(argv[1], commands[i].name))
			continue;
		return commands[i].main(argc - 1, argv + 1);
	}
	log_error("unknown command '%s' (try aperture --help)", argv[1]);
	return EXIT_USAGE;
}
