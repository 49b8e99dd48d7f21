// SPDX-License-Identifier: GPL-2.0
/*
 * The spool: encoded messages wait here until the OAP takes them, so an
 * outage loses nothing until the spool is full; then the oldest go first.
 * One batch is one collectProfilingData stream, sent in order.
 */
#include <inttypes.h>
#include <stdlib.h>
#include "agent_spool.h"
#include "util.h"

static void spool_pop(struct spool *s)
{
	struct spool_batch *b = s->head;

	s->head = b->next;
	if (!s->head)
		s->tail = NULL;
	s->bytes -= b->msgs.bytes;
	sw_msgs_free(&b->msgs);
	free(b);
}

/* The head is sent or given up: its batch record goes too. */
static void spool_forget_head(struct spool *s)
{
	store_forget_batch(s->store, s->head->seq);
	spool_pop(s);
}

static void spool_drop_oldest(struct spool *s)
{
	s->dropped_msgs += s->head->msgs.n;
	s->dropped_bytes += s->head->msgs.bytes;
	spool_forget_head(s);
}

void spool_push(struct spool *s, struct sw_msgs *msgs, uint64_t seq)
{
	struct spool_batch *b = calloc_logged(1, sizeof(*b));
	uint64_t dropped = s->dropped_msgs;

	if (!b) {
		s->dropped_msgs += msgs->n;
		s->dropped_bytes += msgs->bytes;
		sw_msgs_free(msgs);
		store_forget_batch(s->store, seq);
		return;
	}
	while (s->head && s->bytes + msgs->bytes > s->limit)
		spool_drop_oldest(s);
	if (s->dropped_msgs != dropped)
		log_warn("spool full (%zu bytes): dropped the oldest data, %" PRIu64 " messages (%" PRIu64
			 " bytes) dropped so far", s->limit, s->dropped_msgs, s->dropped_bytes);
	b->msgs = *msgs;
	b->seq = seq;
	*msgs = (struct sw_msgs){ 0 };
	if (s->tail)
		s->tail->next = b;
	else
		s->head = b;
	s->tail = b;
	s->bytes += b->msgs.bytes;
}

void spool_send(struct spool *s, struct oap *oap)
{
	while (s->head && !oap->fatal) {
		struct grpc_status st;
		int code = oap_send_batch(oap, &s->head->msgs, &st);

		if (!oap_call_failed(oap, CALL_COLLECT, code, &st)) {
			log_info("sent %zu profiling messages (%zu bytes)", s->head->msgs.n,
				 s->head->msgs.bytes);
			test_crash_point("sent");	/* acknowledged, file not yet removed */
			spool_forget_head(s);
			continue;
		}
		if (oap_retryable(code, &st) || oap->fatal)
			return;
		/* Rejected for good (e.g. INVALID_ARGUMENT): resending would not help. */
		log_warn("dropped %zu profiling messages the OAP rejected", s->head->msgs.n);
		spool_drop_oldest(s);
	}
	if (!s->head)
		oap_call_idle(oap, CALL_COLLECT);	/* nothing waits: no upload outage */
}

bool spool_drain(struct spool *s, spool_sender send, void *ctx)
{
	while (s->head) {
		enum spool_verdict v = send(ctx, &s->head->msgs);

		if (v == SPOOL_RETRY)
			return false;
		spool_forget_head(s);	/* sent, or refused: the sender counts refusals, not the spool */
	}
	return true;
}

void spool_log_losses(const struct spool *s, const char *oap_addr)
{
	if (s->head) {
		size_t pending = 0, kept = 0;

		for (struct spool_batch *b = s->head; b; b = b->next) {
			pending += b->msgs.n;
			kept += b->seq ? b->msgs.n : 0;
		}
		log_warn("%zu profiling messages (%zu bytes) could not be sent to %s%s", pending,
			 s->bytes, oap_addr, kept == pending ? "; the ledger keeps them for the next start"
				 : kept ? "; the ledger keeps some of them for the next start" : "");
	}
	if (s->dropped_msgs)
		log_warn("%" PRIu64 " profiling messages (%" PRIu64 " bytes) were dropped: the spool was full",
			 s->dropped_msgs, s->dropped_bytes);
}

void spool_free(struct spool *s)
{
	while (s->head)
		spool_pop(s);
}
