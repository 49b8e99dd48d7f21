// SPDX-License-Identifier: GPL-2.0
/*
 * gRPC over nghttp2: h2c with prior knowledge, or TLS (tls.c) with ALPN h2.
 * See grpc.h.
 *
 * One socket per channel, non-blocking, driven by poll() only while a call is
 * in progress.  Each message on the wire is prefixed by 5 bytes: a compression
 * flag (always 0 here: we never advertise grpc-accept-encoding) and a
 * big-endian length.  The status comes in trailers (grpc-status, grpc-message)
 * or, when the server fails the call at once, in a trailers-only response.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <nghttp2/nghttp2.h>
#include "grpc.h"
#include "lookup.h"
#include "util.h"

#define GRPC_PREFIX_LEN 5
#define GRPC_MAX_RECV (16u << 20)	/* largest response we accept */
#define GRPC_SEND_HIGH_WATER (1u << 20)	/* stream_send pumps above this */
#define GRPC_WINDOW (4u << 20)

struct grpc_call {
	struct grpc_channel *ch;
	int32_t stream_id;
	uint64_t deadline_ns;
	unsigned int timeout_ms;	/* the deadline as asked for, to say it */
	/* Request body: framed messages not yet handed to nghttp2. */
	uint8_t *out;
	size_t out_len, out_off, out_cap;
	bool half_closed;
	bool deferred;			/* the data provider is waiting for more */
	/* Response. */
	struct grpc_buf in;		/* DATA bytes, still framed */
	int http_status;
	char content_type[64];		/* of the response headers, printable; "" if none */
	int grpc_status;		/* -1 until a grpc-status header came */
	char grpc_message[256];
	int local_code;			/* -1, or a code we decided here */
	char local_message[256];
	bool closed;			/* the stream is closed */
	uint32_t close_error;		/* HTTP/2 error code it closed with */
};

struct grpc_channel {
	const volatile int *cancel;	/* see struct grpc_opts */
	const volatile int *stop;	/* see struct grpc_opts */
	unsigned int stop_grace_ms;
	uint64_t stop_by_ns;		/* CLOCK_MONOTONIC; 0 until a stop is seen */
	char *host, *port, *authority, *token;
	struct lookup *lookup;		/* a name lookup still running (lookup.h), or NULL */
	unsigned int connect_timeout_ms;
	unsigned int backoff_initial_ms, backoff_max_ms, backoff_ms;
	uint64_t next_attempt_ns;	/* CLOCK_MONOTONIC; no connect before */
	unsigned int rand_state;
	int fd;
	struct tls_config *tls_cfg;	/* NULL: plaintext h2c */
	struct tls_conn *tls;		/* the connection's TLS, with tls_cfg */
	nghttp2_session *session;
	bool goaway;			/* the server asked us to go: reconnect next call */
	bool broken;			/* transport failed: reconnect next call */
	bool heard;			/* the server sent something on this connection */
	char broken_why[192];
	struct grpc_call *active;
};

static const char *const code_names[] = {
	"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
	"ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
	"ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
	"UNAUTHENTICATED",
};

const char *grpc_code_name(int code)
{
	if (code >= 0 && code < (int)(sizeof(code_names) / sizeof(code_names[0])))
		return code_names[code];
	return "UNKNOWN";
}

