// SPDX-License-Identifier: GPL-2.0
/*
 * The gRPC calls to the OAP, and how a failed one is told: an outage is said
 * once, a refusal (bad token) stops the agent.
 */
#include <stdlib.h>
#include "agent_internal.h"

static const struct {
	const char *name;
	const char *path;
} calls[CALL_COUNT] = {
	[CALL_REPORT] = { "reportProcesses", SW_PATH_REPORT_PROCESSES },
	[CALL_KEEPALIVE] = { "keepAlive", SW_PATH_KEEP_ALIVE },
	[CALL_QUERY] = { "queryTasks", SW_PATH_QUERY_TASKS },
	[CALL_COLLECT] = { "collectProfilingData", SW_PATH_COLLECT },
};

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

/* @call has no work now (no process to report, nothing spooled): nothing of it fails. */
void call_idle(struct agent *a, enum oap_call call)
{
	a->failing &= ~(1u << call);
}

/* @call went through: the outage is over unless another call still fails. */
static void call_ok(struct agent *a, enum oap_call call)
{
	call_idle(a, call);
	if (a->outage && !a->failing) {
		log_warn("OAP %s answers again", a->o.oap);
		a->outage = false;
	}
}

/* Logs a failed call once per outage; returns true when the call failed. */
bool call_failed(struct agent *a, enum oap_call call, int code, const struct grpc_status *st)
{
	const char *what = calls[call].name;

	if (code == GRPC_OK) {
		call_ok(a, call);
		return false;
	}
	if (code == GRPC_PERMISSION_DENIED || code == GRPC_UNAUTHENTICATED) {
		if (!a->fatal)
			log_error("OAP %s refused %s: %s: %s (check the token in --token-file or APERTURE_OAP_TOKEN)",
				  a->o.oap, what, grpc_code_name(code), st->message);
		a->fatal = true;
	} else if (retryable(code, st)) {
		if (!a->outage)
			log_warn("OAP %s: %s failed: %s: %s; profiling data is kept in the spool",
				 a->o.oap, what, grpc_code_name(code), st->message);
		else
			log_info("%s failed: %s: %s", what, grpc_code_name(code), st->message);
		a->outage = true;
		a->failing |= 1u << call;
	} else {
		log_warn("OAP %s: %s failed: %s: %s", a->o.oap, what, grpc_code_name(code), st->message);
	}
	return true;
}

/*
 * Whether @call's answer decoded: one that does not is said once until one
 * of that call decodes again (an OAP that answers garbage every time, a
 * protocol mismatch, would otherwise fill the log).
 */
void answer_decoded(struct agent *a, enum oap_call call, bool decoded)
{
	unsigned int bit = 1u << call;

	if (decoded) {
		a->undecodable &= ~bit;
		return;
	}
	if (!(a->undecodable & bit))
		log_warn("OAP %s: %s answer does not decode", a->o.oap, calls[call].name);
	else
		log_info("%s answer does not decode", calls[call].name);
	a->undecodable |= bit;
}

/* A unary call; on success @reply holds the answer. */
bool unary(struct agent *a, enum oap_call call, struct sw_msg *req, struct grpc_buf *reply)
{
	struct grpc_status st;
	int code = grpc_unary(a->ch, calls[call].path, req->data, req->len, a->o.deadline_ms, reply, &st);

	free(req->data);
	req->data = NULL;
	return !call_failed(a, call, code, &st);
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
