// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: the --config file.  The input is a memfd's, named by
 * --config; --check-config makes a good file print its effective settings
 * (to /dev/null here).  Read by both commands that take a file: `run` (the
 * daemon, fuzz_config_daemon.c) and `run --oap` (the agent), each through
 * its own option parser, which validates every value; then config_sets()
 * looks for keys in it.
 */
#include <string.h>
#include "agent_opts.h"
#include "config.h"
#include "fuzz_input.h"
#include "util.h"

int fuzz_daemon_parse(int argc, char **argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	quiet_stdout();
	return 0;
}

static void agent_parse(int argc, char **argv)
{
	struct agent_opts o = { 0 };

	opts_parse(&o, argc, argv);
	free(o.token);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *argv[] = { "run", "--config", (char *)input_path(data, size), "--check-config", NULL };
	int argc = 4;

	fuzz_daemon_parse(argc, argv);
	agent_parse(argc, argv);
	config_sets(argc, argv, "oap");
	config_sets(argc, argv, "frequency");
	/* A file may say verbose = true or log-format = json: the next input starts afresh. */
	log_verbose = 0;
	log_set_format("text");
	return 0;
}