void grpc_buf_free(struct grpc_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

static int buf_append(uint8_t **data, size_t *len, size_t *cap, const void *src, size_t n)
{
	if (*len + n > *cap) {
		size_t want = *cap ? *cap : 4096;
		uint8_t *grown;

		while (want < *len + n)
			want *= 2;
		grown = realloc(*data, want);
		if (!grown)
			return -ENOMEM;
		*data = grown;
		*cap = want;
	}
	memcpy(*data + *len, src, n);
	*len += n;
	return 0;
}

static void set_status(struct grpc_status *st, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_status(struct grpc_status *st, int code, const char *fmt, ...)
{
	va_list ap;

	st->code = code;
	st->remote = false;
	va_start(ap, fmt);
	vsnprintf(st->message, sizeof(st->message), fmt, ap);
	va_end(ap);
}

/* ---- channel and connection ---- */

static int split_target(const char *target, char **host, char **port)
{
	const char *colon, *h = target;
	size_t hlen;

	if (target[0] == '[') {
		const char *end = strchr(target, ']');

		if (!end || end[1] != ':')
			return -EINVAL;
		h = target + 1;
		hlen = end - h;
		colon = end + 1;
	} else {
		colon = strrchr(target, ':');
		if (!colon)
			return -EINVAL;
		hlen = colon - target;
	}
	if (hlen == 0 || colon[1] == '\0')
		return -EINVAL;
	*host = strndup(h, hlen);
	*port = strdup(colon + 1);
	if (!*host || !*port) {
		free(*host);
		free(*port);
		return -ENOMEM;
	}
	return 0;
}

struct grpc_channel *grpc_channel_new(const struct grpc_opts *opts)
{
	struct grpc_channel *ch = calloc_logged(1, sizeof(*ch));

	if (!ch)
		return NULL;
	ch->fd = -1;
	if (split_target(opts->target, &ch->host, &ch->port)) {
		log_error("bad gRPC target '%s' (want HOST:PORT)", opts->target);
		free(ch);
		return NULL;
	}
	ch->authority = strdup(opts->target);
	ch->token = opts->token && opts->token[0] ? strdup(opts->token) : NULL;
	if (!ch->authority || (opts->token && opts->token[0] && !ch->token)) {
		log_error("out of memory");
		grpc_channel_free(ch);
		return NULL;
	}
	ch->connect_timeout_ms = opts->connect_timeout_ms ? opts->connect_timeout_ms : 5000;
	ch->cancel = opts->cancel;
	ch->stop = opts->stop;
	ch->stop_grace_ms = opts->stop_grace_ms ? opts->stop_grace_ms : 3000;
	ch->backoff_initial_ms = opts->backoff_initial_ms ? opts->backoff_initial_ms : 1000;
	ch->backoff_max_ms = opts->backoff_max_ms ? opts->backoff_max_ms : 30000;
	if (ch->backoff_max_ms < ch->backoff_initial_ms)
		ch->backoff_max_ms = ch->backoff_initial_ms;
	ch->backoff_ms = ch->backoff_initial_ms;
	ch->rand_state = (unsigned int)(now_ns(CLOCK_REALTIME) ^ getpid());
	/* The CA and client certificate are read now: a bad file is said at start, not per call. */
	if (opts->tls && opts->tls->enabled) {
		ch->tls_cfg = tls_config_new(opts->tls);
		if (!ch->tls_cfg) {
			grpc_channel_free(ch);
			return NULL;
		}
	}
	return ch;
}

/*
 * The addresses of the target (freeaddrinfo them), or NULL with why in @st.
 * An address literal needs no lookup; a name is looked up until @deadline_ns,
 * and a lookup that outlives one connect attempt is kept for the next.
 */
static struct addrinfo *resolve(struct grpc_channel *ch, uint64_t deadline_ns, struct grpc_status *st)
{
	struct addrinfo *res;
	int rv = lookup_addrs(&ch->lookup, ch->host, ch->port, deadline_ns, NULL, &res);

	if (!rv)
		return res;
	if (rv == EAI_INPROGRESS)
		set_status(st, GRPC_UNAVAILABLE, "cannot resolve %s: no answer in time", ch->host);
	else
		set_status(st, GRPC_UNAVAILABLE, "cannot resolve %s: %s", ch->host,
			   rv == EAI_SYSTEM ? strerror(errno) : gai_strerror(rv));
	return NULL;
}

static void disconnect(struct grpc_channel *ch)
{
	if (ch->session)
		nghttp2_session_del(ch->session);
	ch->session = NULL;
	tls_conn_free(ch->tls);
	ch->tls = NULL;
	if (ch->fd >= 0)
		close(ch->fd);
	ch->fd = -1;
	ch->goaway = false;
	ch->broken = false;
	ch->heard = false;
}

void grpc_channel_free(struct grpc_channel *ch)
{
	if (!ch)
		return;
	disconnect(ch);
	tls_config_free(ch->tls_cfg);
	lookup_drop(&ch->lookup);
	free(ch->host);
	free(ch->port);
	free(ch->authority);
	if (ch->token)
		memset(ch->token, 0, strlen(ch->token));
	free(ch->token);
	free(ch);
}

/* Marks the connection unusable; the next call reconnects. */
static void mark_broken(struct grpc_channel *ch, const char *why)
{
	if (!ch->broken)
		snprintf(ch->broken_why, sizeof(ch->broken_why), "%s", why);
	ch->broken = true;
}

/* Schedules the next connect attempt: backoff * [0.8, 1.2), then grows it 1.6x up to the cap. */
static void schedule_backoff(struct grpc_channel *ch)
{
	uint64_t jitter_pct = 80 + rand_r(&ch->rand_state) % 41;
	uint64_t delay_ms = ch->backoff_ms * jitter_pct / 100;

	ch->next_attempt_ns = now_ns(CLOCK_MONOTONIC) + delay_ms * 1000000ull;
	ch->backoff_ms = ch->backoff_ms * 8 / 5;
	if (ch->backoff_ms > ch->backoff_max_ms)
		ch->backoff_ms = ch->backoff_max_ms;
}

/* Long waits are cut in slices so that a cancel (a signal) is seen promptly. */
#define CANCEL_CHECK_MS 200

static bool cancelled(const struct grpc_channel *ch)
{
	return ch->cancel && *ch->cancel;
}

/* Whether a signal may change what a wait should do: then waits are sliced. */
static bool watched(const struct grpc_channel *ch)
{
	return ch->cancel || ch->stop;
}

/*
 * @deadline_ns, or earlier once a stop was asked for: every call ends
 * within the grace from the moment the stop is first seen, so a server that
 * does not answer holds a stop for the grace at most, not a deadline per
 * call.  0 (one non-blocking round) stays 0.
 */
static uint64_t stop_bounded(struct grpc_channel *ch, uint64_t deadline_ns)
{
	if (!ch->stop || !*ch->stop || !deadline_ns)
		return deadline_ns;
	if (!ch->stop_by_ns)
		ch->stop_by_ns = now_ns(CLOCK_MONOTONIC) + ch->stop_grace_ms * 1000000ull;
	return deadline_ns < ch->stop_by_ns ? deadline_ns : ch->stop_by_ns;
}

static int poll_ms_until(uint64_t deadline_ns)
{
	uint64_t now = now_ns(CLOCK_MONOTONIC);

	if (now >= deadline_ns)
		return 0;
	return (int)((deadline_ns - now + 999999) / 1000000);
}

static int connect_one(const struct addrinfo *ai, uint64_t deadline_ns)
{
	int fd, err = 0, one = 1;
	socklen_t errlen = sizeof(err);
	struct pollfd pfd;

	fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
	if (fd < 0)
		return -errno;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
		if (errno != EINPROGRESS) {
			err = -errno;
			goto fail;
		}
		pfd = (struct pollfd){ .fd = fd, .events = POLLOUT };
		for (;;) {
			int n = poll(&pfd, 1, poll_ms_until(deadline_ns));

			if (n > 0)
				break;
			if (n == 0) {
				err = -ETIMEDOUT;
				goto fail;
			}
			if (errno != EINTR) {
				err = -errno;
				goto fail;
			}
		}
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &errlen) < 0 || err) {
			err = -(err ? err : errno);
			goto fail;
		}
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
fail:
	close(fd);
	return err;
}

