/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The config file of `aperture run` (and of every command parsed by
 * cli_parse): `key = value` lines, `#` comments, keys the long options.
 * The file becomes command-line options placed before the real ones, so that
 * one parser validates both and a flag overrides the file's key.
 */
#ifndef CONFIG_H
#define CONFIG_H

#include <stdbool.h>

struct cli_getopt;

/*
 * cli_parse's body: takes --config FILE, --check-config and --log-format out
 * of argv, merges the file's keys (those no flag overrides) in front of the
 * rest and calls @parse on the result.  A bad key or value: one line
 * "FILE:LINE: ...", EXIT_USAGE.  With --check-config, prints the effective
 * settings (key = value  # default|file|flag) and returns -1 (exit 0).
 */
int config_parse(const struct cli_getopt *g, int argc, char **argv,
		 int (*parse)(void *ctx, int argc, char **argv, const struct cli_getopt *g), void *ctx);

/* Does the command line, or the --config file it names, set @key (a long option name)? */
bool config_sets(int argc, char **argv, const char *key);

/* The --config FILE of the last config_parse, or NULL: what SIGHUP reads again. */
const char *config_path(void);

#endif /* CONFIG_H */
