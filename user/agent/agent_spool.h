/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The spool: encoded uploads wait here, in order, until the OAP takes them;
 * bounded, oldest dropped first.  Each one's batch record in the store goes
 * once it is sent or given up.
 */
#ifndef AGENT_SPOOL_H
#define AGENT_SPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "agent_oap.h"
#include "agent_store.h"
#include "skywalking.h"

struct spool_batch {
	struct sw_msgs msgs;		/* one collectProfilingData stream */
	uint64_t seq;			/* its batch record in the store; 0: none */
	struct spool_batch *next;
};

struct spool {
	struct spool_batch *head, *tail;
	size_t bytes, limit;
	uint64_t dropped_msgs, dropped_bytes;
	struct store *store;		/* batch records to remove once sent or dropped */
};

/* Queues @msgs (taken), saved as batch @seq (0: not saved); drops the oldest batches to stay under the limit. */
void spool_push(struct spool *s, struct sw_msgs *msgs, uint64_t seq);
/* Sends the queued batches in order until one fails transiently. */
void spool_send(struct spool *s, struct oap *oap);

/* What a sender made of one batch: taken, to try again later (kept), or refused for good (dropped). */
enum spool_verdict { SPOOL_SENT, SPOOL_RETRY, SPOOL_REJECTED };
typedef enum spool_verdict (*spool_sender)(void *ctx, const struct sw_msgs *msgs);
/*
 * Another route's sending (run --pyroscope): the queued batches in order
 * through @send until one is to be retried; true when nothing waits.
 */
bool spool_drain(struct spool *s, spool_sender send, void *ctx);
/* At exit: what never reached the OAP @oap_addr. */
void spool_log_losses(const struct spool *s, const char *oap_addr);
/* Empties the spool; the batch records stay in the store, for the next start. */
void spool_free(struct spool *s);

#endif /* AGENT_SPOOL_H */