/*
 * The TLS handshake on the connected socket, until @deadline_ns: GRPC_OK, or
 * a failure code with why in @st (the caller disconnects).
 */
static int start_tls(struct grpc_channel *ch, uint64_t deadline_ns, struct grpc_status *st)
{
	ch->tls = tls_conn_new(ch->tls_cfg, ch->fd, ch->host);
	if (!ch->tls) {
		set_status(st, GRPC_RESOURCE_EXHAUSTED, "out of memory");
		return st->code;
	}
	for (;;) {
		int rv = tls_handshake(ch->tls), wait_ms;
		struct pollfd pfd = { .fd = ch->fd, .events = rv == TLS_WANT_WRITE ? POLLOUT : POLLIN };

		if (rv == 0)
			return GRPC_OK;
		if (rv == TLS_FAILED) {
			set_status(st, GRPC_UNAVAILABLE, "TLS handshake with %s failed: %s", ch->authority,
				   tls_why(ch->tls));
			return st->code;
		}
		wait_ms = poll_ms_until(stop_bounded(ch, deadline_ns));
		if (wait_ms == 0) {
			set_status(st, GRPC_UNAVAILABLE, "TLS handshake with %s: no answer in time",
				   ch->authority);
			return st->code;
		}
		if (watched(ch) && wait_ms > CANCEL_CHECK_MS)
			wait_ms = CANCEL_CHECK_MS;
		if (poll(&pfd, 1, wait_ms) < 0 && errno != EINTR) {
			set_status(st, GRPC_UNAVAILABLE, "TLS handshake with %s: %s", ch->authority,
				   strerror(errno));
			return st->code;
		}
		if (cancelled(ch)) {
			set_status(st, GRPC_CANCELLED, "cancelled: stopping");
			return st->code;
		}
	}
}

static nghttp2_session_callbacks *session_callbacks(void);

static int start_session(struct grpc_channel *ch)
{
	nghttp2_settings_entry settings[] = {
		{ NGHTTP2_SETTINGS_ENABLE_PUSH, 0 },
		{ NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, GRPC_WINDOW },
	};
	nghttp2_session_callbacks *cbs = session_callbacks();
	int rv;

	if (!cbs)
		return -ENOMEM;
	rv = nghttp2_session_client_new(&ch->session, cbs, ch);
	if (rv)
		return -ENOMEM;
	rv = nghttp2_submit_settings(ch->session, NGHTTP2_FLAG_NONE, settings,
				     sizeof(settings) / sizeof(settings[0]));
	if (!rv)
		rv = nghttp2_session_set_local_window_size(ch->session, NGHTTP2_FLAG_NONE, 0,
							   GRPC_WINDOW);
	return rv ? -EPROTO : 0;
}

static int pump(struct grpc_channel *ch, uint64_t deadline_ns, bool (*done)(const struct grpc_call *),
		const struct grpc_call *call);

/* Reads what the server already sent (a GOAWAY, an EOF) without waiting. */
static void drain_idle(struct grpc_channel *ch)
{
	if (ch->fd < 0 || ch->broken)
		return;
	pump(ch, 0, NULL, NULL);
}

/*
 * Returns GRPC_OK with a usable session, or UNAVAILABLE (with why in @st)
 * when not connected and either backing off or the connect failed.
 */
