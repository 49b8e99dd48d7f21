// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: the bytes a server sends on an HTTP/2 connection, after
 * the agent opened one gRPC call (queryTasks): nghttp2 with grpc.c's own
 * callbacks (headers, grpc-status, DATA, resets, GOAWAY), then the call's
 * status, the unframing of its one message, and the Commands decoder.
 * grpc.c is included so that its static functions are the ones run.
 */
#include "../../user/net/grpc.c"
#include "skywalking.h"

static void decode_reply(const struct grpc_buf *reply)
{
	struct sw_commands cmds = { 0 };

	sw_decode_commands(reply->data, reply->len, &cmds);
	sw_commands_free(&cmds);
}

/* Hands nghttp2's pending output to nowhere (there is no socket). */
static void flush_output(nghttp2_session *session)
{
	const uint8_t *out;

	while (nghttp2_session_mem_send(session, &out) > 0)
		;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct grpc_channel ch = { .fd = -1, .authority = (char *)"oap:11800" };
	struct grpc_call *call = calloc(1, sizeof(*call));
	struct grpc_status st = { 0 };
	struct grpc_buf reply = { 0 };

	if (!call || start_session(&ch))
		abort();
	*call = (struct grpc_call){ .ch = &ch, .grpc_status = -1, .local_code = -1, .half_closed = true };
	call->stream_id = submit_request(&ch, call, SW_PATH_QUERY_TASKS, 1000);
	ch.active = call;
	flush_output(ch.session);
	if (nghttp2_session_mem_recv(ch.session, data, size) >= 0)
		flush_output(ch.session);
	call_status(call, call->closed ? 0 : -EPIPE, &st);
	if (st.code == GRPC_OK && take_reply(call, &reply, &st) == GRPC_OK)
		decode_reply(&reply);
	grpc_buf_free(&reply);
	nghttp2_session_del(ch.session);
	free(call->in.data);
	free(call->out);
	free(call);
	return 0;
}
