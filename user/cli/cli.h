/* SPDX-License-Identifier: GPL-2.0 */
/* Option parsing and environment checks shared by `record`, `run` and the agent (cli.c). */
#ifndef CLI_H
#define CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include "numparse.h"	/* parse_u64(): the commands' own option values */

/* Exit codes (README, "Running it for months"): usage errors and bad config 2, run-time failures 1. */
#define EXIT_USAGE 2
#define EXIT_RUNTIME 1

struct profiler_opts;

/*
 * The profiler options, built from the profiler table: a command takes the
 * groups it wants, adds their getopt entries to its own, hands every option
 * to cli_profiler_option() first, and prints their help with
 * cli_profiler_help().  A new profiler's flag and options appear everywhere
 * without a line here.
 */
enum cli_groups {
	CLI_TARGETS = 1 << 0,		/* -p, --cgroup, -U, -K */
	CLI_KIND_FLAGS = 1 << 1,	/* --oncpu, --offcpu, ...: which profilers */
	CLI_KIND_OPTIONS = 1 << 2,	/* each profiler's own (-F, --min-block-us, ...) */
	CLI_CAPS = 1 << 3,		/* --stacks-max, --counts-max, --symbol-cache-mb */
};

struct option;
/*
 * Appends the getopt entries of @groups to @opts (which holds *@n, room for
 * @max, kept NULL-terminated) and their short letters to @shorts (room for
 * @shorts_len).  False when out of room.
 */
bool cli_profiler_getopt(unsigned groups, struct option *opts, int *n, int max, char *shorts,
			 size_t shorts_len);
void cli_profiler_help(FILE *out, unsigned groups);

/* A command's getopt tables: its own options followed by the profiler options of @groups. */
struct cli_getopt {
	struct option *opts;		/* NULL-terminated, for getopt_long */
	char shorts[48];
};
/*
 * getopt_long over @g's tables, but a long option must be given whole:
 * getopt_long takes any unique prefix, so `--gpu` would quietly be
 * `--gpu-events` where no `--gpu` exists.  A prefix returns '?' (the caller's
 * unknown-option line names it).
 */
int cli_getopt_next(int argc, char **argv, const struct cli_getopt *g);

/*
 * Builds the tables of @own (the command's options, ending with a NULL name;
 * @own_shorts their letters) and the profiler options of @groups, and calls
 * @parse(@ctx, argc, argv, tables) with them: what it returns, or
 * EXIT_RUNTIME when the tables cannot be built.
 */
int cli_parse(int argc, char **argv, const char *own_shorts, const struct option *own, unsigned groups,
	      int (*parse)(void *ctx, int argc, char **argv, const struct cli_getopt *g), void *ctx);
/* Every profiler's config at its defaults, nothing chosen yet. */
void cli_profiler_defaults(struct profiler_opts *o);
/*
 * Handles option @c if it is a profiler option of @groups; pids land in @pids (room for
 * @max_pids).  Returns 1 (handled), 0 (not a profiler option) or -1 (bad
 * value, one line printed).
 */
int cli_profiler_option(unsigned groups, int c, const char *arg, struct profiler_opts *o,
			uint32_t *pids, int max_pids);
/* Checks across options; chooses the default profilers when none was named.  False after an error. */
bool cli_profiler_check(struct profiler_opts *o);

/* "123,456": every pid must exist.  Returns the count, or -1 after an error. */
int cli_parse_pids(const char *arg, uint32_t *pids, int max);
/* cgroup v2 directory -> cgroup id (what bpf_get_current_cgroup_id() returns). */
bool cli_cgroup_id(const char *path, uint64_t *id);
/* Root, or CAP_BPF + CAP_PERFMON; a kernel with BTF.  Prints why not. */
bool cli_check_environment(void);
/* Can @path be created/written?  Creates nothing that was not there. */
bool cli_output_writable(const char *path);
/*
 * The stop flag and the handlers that set it (SIGINT, SIGTERM): the first
 * signal asks for a clean stop (cli_stop = its number), a second one for an
 * immediate one (cli_abort = 1: network calls in progress give up).
 */
extern volatile int cli_stop;
extern volatile int cli_abort;
void cli_install_signals(void);
/* SIGHUP sets cli_reload (read the config again), SIGUSR1 cli_stats (print the stats line). */
extern volatile sig_atomic_t cli_reload;
extern volatile sig_atomic_t cli_stats;
void cli_install_daemon_signals(void);
/* libbpf's messages only with -v. */
void cli_libbpf_logging(void);

#endif