static int ensure_connected(struct grpc_channel *ch, uint64_t deadline_ns, struct grpc_status *st)
{
	uint64_t now = now_ns(CLOCK_MONOTONIC), conn_deadline;
	struct addrinfo *res, *ai;
	int fd = -ENOENT, rv;

	drain_idle(ch);
	if (ch->fd >= 0 && !ch->goaway && !ch->broken)
		return GRPC_OK;
	if (ch->fd >= 0) {
		log_info("reconnecting to %s (%s)", ch->authority,
			 ch->goaway ? "server sent GOAWAY" : ch->broken_why);
		disconnect(ch);
	}
	if (now < ch->next_attempt_ns) {
		set_status(st, GRPC_UNAVAILABLE, "%s unreachable, next attempt in %.1f s",
			   ch->authority, (ch->next_attempt_ns - now) / 1e9);
		return GRPC_UNAVAILABLE;
	}
	conn_deadline = now + ch->connect_timeout_ms * 1000000ull;
	if (deadline_ns && deadline_ns < conn_deadline)
		conn_deadline = deadline_ns;
	res = resolve(ch, conn_deadline, st);
	if (!res) {
		schedule_backoff(ch);
		return GRPC_UNAVAILABLE;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		fd = connect_one(ai, conn_deadline);
		if (fd >= 0)
			break;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		set_status(st, GRPC_UNAVAILABLE, "cannot connect to %s: %s", ch->authority, strerror(-fd));
		schedule_backoff(ch);
		return GRPC_UNAVAILABLE;
	}
	ch->fd = fd;
	if (ch->tls_cfg) {
		rv = start_tls(ch, conn_deadline, st);
		if (rv) {
			disconnect(ch);
			schedule_backoff(ch);
			return rv;
		}
	}
	rv = start_session(ch);
	if (rv) {
		disconnect(ch);
		set_status(st, GRPC_INTERNAL, "cannot start HTTP/2 session: %s", strerror(-rv));
		return GRPC_INTERNAL;
	}
	log_info("connected to %s", ch->authority);
	return GRPC_OK;
}

/* ---- nghttp2 callbacks ---- */

static bool foreign_server(struct grpc_channel *ch, const uint8_t *in, size_t n);

/*
 * A plaintext send failed with @err.  A server that speaks no HTTP/2 answers
 * our preface and closes, and our next send may meet its reset before we read
 * the answer: what it said, when it is still there to read, names the fault.
 */
static void send_failed(struct grpc_channel *ch, int err)
{
	uint8_t answer[512];
	ssize_t n;

	if (!ch->heard && (n = recv(ch->fd, answer, sizeof(answer), MSG_DONTWAIT)) > 0 &&
	    foreign_server(ch, answer, (size_t)n))
		return;
	mark_broken(ch, strerror(err));
}

static ssize_t on_send(nghttp2_session *session, const uint8_t *data, size_t length, int flags,
		       void *user_data)
{
	struct grpc_channel *ch = user_data;
	ssize_t n;

	if (ch->tls) {
		/* After WOULDBLOCK nghttp2 offers the same bytes again, as mbedTLS wants. */
		n = tls_send(ch->tls, data, length);
		if (n > 0)
			return n;
		if (n == TLS_WANT_READ || n == TLS_WANT_WRITE)
			return NGHTTP2_ERR_WOULDBLOCK;
		mark_broken(ch, tls_why(ch->tls));
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	}
	n = send(ch->fd, data, length, MSG_NOSIGNAL);
	if (n >= 0)
		return n;
	if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
		return NGHTTP2_ERR_WOULDBLOCK;
	send_failed(ch, errno);
	return NGHTTP2_ERR_CALLBACK_FAILURE;
}

static struct grpc_call *call_of(nghttp2_session *session, int32_t stream_id)
{
	return nghttp2_session_get_stream_user_data(session, stream_id);
}

/* grpc-message is percent-encoded (RFC 3986 style, any byte). */
static void percent_decode(char *dst, size_t size, const uint8_t *src, size_t len)
{
	size_t i, o = 0;

	for (i = 0; i < len && o + 1 < size; i++) {
		if (src[i] == '%' && i + 2 < len && isxdigit(src[i + 1]) && isxdigit(src[i + 2])) {
			char hex[3] = { (char)src[i + 1], (char)src[i + 2], 0 };

			dst[o++] = (char)strtol(hex, NULL, 16);
			i += 2;
			continue;
		}
		dst[o++] = (char)src[i];
	}
	dst[o] = '\0';
}

/* A decimal header value; -1 when it is not one (a garbled grpc-status is no OK). */
static int parse_code(const uint8_t *value, size_t len)
{
	int v = 0;

	if (len == 0 || len > 4)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (!isdigit(value[i]))
			return -1;
		v = v * 10 + (value[i] - '0');
	}
	return v;
}

/* A header value the server chose, fit for a log line: printable ASCII, cut to @size. */
static void printable_copy(char *dst, size_t size, const uint8_t *src, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; i < len && o + 1 < size; i++)
		dst[o++] = src[i] >= 0x20 && src[i] < 0x7f ? (char)src[i] : '?';
	dst[o] = '\0';
}

static int on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name,
		     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
		     void *user_data)
{
	struct grpc_call *call = call_of(session, frame->hd.stream_id);
	int code;

	if (!call || frame->hd.type != NGHTTP2_HEADERS)
		return 0;
	if (namelen == 7 && !memcmp(name, ":status", 7)) {
		call->http_status = parse_code(value, valuelen);
	} else if (namelen == 12 && !memcmp(name, "content-type", 12) &&
		   frame->headers.cat == NGHTTP2_HCAT_RESPONSE) {
		printable_copy(call->content_type, sizeof(call->content_type), value, valuelen);
	} else if (namelen == 11 && !memcmp(name, "grpc-status", 11)) {
		code = parse_code(value, valuelen);
		call->grpc_status = code < 0 ? GRPC_UNKNOWN : code;
	} else if (namelen == 12 && !memcmp(name, "grpc-message", 12)) {
		percent_decode(call->grpc_message, sizeof(call->grpc_message), value, valuelen);
	}
	return 0;
}

