/* SPDX-License-Identifier: GPL-2.0 */
/*
 * `aperture run`'s settings, from its command line and --config file: the
 * OAP and its token, the processes to select, the intervals, each
 * profiler's options.
 */
#ifndef AGENT_OPTS_H
#define AGENT_OPTS_H

#include <stdbool.h>
#include <stdint.h>
#include "profiler.h"
#include "tls.h"

#define MAX_SELECT 64
#define STATE_DIR_DEFAULT "/var/lib/aperture"

struct agent_opts {
	const char *oap;
	char *token;
	uint32_t pids[MAX_SELECT];
	int npids;
	const char *exe_patterns[MAX_SELECT];
	int nexe;
	const char *cgroups[MAX_SELECT];	/* paths relative to the cgroup2 root */
	int ncgroups;
	const char *service, *instance;
	const char *layer;		/* --layer, a name of the OAP's Layer */
	const char *labels[MAX_SELECT];	/* --label: entity labels of every process */
	int nlabels;
	/* --exe-label GLOB=LABEL: a label of the processes GLOB matches (as --exe-pattern) */
	struct exe_label {
		const char *glob;	/* GLOB=LABEL as given: the glob is the part before '=' */
		size_t glob_len;
		const char *label;
	} exe_labels[MAX_SELECT];
	int nexe_labels;
	uint64_t heartbeat_ms, task_ms, flush_ms, deadline_ms, backoff_max_ms;
	uint64_t report_every;
	uint64_t spool_bytes;
	uint64_t duration_s;
	uint64_t jvm_perfmap_s;		/* --jvm-perfmap[=S]: 0 off */
	struct profiler_opts prof;	/* each profiler's own options (-F, --min-block-us, ...) */
	const char *pin_dir;		/* NULL: profilers load per task, nothing pinned */
	const char *state_dir;		/* --state-dir: the ledger lives in a subdirectory */
	struct tls_opts tls;		/* --tls, --ca, --cert, --key, --insecure-skip-verify */
	bool continuous;		/* --continuous: the OAP's continuous profiling policies */
	uint64_t continuous_task_s, continuous_silence_s;
};

/* Fills @o from the command line (and --config).  0 to go on, -1 after --help, or an exit code. */
int opts_parse(struct agent_opts *o, int argc, char **argv);
/* Wipes and frees @o's token. */
void opts_free_token(struct agent_opts *o);

#endif /* AGENT_OPTS_H */
