// SPDX-License-Identifier: GPL-2.0
/*
 * Recovery, once at start: what a kill -9 must not lose comes back.
 *
 * A flush flips the profilers' generations, reads the idle one WITHOUT
 * deleting, writes the encoded upload to a batch record (temp file, fsync,
 * rename, fsync of the directory: agent_store.c), then the ledger (same way)
 * with the map id of each generation now safe in a batch, and only then
 * empties the idle maps and sends.  A batch record goes once the OAP
 * acknowledged it.  After a crash at any point the restarted agent finds:
 *   - batch records numbered below next_seq: sent again, byte for byte, so
 *     the OAP stores each record under the same id (sha256 of schedule,
 *     stack ids and upload time): an overwrite, never a second count;
 *   - a batch record at or above next_seq: written but never committed; its
 *     counts are still in the idle map, which is read again: the record goes;
 *   - under --pin, an idle generation whose map id is not the one committed:
 *     counted, never saved: read into a new batch.  One whose id is the one
 *     committed is already in a batch: emptied, not read.
 *   - the tasks that ran, with their start and stop times and the upload
 *     sequence, so their data keeps its schedule and upload times keep
 *     growing; latestUpdateTime, so the OAP does not hand them out again
 *     (which would re-arm their stop time).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "agent_recovery.h"

/* Queues the committed uploads in order; removes those never committed. */
static void load_batches(struct store *store, const struct capture *c, struct spool *spool)
{
	size_t queued = 0, msgs_queued = 0;
	uint64_t *seqs;
	ssize_t n = store_list_batches(store, &seqs);

	for (ssize_t i = 0; i < n; i++) {
		struct sw_msgs msgs = { 0 };

		if (seqs[i] >= c->next_seq) {
			/* Written, never committed: its counts are still in the idle map. */
			store_drop_batch(store, seqs[i]);
			continue;
		}
		if (store_load_batch(store, seqs[i], &msgs))
			continue;	/* unreadable: said and removed */
		msgs_queued += msgs.n;
		queued++;
		spool_push(spool, &msgs, seqs[i]);
	}
	free(seqs);
	if (queued)
		log_warn("ledger %s: %zu uploads (%zu messages) not acknowledged before the last stop: "
			 "sending them again", store->path, queued, msgs_queued);
}

/* Reads the ledger file, if any: tasks, times, sequence, saved generations. */
static void load_ledger(const struct store *store, struct capture *c, struct tasks *tasks,
			struct silences *silences, const struct agent_prof *prof, struct symbolizer *sym)
{
	char *text, *save = NULL;
	size_t len;
	int err = store_read(store, LEDGER_FILE, LEDGER_MAX, &text, &len);
	int64_t now_ms = wall_ms();

	if (err == -ENOENT)
		return;
	if (err || strncmp(text, LEDGER_MAGIC "\n", strlen(LEDGER_MAGIC) + 1)) {
		log_warn("ledger %s: %s unreadable (%s), starting afresh", store->path, LEDGER_FILE,
			 err == -EFBIG ? "over " LEDGER_MAX_TEXT : err ? strerror(-err) : "not a ledger");
		free(text);
		return;
	}
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *f[TASK_FIELDS + 1], *fsave = NULL;
		int n = 0;

		for (char *s = strtok_r(line, " \n", &fsave); s && n <= TASK_FIELDS; s = strtok_r(NULL, " \n", &fsave))
			f[n++] = s;
		capture_parse(c, prof, f, n);
		silences_parse(silences, f, n, now_ms);
		if (tasks_parse(tasks, f, n, sym))
			log_warn("ledger %s: a task could not be restored", store->path);
	}
	free(text);
	if (silences->refused)
		log_warn("ledger %s: %" PRIu64 " continuous silence windows refused (malformed, in the future or"
			 " past %d)", store->path, silences->refused, SILENCE_MAX);
	if (silences->restored)
		log_info("ledger %s: %" PRIu64 " continuous silence windows restored", store->path,
			 silences->restored);
}

void recovery_load(struct store *store, struct capture *c, struct tasks *tasks, struct silences *silences,
		   struct spool *spool, const struct agent_prof *prof, struct symbolizer *sym)
{
	load_ledger(store, c, tasks, silences, prof, sym);
	load_batches(store, c, spool);
	log_info("ledger %s: next upload %" PRIu64, store->path, c->next_seq);
}

bool recovery_unsaved(const struct store *store, const struct capture *c, struct agent_prof *prof,
		      bool pinned, int *gen)
{
	bool unsaved = false;

	for (int k = 0; k < PROFILER_MAX; k++) {
		struct profiler *p = prof[k].p;
		int idle;

		gen[k] = -1;
		if (!p || !pinned)
			continue;
		idle = !p->live;
		if (store_is_open(store) && profiler_generation_id(p, idle) == c->captured[k]) {
			profiler_clear_generation(p, idle);
			continue;
		}
		gen[k] = idle;
		unsaved = true;
	}
	return unsaved;
}