/* application/grpc, application/grpc+proto, application/grpc;charset=...: a gRPC answer. */
static bool grpc_content_type(const char *type)
{
	size_t n = strlen("application/grpc");

	return !strncasecmp(type, "application/grpc", n) &&
	       (type[n] == '\0' || type[n] == '+' || type[n] == ';');
}

/* Whether the response headers say gRPC; none (yet) passes: the trailers may still tell. */
static bool grpc_answer(const struct grpc_call *call)
{
	return !call->content_type[0] || grpc_content_type(call->content_type);
}

/* The length the first message's prefix gives, once it came; 0 before. */
static size_t declared_len(const struct grpc_buf *in)
{
	const uint8_t *p = in->data;

	if (in->len < GRPC_PREFIX_LEN)
		return 0;
	return (size_t)p[1] << 24 | (size_t)p[2] << 16 | (size_t)p[3] << 8 | p[4];
}

/* Gives up on a response too large to take: the server is told to stop sending it. */
static void refuse_response(nghttp2_session *session, struct grpc_call *call, size_t len)
{
	call->local_code = GRPC_RESOURCE_EXHAUSTED;
	if (len)
		snprintf(call->local_message, sizeof(call->local_message),
			 "response message of %zu bytes, more than the %u accepted", len, GRPC_MAX_RECV);
	else
		snprintf(call->local_message, sizeof(call->local_message),
			 "response larger than %u bytes", GRPC_MAX_RECV);
	nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, call->stream_id, NGHTTP2_CANCEL);
}

static int on_data_chunk(nghttp2_session *session, uint8_t flags, int32_t stream_id,
			 const uint8_t *data, size_t len, void *user_data)
{
	struct grpc_call *call = call_of(session, stream_id);

	if (!call || call->local_code >= 0)
		return 0;
	if (call->in.len + len > GRPC_MAX_RECV ||
	    buf_append(&call->in.data, &call->in.len, &call->in.cap, data, len)) {
		refuse_response(session, call, 0);
		return 0;
	}
	/* Said by its prefix: no need to take in 16 MiB of it first. */
	if (grpc_answer(call) && declared_len(&call->in) > GRPC_MAX_RECV - GRPC_PREFIX_LEN)
		refuse_response(session, call, declared_len(&call->in));
	return 0;
}

static int on_stream_close(nghttp2_session *session, int32_t stream_id, uint32_t error_code,
			   void *user_data)
{
	struct grpc_call *call = call_of(session, stream_id);

	if (call) {
		call->closed = true;
		call->close_error = error_code;
	}
	return 0;
}

static int on_frame_recv(nghttp2_session *session, const nghttp2_frame *frame, void *user_data)
{
	struct grpc_channel *ch = user_data;

	if (frame->hd.type == NGHTTP2_GOAWAY) {
		/* Streams above last_stream_id are closed by nghttp2 with REFUSED_STREAM. */
		ch->goaway = true;
		log_info("%s sent GOAWAY (%s, last stream %d)", ch->authority,
			 nghttp2_http2_strerror(frame->goaway.error_code), frame->goaway.last_stream_id);
	}
	return 0;
}

static nghttp2_session_callbacks *session_callbacks(void)
{
	static nghttp2_session_callbacks *cbs;

	if (cbs)
		return cbs;
	if (nghttp2_session_callbacks_new(&cbs))
		return NULL;
	nghttp2_session_callbacks_set_send_callback(cbs, on_send);
	nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data_chunk);
	nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_stream_close);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame_recv);
	return cbs;
}

/* ---- the event loop ---- */

/*
 * Reads what arrived into @buf: bytes (> 0), -EAGAIN when nothing (yet: a
 * TLS record may come in pieces), or -EPIPE with the channel marked broken.
 */
static ssize_t transport_recv(struct grpc_channel *ch, uint8_t *buf, size_t len)
{
	ssize_t n;

	if (ch->tls) {
		n = tls_recv(ch->tls, buf, len);
		if (n == TLS_WANT_READ || n == TLS_WANT_WRITE)
			return -EAGAIN;
		if (n == TLS_FAILED) {
			mark_broken(ch, tls_why(ch->tls));
			return -EPIPE;
		}
	} else {
		n = recv(ch->fd, buf, len, 0);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return -EAGAIN;
	}
	if (n <= 0) {
		mark_broken(ch, n == 0 ? "connection closed by server" : strerror(errno));
		return -EPIPE;
	}
	return n;
}

/* TLS may hold decrypted bytes that poll() cannot see. */
static bool bytes_waiting(const struct grpc_channel *ch)
{
	return ch->tls && tls_pending(ch->tls);
}

/*
 * The first bytes of a connection tell a server that speaks no HTTP/2 at
 * all, which nghttp2 would only call a finished session: an HTTP/1 server
 * (another port of the OAP, a web server) or, to our plaintext, a TLS one.
 * Marks the channel broken with why; false when nothing is known against it.
 */
