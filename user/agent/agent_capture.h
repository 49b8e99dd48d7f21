/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Capture: the profilers' drained generations become one upload for the
 * running tasks, saved in the store, then queued in the spool.
 */
#ifndef AGENT_CAPTURE_H
#define AGENT_CAPTURE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "agent_prof.h"
#include "agent_spool.h"
#include "agent_store.h"
#include "agent_tasks.h"

/* What the ledger keeps of the captures: it goes on from there after a restart. */
struct capture {
	uint64_t next_seq;		/* the next batch record's number; >= 1 */
	int64_t last_upload_ms;		/* currentTime of the last upload: each one gets its own */
	uint32_t captured[PROFILER_MAX];	/* map id of the generation last saved, per profiler */
};

/* One capture between its read and its end: the ledger is committed in between. */
struct capture_batch {
	struct sw_msgs msgs;
	uint64_t seq;			/* its batch record; 0: none */
	int gen[PROFILER_MAX];		/* the generation read, per profiler; -1: none */
};

void capture_init(struct capture *c);
/*
 * Reads the generations @gen (per profiler, -1: none) of @prof into one
 * upload for @tasks' running tasks (their counts grow), saved in @store as
 * the next batch record, in @b.  The generations are noted as saved: commit
 * the ledger, then capture_end().
 */
void capture_read(struct capture *c, const int *gen, struct agent_prof *prof, struct tasks *tasks,
		  struct symbolizer *sym, struct store *store, struct capture_batch *b);
/* Once the ledger is committed: empties the generations read and queues the upload in @spool. */
void capture_end(struct capture_batch *b, struct agent_prof *prof, struct spool *spool);

/* The ledger's lines of the capture: the upload sequence, the saved generations. */
void capture_put(FILE *f, const struct capture *c, const struct agent_prof *prof);
/* One ledger line's fields @f (@n of them), if it is the capture's. */
void capture_parse(struct capture *c, const struct agent_prof *prof, char **f, int n);

#endif /* AGENT_CAPTURE_H */
