/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The agent's gRPC calls to the OAP, and how a failed one is told: an outage
 * is said once, a refusal (bad token) stops the agent.
 */
#ifndef AGENT_OAP_H
#define AGENT_OAP_H

#include <stdbool.h>
#include "agent_opts.h"
#include "grpc.h"
#include "skywalking.h"

/*
 * How long a stop (SIGTERM, the first Ctrl-C) may still talk to the OAP, all
 * calls together: the last interval is sent if the OAP answers; if not, it
 * waits in the ledger for the next start instead of holding the stop.
 */
#define STOP_GRACE_MS 3000

/* The OAP's calls; each is a bit of oap.failing. */
enum oap_call { CALL_REPORT, CALL_KEEPALIVE, CALL_QUERY, CALL_COLLECT, CALL_POLICIES, CALL_TRIGGER, CALL_METERS, CALL_COUNT };

struct oap {
	struct grpc_channel *ch;
	const struct agent_opts *o;	/* the address (named in messages) and the deadline */
	char agent_id[37];		/* this agent, as every call names it */
	/*
	 * An outage (a transient failure) is said when it starts, and its end
	 * once a call went through while no call still has work that failed
	 * (failing: bit per enum oap_call, cleared by the call's success or
	 * when it has nothing left to do), so that keepAlive going through
	 * does not end an outage of uploads (a proxy that refuses them).
	 */
	bool outage;
	unsigned int failing;
	unsigned int undecodable;	/* bit per enum oap_call: its last answer did not decode */
	bool fatal;			/* the OAP refused us: stop */
};

/* A channel to @o's OAP with its token, TLS and backoff; NULL (logged) on failure. */
struct grpc_channel *oap_channel_new(const struct agent_opts *o);
/* Replaces @oap's channel with @ch (taken). */
void oap_set_channel(struct oap *oap, struct grpc_channel *ch);
bool oap_retryable(int code, const struct grpc_status *st);
bool oap_call_failed(struct oap *oap, enum oap_call call, int code, const struct grpc_status *st);
void oap_call_idle(struct oap *oap, enum oap_call call);
void oap_answer_decoded(struct oap *oap, enum oap_call call, bool decoded);
bool oap_unary(struct oap *oap, enum oap_call call, struct sw_msg *req, struct grpc_buf *reply);
int oap_send_batch(struct oap *oap, const struct sw_msgs *msgs, struct grpc_status *st);
/* One client stream of @msgs to @call's method; false (said as oap_call_failed says) when it failed. */
bool oap_stream(struct oap *oap, enum oap_call call, const struct sw_msgs *msgs);

#endif /* AGENT_OAP_H */
