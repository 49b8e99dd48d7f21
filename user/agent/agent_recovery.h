/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Recovery, once at start: what the last run left in the store (its ledger
 * and the uploads the OAP never acknowledged) and, under --pin, in the
 * pinned maps.
 */
#ifndef AGENT_RECOVERY_H
#define AGENT_RECOVERY_H

#include <stdbool.h>
#include "agent_capture.h"
#include "agent_prof.h"
#include "agent_silence.h"
#include "agent_spool.h"
#include "agent_store.h"
#include "agent_tasks.h"

/* The ledger: a text file in the store, replaced at each commit (agent.c). */
#define LEDGER_FILE "ledger"
#define LEDGER_MAGIC "aperture-ledger 1"
/* A larger ledger is not ours (1024 tasks with their pids, 4096 silence windows: a few MiB). */
#define LEDGER_MAX (64u << 20)
#define LEDGER_MAX_TEXT "64 MiB"

/*
 * Reads the ledger of @store (open) into @c, @tasks (their processes
 * tracked by @sym) and @silences, and queues in @spool the uploads it committed; removes
 * the batch records it never committed.
 */
void recovery_load(struct store *store, struct capture *c, struct tasks *tasks, struct silences *silences,
		   struct spool *spool, const struct agent_prof *prof, struct symbolizer *sym);
/*
 * Under --pin (@pinned), after the profilers were taken over: empties each
 * idle generation that a committed batch holds; the others, counted but
 * never saved, are named in @gen (per profiler, -1: none) to be captured.
 * True if there is any.
 */
bool recovery_unsaved(const struct store *store, const struct capture *c, struct agent_prof *prof,
		      bool pinned, int *gen);

#endif /* AGENT_RECOVERY_H */
