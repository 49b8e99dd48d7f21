// SPDX-License-Identifier: GPL-2.0
/*
 * The gRPC calls to the OAP, and how a failed one is told: an outage is said
 * once, a refusal (bad token) stops the agent.
 */
#include <stdlib.h>
#include "agent_oap.h"
#include "cli.h"
#include "util.h"

static const struct {
	const char *name;
	const char *path;
} calls[CALL_COUNT] = {
	[CALL_REPORT] = { "reportProcesses", SW_PATH_REPORT_PROCESSES },
	[CALL_KEEPALIVE] = { "keepAlive", SW_PATH_KEEP_ALIVE },
	[CALL_QUERY] = { "queryTasks", SW_PATH_QUERY_TASKS },
	[CALL_COLLECT] = { "collectProfilingData", SW_PATH_COLLECT },
	[CALL_POLICIES] = { "queryPolicies", SW_PATH_QUERY_POLICIES },
	[CALL_TRIGGER] = { "reportProfilingTask", SW_PATH_REPORT_TASK },
	[CALL_METERS] = { "collectBatch", SW_PATH_METERS },
};

static bool transient(int code)
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
bool oap_retryable(int code, const struct grpc_status *st)
{
	return transient(code) || !st->remote;
}

/* @call has no work now (no process to report, nothing spooled): nothing of it fails. */
void oap_call_idle(struct oap *oap, enum oap_call call)
{
	oap->failing &= ~(1u << call);
}

/* @call went through: the outage is over unless another call still fails. */
static void call_ok(struct oap *oap, enum oap_call call)
{
	oap_call_idle(oap, call);
	if (oap->outage && !oap->failing) {
		log_warn("OAP %s answers again", oap->o->oap);
		oap->outage = false;
	}
}

/* Logs a failed call once per outage; returns true when the call failed. */
bool oap_call_failed(struct oap *oap, enum oap_call call, int code, const struct grpc_status *st)
{
	const char *what = calls[call].name;

	if (code == GRPC_OK) {
		call_ok(oap, call);
		return false;
	}
	if (code == GRPC_PERMISSION_DENIED || code == GRPC_UNAUTHENTICATED) {
		if (!oap->fatal)
			log_error("OAP %s refused %s: %s: %s (check the token in --token-file or APERTURE_OAP_TOKEN)",
				  oap->o->oap, what, grpc_code_name(code), st->message);
		oap->fatal = true;
	} else if (oap_retryable(code, st)) {
		if (!oap->outage)
			log_warn("OAP %s: %s failed: %s: %s; profiling data is kept in the spool",
				 oap->o->oap, what, grpc_code_name(code), st->message);
		else
			log_info("%s failed: %s: %s", what, grpc_code_name(code), st->message);
		oap->outage = true;
		oap->failing |= 1u << call;
	} else {
		log_warn("OAP %s: %s failed: %s: %s", oap->o->oap, what, grpc_code_name(code), st->message);
	}
	return true;
}

/*
 * Whether @call's answer decoded: one that does not is said once until one
 * of that call decodes again (an OAP that answers garbage every time, a
 * protocol mismatch, would otherwise fill the log).
 */
void oap_answer_decoded(struct oap *oap, enum oap_call call, bool decoded)
{
	unsigned int bit = 1u << call;

	if (decoded) {
		oap->undecodable &= ~bit;
		return;
	}
	if (!(oap->undecodable & bit))
		log_warn("OAP %s: %s answer does not decode", oap->o->oap, calls[call].name);
	else
		log_info("%s answer does not decode", calls[call].name);
	oap->undecodable |= bit;
}

/* A unary call; on success @reply holds the answer. */
bool oap_unary(struct oap *oap, enum oap_call call, struct sw_msg *req, struct grpc_buf *reply)
{
	struct grpc_status st;
	int code = grpc_unary(oap->ch, calls[call].path, req->data, req->len, oap->o->deadline_ms, reply, &st);

	free(req->data);
	req->data = NULL;
	return !oap_call_failed(oap, call, code, &st);
}


/* One stream of @msgs to @path; the call's gRPC code. */
static int send_stream(struct oap *oap, const char *path, const struct sw_msgs *msgs, struct grpc_status *st)
{
	struct grpc_buf reply = { 0 };
	struct grpc_call *call;
	int code;

	code = grpc_stream_open(oap->ch, path, oap->o->deadline_ms, &call, st);
	if (code)
		return code;
	for (size_t i = 0; i < msgs->n; i++)
		if (grpc_stream_send(call, msgs->v[i].data, msgs->v[i].len))
			break;	/* finish tells why */
	code = grpc_stream_finish(call, &reply, st);
	grpc_buf_free(&reply);
	return code;
}

/* One collectProfilingData stream of @msgs; the call's gRPC code. */
int oap_send_batch(struct oap *oap, const struct sw_msgs *msgs, struct grpc_status *st)
{
	return send_stream(oap, SW_PATH_COLLECT, msgs, st);
}

bool oap_stream(struct oap *oap, enum oap_call call, const struct sw_msgs *msgs)
{
	struct grpc_status st;
	int code = send_stream(oap, calls[call].path, msgs, &st);

	return !oap_call_failed(oap, call, code, &st);
}

struct grpc_channel *oap_channel_new(const struct agent_opts *o)
{
	struct grpc_opts gopts = {
		.target = o->oap,
		.cancel = &cli_abort,	/* a second Ctrl-C does not wait for deadlines */
		.stop = &cli_stop,
		.stop_grace_ms = STOP_GRACE_MS,
		.token = o->token,
		.tls = &o->tls,
		.backoff_max_ms = (unsigned int)o->backoff_max_ms,
		.backoff_initial_ms = (unsigned int)(o->backoff_max_ms < 1000 ? o->backoff_max_ms : 1000),
	};

	return grpc_channel_new(&gopts);
}

void oap_set_channel(struct oap *oap, struct grpc_channel *ch)
{
	grpc_channel_free(oap->ch);
	oap->ch = ch;
}
