// SPDX-License-Identifier: GPL-2.0
/*
 * The gRPC calls to the OAP, and how a failed one is told: an outage is said
 * once, a refusal (bad token) stops the agent.
 */
#include <stdlib.h>
#include "agent_internal.h"

bool transient(int code)
{
	return code == GRPC_UNAVAILABLE || code == GRPC_RESOURCE_EXHAUSTED ||
	       code == GRPC_DEADLINE_EXCEEDED || code == GRPC_ABORTED || code == GRPC_CANCELLED;
}

/*
 * Worth trying again later: an outage, or an answer that was no gRPC answer
 * (a reset stream, a response without grpc-status, one too large, a proxy's
 * HTML).  Uploads may be resent safely: the OAP stores a record under an id
 * made of its schedule, stack ids and upload time, so a resent one
 * overwrites itself.  Only the OAP's own grpc-status refuses data for good.
 */
bool retryable(int code, const struct grpc_status *st)
{
	return transient(code) || !st->remote;
}

/* Logs a failed call once per outage; returns true when the call failed. */
bool call_failed(struct agent *a, const char *what, int code, const struct grpc_status *st)
{
	if (code == GRPC_OK) {
		if (a->oap_down)
			log_warn("OAP %s answers again", a->o.oap);
		a->oap_down = false;
		return false;
	}
	if (code == GRPC_PERMISSION_DENIED || code == GRPC_UNAUTHENTICATED) {
		if (!a->fatal)
			log_error("OAP %s refused %s: %s: %s (check the token in --token-file or APERTURE_OAP_TOKEN)",
				  a->o.oap, what, grpc_code_name(code), st->message);
		a->fatal = true;
	} else if (retryable(code, st)) {
		if (!a->oap_down)
			log_warn("OAP %s: %s failed: %s: %s; profiling data is kept in the spool",
				 a->o.oap, what, grpc_code_name(code), st->message);
		else
			log_info("%s failed: %s: %s", what, grpc_code_name(code), st->message);
		a->oap_down = true;
	} else {
		log_warn("OAP %s: %s failed: %s: %s", a->o.oap, what, grpc_code_name(code), st->message);
	}
	return true;
}

/* A unary call; on success @reply holds the answer. */
bool unary(struct agent *a, const char *what, const char *path, struct sw_msg *req,
		  struct grpc_buf *reply)
{
	struct grpc_status st;
	int code = grpc_unary(a->ch, path, req->data, req->len, a->o.deadline_ms, reply, &st);

	free(req->data);
	req->data = NULL;
	return !call_failed(a, what, code, &st);
}


int send_batch(struct agent *a, const struct sw_msgs *msgs, struct grpc_status *st)
{
	struct grpc_buf reply = { 0 };
	struct grpc_call *call;
	int code;

	code = grpc_stream_open(a->ch, SW_PATH_COLLECT, a->o.deadline_ms, &call, st);
	if (code)
		return code;
	for (size_t i = 0; i < msgs->n; i++)
		if (grpc_stream_send(call, msgs->v[i].data, msgs->v[i].len))
			break;	/* finish tells why */
	code = grpc_stream_finish(call, &reply, st);
	grpc_buf_free(&reply);
	return code;
}

/* Sends spooled batches in order until one fails transiently. */
