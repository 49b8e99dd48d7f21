// SPDX-License-Identifier: GPL-2.0
/* aperture: an eBPF profiler.  main() only dispatches to a command. */
#include <stdio.h>
#include <string.h>
#include "cli.h"
#include "daemon.h"
#include "doctor.h"
#include "dump.h"
#include "record.h"
#include "util.h"

/* Commands living in optional modules resolve to NULL when not linked. */
int agent_main(int argc, char **argv) __attribute__((weak));

/* `run --oap` is the SkyWalking agent; without it, the local pinned daemon. */
static int run_main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			break;
		if (strcmp(argv[i], "--oap") == 0 || strncmp(argv[i], "--oap=", 6) == 0) {
			if (!agent_main) {
				log_error("run --oap: the SkyWalking agent is not built into this binary");
				return EXIT_RUNTIME;
			}
			return agent_main(argc, argv);
		}
	}
	return daemon_main(argc, argv);
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
		if (!commands[i].main) {
			log_error("%s: not built into this binary", argv[1]);
			return EXIT_RUNTIME;
		}
		return commands[i].main(argc - 1, argv + 1);
	}
	log_error("unknown command '%s' (try aperture --help)", argv[1]);
	return EXIT_USAGE;
}
