/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A small gRPC client: HTTP/2 on nghttp2, over plain TCP with prior knowledge
 * (h2c) or over TLS with ALPN h2 (tls.h).  Unary calls and client-streaming calls, one call at a time per
 * channel.  Messages are opaque bytes here: callers encode and decode them.
 *
 * A channel connects lazily and reconnects by itself: after a failed connect
 * it waits a capped, jittered, exponentially growing backoff, and calls made
 * meanwhile fail at once with UNAVAILABLE (so callers never block on a dead
 * server).  Transport failures are reported as gRPC codes, as real gRPC
 * clients do: UNAVAILABLE for connection trouble, DEADLINE_EXCEEDED when the
 * call's deadline passed.
 */
#ifndef GRPC_H
#define GRPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "tls.h"

/* gRPC status codes (grpc/status.h). */
enum grpc_code {
	GRPC_OK = 0,
	GRPC_CANCELLED = 1,
	GRPC_UNKNOWN = 2,
	GRPC_INVALID_ARGUMENT = 3,
	GRPC_DEADLINE_EXCEEDED = 4,
	GRPC_NOT_FOUND = 5,
	GRPC_ALREADY_EXISTS = 6,
	GRPC_PERMISSION_DENIED = 7,
	GRPC_RESOURCE_EXHAUSTED = 8,
	GRPC_FAILED_PRECONDITION = 9,
	GRPC_ABORTED = 10,
	GRPC_OUT_OF_RANGE = 11,
	GRPC_UNIMPLEMENTED = 12,
	GRPC_INTERNAL = 13,
	GRPC_UNAVAILABLE = 14,
	GRPC_DATA_LOSS = 15,
	GRPC_UNAUTHENTICATED = 16,
};

struct grpc_opts {
	const char *target;		/* "HOST:PORT" or "[V6]:PORT" */
	const char *token;		/* "authentication" metadata on every call; NULL: none */
	unsigned int backoff_initial_ms;	/* first reconnect delay; 0: 1000 */
	unsigned int backoff_max_ms;	/* cap; 0: 30000 */
	unsigned int connect_timeout_ms;	/* 0: 5000 */
	const volatile int *cancel;	/* once *cancel is set, calls in progress end (CANCELLED) */
	/*
	 * Once *stop is set, calls in progress and calls made after it all end
	 * by stop_grace_ms (0: 3000) after the stop was first seen, whatever
	 * their deadline (DEADLINE_EXCEEDED): a stop is bounded however
	 * many calls it still makes to a server that does not answer.
	 */
	const volatile int *stop;
	unsigned int stop_grace_ms;
	const struct tls_opts *tls;	/* NULL or !enabled: h2c */
};

struct grpc_status {
	int code;			/* enum grpc_code */
	char message[256];		/* grpc-message, or what went wrong locally */
	bool remote;			/* the server said it (grpc-status); false: decided here */
};

/* A response message (without the 5-byte gRPC prefix). */
struct grpc_buf {
	uint8_t *data;
	size_t len;
	size_t cap;
};

struct grpc_channel;
struct grpc_call;

/*
 * Parses the target and reads the TLS files; connects on the first call.
 * NULL on a bad target or TLS file (one logged line).  A failed TLS
 * handshake (certificate not trusted, wrong name) fails calls with
 * UNAVAILABLE and the reason, and is retried after the backoff.
 */
struct grpc_channel *grpc_channel_new(const struct grpc_opts *opts);
void grpc_channel_free(struct grpc_channel *ch);

/*
 * One request, one response.  Returns the status code (also in @st); on
 * GRPC_OK @reply holds the response message (free with grpc_buf_free).
 */
int grpc_unary(struct grpc_channel *ch, const char *path, const void *req, size_t len,
	       unsigned int timeout_ms, struct grpc_buf *reply, struct grpc_status *st);

/*
 * Client streaming: open, send any number of messages, finish.  The deadline
 * covers the whole call.  open returns GRPC_OK and *out, or a failure code
 * (no call then).  send returns GRPC_OK, or the code the call already failed
 * with (keep calling finish to free it).  finish half-closes, waits for the
 * reply and status, frees the call and returns the code.
 */
int grpc_stream_open(struct grpc_channel *ch, const char *path, unsigned int timeout_ms,
		     struct grpc_call **out, struct grpc_status *st);
int grpc_stream_send(struct grpc_call *call, const void *msg, size_t len);
int grpc_stream_finish(struct grpc_call *call, struct grpc_buf *reply, struct grpc_status *st);

void grpc_buf_free(struct grpc_buf *b);
const char *grpc_code_name(int code);

#endif /* GRPC_H */