static bool foreign_server(struct grpc_channel *ch, const uint8_t *in, size_t n)
{
	char first_line[64];
	size_t len = 0;

	if (ch->heard)
		return false;
	ch->heard = true;
	if (n >= 5 && !memcmp(in, "HTTP/", 5)) {
		while (len < n && len + 1 < sizeof(first_line) && in[len] != '\r' && in[len] != '\n')
			len++;
		printable_copy(first_line, sizeof(first_line), in, len);
		snprintf(ch->broken_why, sizeof(ch->broken_why),
			 "not an HTTP/2 server: it answered '%s' (the OAP's gRPC port is 11800 by default)",
			 first_line);
		ch->broken = true;
		return true;
	}
	if (!ch->tls && n >= 2 && (in[0] == 0x15 || in[0] == 0x16) && in[1] == 0x03) {
		snprintf(ch->broken_why, sizeof(ch->broken_why), "not a plaintext HTTP/2 server: it answered with TLS (use --tls)");
		ch->broken = true;
		return true;
	}
	return false;
}

/*
 * Sends what nghttp2 has queued and feeds it what arrives, until @done says
 * so, the deadline passes (-ETIMEDOUT) or the connection fails (-EPIPE, and
 * the channel is marked broken).  @done NULL with deadline 0: one
 * non-blocking round.
 */
