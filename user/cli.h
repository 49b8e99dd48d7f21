/* SPDX-License-Identifier: GPL-2.0 */
/* Option parsing and environment checks shared by `record` and `run`. */
#ifndef CLI_H
#define CLI_H

#include <stdbool.h>
#include <stdint.h>

/* Exit codes: usage errors are 2, run-time failures 1. */
#define EXIT_USAGE 2
#define EXIT_RUNTIME 1

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
/* The stop flag and the handlers that set it (SIGINT, SIGTERM). */
extern volatile int cli_stop;
void cli_install_signals(void);
/* libbpf's messages only with -v. */
void cli_libbpf_logging(void);

#endif
