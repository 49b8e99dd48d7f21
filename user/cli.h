/* SPDX-License-Identifier: GPL-2.0 */
/* Option parsing and environment checks shared by `record` and `run`. */
#ifndef CLI_H
#define CLI_H

#include <stdbool.h>
#include <stdint.h>

/* Exit codes: usage errors are 2, run-time failures 1. */
#define EXIT_USAGE 2
#define EXIT_RUNTIME 1

struct profiler_opts;

/* Long-only option codes of the profiler options every profiling command takes. */
enum {
	CLI_OPT_CGROUP = 200, CLI_OPT_IDLE, CLI_OPT_MIN_BLOCK, CLI_OPT_MAX_BLOCK, CLI_OPT_STATE,
};
#define CLI_PROFILER_SHORT "F:p:UK"
#define CLI_PROFILER_LONG_OPTIONS						\
	{ "freq", required_argument, NULL, 'F' },				\
	{ "pid", required_argument, NULL, 'p' },				\
	{ "cgroup", required_argument, NULL, CLI_OPT_CGROUP },			\
	{ "user-only", no_argument, NULL, 'U' },				\
	{ "kernel-only", no_argument, NULL, 'K' },				\
	{ "include-idle", no_argument, NULL, CLI_OPT_IDLE },			\
	{ "min-block-us", required_argument, NULL, CLI_OPT_MIN_BLOCK },		\
	{ "max-block-us", required_argument, NULL, CLI_OPT_MAX_BLOCK },		\
	{ "state", required_argument, NULL, CLI_OPT_STATE }

/* Defaults: 99 Hz, min block 1 us, blocked states. */
void cli_profiler_defaults(struct profiler_opts *o);
/*
 * Handles option @c if it is one of CLI_PROFILER_LONG_OPTIONS; pids land in
 * @pids (room for @max_pids).  Returns 1 (handled), 0 (not a profiler option)
 * or -1 (bad value, one line printed).
 */
int cli_profiler_option(int c, const char *arg, struct profiler_opts *o, uint32_t *pids, int max_pids);
/* Checks across options (min vs max block); false after an error. */
bool cli_profiler_check(const struct profiler_opts *o);

/* Parses a decimal number in [min, max]; false (after a one-line error naming @what) if not. */
bool cli_parse_u64(const char *what, const char *arg, uint64_t min, uint64_t max, uint64_t *out);
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
/* libbpf's messages only with -v. */
void cli_libbpf_logging(void);

#endif