static int pump(struct grpc_channel *ch, uint64_t deadline_ns, bool (*done)(const struct grpc_call *),
		const struct grpc_call *call)
{
	uint8_t in[16384];

	for (;;) {
		struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
		ssize_t n;
		int rv, wait_ms;

		if (done && done(call))
			return 0;
		deadline_ns = stop_bounded(ch, deadline_ns);
		rv = nghttp2_session_send(ch->session);
		if (rv) {
			mark_broken(ch, nghttp2_strerror(rv));
			return -EPIPE;
		}
		if (done && done(call))
			return 0;
		if (!nghttp2_session_want_read(ch->session) && !nghttp2_session_want_write(ch->session)) {
			mark_broken(ch, "session finished");
			return -EPIPE;
		}
		if (nghttp2_session_want_write(ch->session))
			pfd.events |= POLLOUT;
		wait_ms = bytes_waiting(ch) ? 0 : poll_ms_until(deadline_ns);
		if (watched(ch) && wait_ms > CANCEL_CHECK_MS)
			wait_ms = CANCEL_CHECK_MS;
		rv = bytes_waiting(ch) ? 1 : poll(&pfd, 1, wait_ms);
		if (cancelled(ch))
			return -ECANCELED;
		if (rv < 0 && errno == EINTR)
			continue;
		if (rv < 0) {
			mark_broken(ch, strerror(errno));
			return -EPIPE;
		}
		if (rv == 0 && poll_ms_until(deadline_ns) > 0)
			continue;	/* a slice, not the deadline */
		if (rv == 0)
			return done ? -ETIMEDOUT : 0;
		if (!bytes_waiting(ch) && !(pfd.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		n = transport_recv(ch, in, sizeof(in));
		if (n == -EAGAIN)
			continue;
		if (n < 0 || foreign_server(ch, in, (size_t)n))
			return -EPIPE;
		rv = (int)nghttp2_session_mem_recv(ch->session, in, (size_t)n);
		if (rv < 0) {
			mark_broken(ch, nghttp2_strerror(rv));
			return -EPIPE;
		}
	}
}

static bool call_closed(const struct grpc_call *call)
{
	return call->closed;
}

static bool call_flushed(const struct grpc_call *call)
{
	return call->closed || call->out_len - call->out_off < GRPC_SEND_HIGH_WATER;
}

/* ---- calls ---- */

static ssize_t read_body(nghttp2_session *session, int32_t stream_id, uint8_t *buf, size_t length,
			 uint32_t *data_flags, nghttp2_data_source *source, void *user_data)
{
	/* Not source->ptr: a call given up on (deadline) is freed while its stream may linger. */
	struct grpc_call *call = call_of(session, stream_id);
	size_t avail, n;

	if (!call)
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;	/* resets the stream */
	avail = call->out_len - call->out_off;
	n = avail < length ? avail : length;
	if (avail == 0 && !call->half_closed) {
		call->deferred = true;
		return NGHTTP2_ERR_DEFERRED;
	}
	if (n)
		memcpy(buf, call->out + call->out_off, n);
	call->out_off += n;
	if (call->out_off == call->out_len) {
		call->out_off = call->out_len = 0;
		if (call->half_closed)
			*data_flags |= NGHTTP2_DATA_FLAG_EOF;
	}
	return (ssize_t)n;
}

#define NV(NAME, VALUE) { (uint8_t *)(NAME), (uint8_t *)(VALUE), sizeof(NAME) - 1, strlen(VALUE), \
			  NGHTTP2_NV_FLAG_NONE }

/* Sends the request headers of @call; its stream id, or a negative nghttp2 error. */
static int32_t submit_request(struct grpc_channel *ch, struct grpc_call *call, const char *path,
			      unsigned int timeout_ms)
{
	nghttp2_data_provider body = { .source.ptr = call, .read_callback = read_body };
	char timeout[16];

	/* grpc-timeout allows 8 digits: milliseconds up to 27 hours, seconds beyond. */
	if (timeout_ms <= 99999999)
		snprintf(timeout, sizeof(timeout), "%um", timeout_ms);
	else
		snprintf(timeout, sizeof(timeout), "%uS", timeout_ms / 1000);
	nghttp2_nv hdrs[] = {
		NV(":method", "POST"),
		NV(":scheme", ch->tls ? "https" : "http"),
		NV(":path", path),
		NV(":authority", ch->authority),
		NV("content-type", "application/grpc"),
		NV("te", "trailers"),
		NV("grpc-timeout", timeout),
		NV("user-agent", "aperture-grpc/" APERTURE_VERSION),
		NV("authentication", ch->token ? ch->token : ""),	/* last: left out without a token */
	};
	size_t nhdrs = sizeof(hdrs) / sizeof(hdrs[0]) - (ch->token ? 0 : 1);

	return nghttp2_submit_request(ch->session, NULL, hdrs, nhdrs, &body, call);
}

static int start_call(struct grpc_channel *ch, const char *path, unsigned int timeout_ms,
		      struct grpc_call **out, struct grpc_status *st)
{
	uint64_t deadline = stop_bounded(ch, now_ns(CLOCK_MONOTONIC) + timeout_ms * 1000000ull);
	struct grpc_call *call;
	int code;

	if (ch->active) {
		set_status(st, GRPC_INTERNAL, "another call is in progress on this channel");
		return GRPC_INTERNAL;
	}
	code = ensure_connected(ch, deadline, st);
	if (code)
		return code;
	call = calloc(1, sizeof(*call));
	if (!call) {
		set_status(st, GRPC_RESOURCE_EXHAUSTED, "out of memory");
		return GRPC_RESOURCE_EXHAUSTED;
	}
	call->ch = ch;
	call->deadline_ns = deadline;
	call->timeout_ms = timeout_ms;
	call->grpc_status = -1;
	call->local_code = -1;
	call->stream_id = submit_request(ch, call, path, timeout_ms);
	if (call->stream_id < 0) {
		set_status(st, GRPC_UNAVAILABLE, "cannot start stream: %s",
			   nghttp2_strerror(call->stream_id));
		mark_broken(ch, nghttp2_strerror(call->stream_id));
		free(call);
		return GRPC_UNAVAILABLE;
	}
	ch->active = call;
	*out = call;
	return GRPC_OK;
}

static int queue_message(struct grpc_call *call, const void *msg, size_t len)
{
	uint8_t prefix[GRPC_PREFIX_LEN] = { 0, (uint8_t)(len >> 24), (uint8_t)(len >> 16),
					    (uint8_t)(len >> 8), (uint8_t)len };

	if (len > UINT32_MAX)
		return -E2BIG;
	/* What nghttp2 took is dead weight: drop it once there is much of it. */
	if (call->out_off >= GRPC_SEND_HIGH_WATER) {
		memmove(call->out, call->out + call->out_off, call->out_len - call->out_off);
		call->out_len -= call->out_off;
		call->out_off = 0;
	}
	if (buf_append(&call->out, &call->out_len, &call->out_cap, prefix, sizeof(prefix)) ||
	    buf_append(&call->out, &call->out_len, &call->out_cap, msg, len))
		return -ENOMEM;
	if (call->deferred) {
		call->deferred = false;
		nghttp2_session_resume_data(call->ch->session, call->stream_id);
	}
	return 0;
}

static int http_to_grpc(int http_status)
{
	switch (http_status) {
	case 400: return GRPC_INTERNAL;
	case 401: return GRPC_UNAUTHENTICATED;
	case 403: return GRPC_PERMISSION_DENIED;
	case 404: return GRPC_UNIMPLEMENTED;
	case 429: case 502: case 503: case 504: return GRPC_UNAVAILABLE;
	default: return GRPC_UNKNOWN;
	}
}

static int close_error_to_grpc(uint32_t error)
{
	switch (error) {
	case NGHTTP2_REFUSED_STREAM: return GRPC_UNAVAILABLE;	/* not processed: safe to retry */
	case NGHTTP2_CANCEL: return GRPC_CANCELLED;
	case NGHTTP2_ENHANCE_YOUR_CALM: return GRPC_RESOURCE_EXHAUSTED;
	case NGHTTP2_INADEQUATE_SECURITY: return GRPC_PERMISSION_DENIED;
	default: return GRPC_INTERNAL;
	}
}

/* Works out the call's status once it ended (or failed with @pumped < 0). */
static void call_status(struct grpc_call *call, int pumped, struct grpc_status *st)
{
	struct grpc_channel *ch = call->ch;

	if (!grpc_answer(call))
		/*
		 * A web server or proxy answered: nothing it said (not even a
		 * grpc-status) is the OAP's word, as gRPC's HTTP/2 protocol has it.
		 */
		set_status(st, http_to_grpc(call->http_status), "not a gRPC answer: HTTP status %d, content-type %s",
			   call->http_status, call->content_type);
	else if (call->local_code >= 0)
		set_status(st, call->local_code, "%s", call->local_message);
	else if (call->grpc_status >= 0) {
		set_status(st, call->grpc_status, "%s", call->grpc_message);
		st->remote = true;
	}
	else if (pumped == -ETIMEDOUT && ch->stop_by_ns && ch->stop_by_ns <= call->deadline_ns)
		set_status(st, GRPC_DEADLINE_EXCEEDED, "stopping: no answer within the %.1f s a stop allows",
			   ch->stop_grace_ms / 1e3);
	else if (pumped == -ETIMEDOUT)
		set_status(st, GRPC_DEADLINE_EXCEEDED, "no answer within the deadline (%.1f s)",
			   call->timeout_ms / 1e3);
	else if (pumped == -ECANCELED)
		set_status(st, GRPC_CANCELLED, "cancelled: stopping");
	else if (pumped < 0)
		set_status(st, GRPC_UNAVAILABLE, "connection to %s lost: %s", ch->authority,
			   ch->broken_why);
	else if (call->close_error)
		set_status(st, close_error_to_grpc(call->close_error), "stream reset by server: %s",
			   nghttp2_http2_strerror(call->close_error));
	else if (call->http_status != 200)
		set_status(st, http_to_grpc(call->http_status), "HTTP status %d", call->http_status);
	else
		set_status(st, GRPC_INTERNAL, "response without grpc-status");
}

/* The one response message, unframed. */
static int take_reply(struct grpc_call *call, struct grpc_buf *reply, struct grpc_status *st)
{
	const uint8_t *p = call->in.data;
	size_t len;

	if (call->in.len < GRPC_PREFIX_LEN) {
		set_status(st, GRPC_INTERNAL, "no response message");
		return st->code;
	}
	len = (size_t)p[1] << 24 | (size_t)p[2] << 16 | (size_t)p[3] << 8 | p[4];
	if (p[0] != 0 || GRPC_PREFIX_LEN + len > call->in.len) {
		set_status(st, GRPC_INTERNAL, p[0] ? "compressed response (not requested)" :
			   "truncated response message");
		return st->code;
	}
	/* Hand the buffer over, moving the message to its start. */
	memmove(call->in.data, p + GRPC_PREFIX_LEN, len);
	*reply = call->in;
	reply->len = len;
	call->in = (struct grpc_buf){ 0 };
	return GRPC_OK;
}

static void end_call(struct grpc_call *call)
{
	struct grpc_channel *ch = call->ch;

	if (ch->session && !ch->broken && !call->closed) {
		nghttp2_submit_rst_stream(ch->session, NGHTTP2_FLAG_NONE, call->stream_id,
					  NGHTTP2_CANCEL);
		/* Best effort: let the RST_STREAM out without waiting. */
		pump(ch, 0, NULL, NULL);
	}
	/* Whatever the session still does with the stream must not reach the freed call. */
	if (ch->session)
		nghttp2_session_set_stream_user_data(ch->session, call->stream_id, NULL);
	ch->active = NULL;
	grpc_buf_free(&call->in);
	free(call->out);
	free(call);
}

static int finish_call(struct grpc_call *call, struct grpc_buf *reply, struct grpc_status *st)
{
	struct grpc_channel *ch = call->ch;
	int pumped = 0;

	*reply = (struct grpc_buf){ 0 };
	if (!call->half_closed) {
		call->half_closed = true;
		if (call->deferred) {
			call->deferred = false;
			nghttp2_session_resume_data(ch->session, call->stream_id);
		}
	}
	if (!ch->broken)
		pumped = pump(ch, call->deadline_ns, call_closed, call);
	else
		pumped = -EPIPE;
	call_status(call, pumped, st);
	if (st->code == GRPC_OK)
		take_reply(call, reply, st);
	if (st->code != GRPC_UNAVAILABLE && st->code != GRPC_DEADLINE_EXCEEDED)
		ch->backoff_ms = ch->backoff_initial_ms;	/* the server speaks gRPC */
	end_call(call);
	return st->code;
}

int grpc_unary(struct grpc_channel *ch, const char *path, const void *req, size_t len,
	       unsigned int timeout_ms, struct grpc_buf *reply, struct grpc_status *st)
{
	struct grpc_call *call;
	int code;

	*reply = (struct grpc_buf){ 0 };
	code = start_call(ch, path, timeout_ms, &call, st);
	if (code)
		return code;
	if (queue_message(call, req, len)) {
		end_call(call);
		set_status(st, GRPC_RESOURCE_EXHAUSTED, "out of memory");
		return st->code;
	}
	return finish_call(call, reply, st);
}

int grpc_stream_open(struct grpc_channel *ch, const char *path, unsigned int timeout_ms,
		     struct grpc_call **out, struct grpc_status *st)
{
	return start_call(ch, path, timeout_ms, out, st);
}

int grpc_stream_send(struct grpc_call *call, const void *msg, size_t len)
{
	struct grpc_channel *ch = call->ch;
	int rv;

	if (call->closed || ch->broken)
		return GRPC_UNAVAILABLE;
	if (queue_message(call, msg, len)) {
		call->local_code = GRPC_RESOURCE_EXHAUSTED;
		snprintf(call->local_message, sizeof(call->local_message), "out of memory");
		return GRPC_RESOURCE_EXHAUSTED;
	}
	if (call->out_len - call->out_off < GRPC_SEND_HIGH_WATER)
		return GRPC_OK;
	/* Bound memory: let the socket (and flow control) take the backlog. */
	rv = pump(ch, call->deadline_ns, call_flushed, call);
	if (rv == -ETIMEDOUT)
		return GRPC_DEADLINE_EXCEEDED;
	if (rv == -ECANCELED)
		return GRPC_CANCELLED;
	if (rv < 0 || call->closed)
		return GRPC_UNAVAILABLE;
	return GRPC_OK;
}

int grpc_stream_finish(struct grpc_call *call, struct grpc_buf *reply, struct grpc_status *st)
{
	return finish_call(call, reply, st);
}
