// SPDX-License-Identifier: GPL-2.0
/*
 * A small HTTP/1.1 POST client (see http.h): a name lookup (lookup.c) and a
 * non-blocking socket (plain or through tls.c) driven by poll() against one
 * deadline, so a DNS server that never answers, or a server that accepts and
 * never answers, holds a request for its timeout and no longer, and a stop
 * cancels it.
 * The reply is read to the end of the connection (we ask for "Connection:
 * close"); only its status line and the first bytes of its body are kept.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include "http.h"
#include "lookup.h"
#include "util.h"

#define REPLY_KEEP 4096		/* bytes of the reply kept: the status line and the start of the body */
#define POLL_SLICE_MS 100	/* how often a wait looks at the cancel flag */

bool http_target_parse(struct http_target *t, const char *url, const char *what)
{
	const char *rest, *host_end, *path;
	size_t host_len;

	memset(t, 0, sizeof(*t));
	t->https = strncmp(url, "https://", 8) == 0;
	if (!t->https && strncmp(url, "http://", 7)) {
		log_error("%s %s: want http://HOST[:PORT][/PATH] or https://...", what, url);
		return false;
	}
	rest = url + (t->https ? 8 : 7);
	path = rest + strcspn(rest, "/?#");
	if (strpbrk(rest, "?#")) {
		log_error("%s %s: no query or fragment, please (the ingest path is added here)", what, url);
		return false;
	}
	if (*rest == '[') {
		host_end = memchr(rest, ']', (size_t)(path - rest));
		if (!host_end) {
			log_error("%s %s: unclosed '[' in the address", what, url);
			return false;
		}
		host_len = (size_t)(host_end - rest - 1);
		memcpy(t->host, rest + 1, host_len < sizeof(t->host) ? host_len : 0);
		host_end++;
	} else {
		host_end = rest + strcspn(rest, ":/");
		host_len = (size_t)(host_end - rest);
		memcpy(t->host, rest, host_len < sizeof(t->host) ? host_len : 0);
	}
	if (!host_len || host_len >= sizeof(t->host) || !t->host[0]) {
		log_error("%s %s: no host, or one too long", what, url);
		return false;
	}
	if (*host_end == ':') {
		size_t plen = (size_t)(path - host_end - 1);
		char *end;
		long port;

		if (!plen || plen >= sizeof(t->port)) {
			log_error("%s %s: bad port", what, url);
			return false;
		}
		memcpy(t->port, host_end + 1, plen);
		port = strtol(t->port, &end, 10);
		if (*end || port < 1 || port > 65535) {
			log_error("%s %s: bad port '%s'", what, url, t->port);
			return false;
		}
	} else if (host_end != path) {
		log_error("%s %s: want http://HOST[:PORT][/PATH] or https://...", what, url);
		return false;
	} else {
		snprintf(t->port, sizeof(t->port), t->https ? "443" : "80");
	}
	if (strlen(path) >= sizeof(t->prefix) || strpbrk(path, " \r\n")) {
		log_error("%s %s: the path is too long or has blanks", what, url);
		return false;
	}
	snprintf(t->prefix, sizeof(t->prefix), "%s", path);
	while (t->prefix[0] && t->prefix[strlen(t->prefix) - 1] == '/')
		t->prefix[strlen(t->prefix) - 1] = '\0';
	snprintf(t->hostport, sizeof(t->hostport), strchr(t->host, ':') ? "[%s]:%s" : "%s:%s", t->host, t->port);
	return true;
}

bool http_target_tls(struct http_target *t, const char *ca_file)
{
	struct tls_opts opts = { .enabled = true, .ca_file = ca_file, .alpn = "http/1.1" };

	if (!t->https)
		return true;
	t->tls = tls_config_new(&opts);
	return t->tls != NULL;
}

void http_target_free(struct http_target *t)
{
	tls_config_free(t->tls);
	t->tls = NULL;
	lookup_drop(&t->lookup);
}

/* One request's connection: the socket, and its TLS session for https. */
struct conn {
	int fd;
	struct tls_conn *tls;
};

/* Milliseconds left before @deadline (CLOCK_MONOTONIC ns); 0 when passed. */
static int ms_left(uint64_t deadline)
{
	uint64_t now = now_ns(CLOCK_MONOTONIC);

	return now >= deadline ? 0 : (int)((deadline - now) / 1000000 + 1);
}

/* Waits until @fd is ready for @events: 0, -ETIMEDOUT or -ECANCELED. */
static int wait_fd(int fd, short events, uint64_t deadline, const volatile int *cancel)
{
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = events };
		int left = ms_left(deadline), rv;

		if (cancel && *cancel)
			return -ECANCELED;
		if (!left)
			return -ETIMEDOUT;
		rv = poll(&pfd, 1, left < POLL_SLICE_MS ? left : POLL_SLICE_MS);
		if (rv > 0)
			return 0;
		if (rv < 0 && errno != EINTR)
			return -errno;
	}
}

/*
 * A connected non-blocking socket to one of @t's addresses, or a negative errno.
 * A name's lookup is bounded by @deadline too (lookup.h); one still running is
 * kept in @t for the next request.
 */
static int connect_target(struct http_target *t, uint64_t deadline, const volatile int *cancel,
			  char *why, size_t whylen)
{
	struct addrinfo *res, *ai;
	int rv = lookup_addrs(&t->lookup, t->host, t->port, deadline, cancel, &res), err = -EHOSTUNREACH;

	if (rv == EAI_INPROGRESS && cancel && *cancel)
		return -ECANCELED;
	if (rv == EAI_INPROGRESS) {
		snprintf(why, whylen, "cannot resolve %s: no answer within the deadline", t->host);
		return -ETIMEDOUT;
	}
	if (rv) {
		snprintf(why, whylen, "cannot resolve %s: %s", t->host,
			 rv == EAI_SYSTEM ? strerror(errno) : gai_strerror(rv));
		return -EHOSTUNREACH;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
		socklen_t elen = sizeof(int);
		int soerr = 0;

		if (fd < 0) {
			err = -errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) && errno != EINPROGRESS)
			err = -errno;
		else if ((err = wait_fd(fd, POLLOUT, deadline, cancel)) == 0 &&
			 !getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &elen) && soerr)
			err = -soerr;
		if (!err) {
			freeaddrinfo(res);
			return fd;
		}
		close(fd);
		if (err == -ECANCELED || err == -ETIMEDOUT)
			break;
	}
	freeaddrinfo(res);
	snprintf(why, whylen, "cannot connect to %s: %s", t->hostport, strerror(-err));
	return err;
}

/* A TLS call's "would block" as the poll events to wait for; 0 when it did not block. */
static short tls_wait(ssize_t rv)
{
	return rv == TLS_WANT_READ ? POLLIN : rv == TLS_WANT_WRITE ? POLLOUT : 0;
}

/* The TLS handshake, bounded by @deadline; 0 or a negative errno with @why. */
static int handshake(struct conn *c, const struct http_target *t, uint64_t deadline, const volatile int *cancel,
		     char *why, size_t whylen)
{
	c->tls = tls_conn_new(t->tls, c->fd, t->host);
	if (!c->tls)
		return -ENOMEM;
	for (;;) {
		int rv = tls_handshake(c->tls), err;

		if (rv == 0)
			return 0;
		if (!tls_wait(rv)) {
			snprintf(why, whylen, "TLS with %s: %s", t->hostport, tls_why(c->tls));
			return -EPROTO;
		}
		err = wait_fd(c->fd, tls_wait(rv), deadline, cancel);
		if (err)
			return err;
	}
}

/* Bytes sent, 0 when it would block (*@wait: the events), or a negative errno. */
static ssize_t conn_send(struct conn *c, const void *buf, size_t len, short *wait)
{
	ssize_t n;

	if (c->tls) {
		n = tls_send(c->tls, buf, len);
		*wait = tls_wait(n);
		return n > 0 ? n : *wait ? 0 : -EPROTO;
	}
	n = send(c->fd, buf, len, MSG_NOSIGNAL);
	*wait = POLLOUT;
	return n > 0 ? n : n < 0 && (errno == EAGAIN || errno == EINTR) ? 0 : n < 0 ? -errno : -EIO;
}

/* Bytes read, 0 at the end, -EAGAIN when it would block (*@wait: the events), or a negative errno. */
static ssize_t conn_recv(struct conn *c, void *buf, size_t len, short *wait)
{
	ssize_t n;

	if (c->tls) {
		n = tls_recv(c->tls, buf, len);
		*wait = tls_wait(n);
		return n >= 0 ? n : *wait ? -EAGAIN : -EPROTO;
	}
	n = recv(c->fd, buf, len, 0);
	*wait = POLLIN;
	return n >= 0 ? n : errno == EAGAIN || errno == EINTR ? -EAGAIN : -errno;
}

static int send_all(struct conn *c, const void *buf, size_t len, uint64_t deadline, const volatile int *cancel)
{
	size_t off = 0;

	while (off < len) {
		short wait;
		ssize_t n = conn_send(c, (const char *)buf + off, len - off, &wait);
		int err;

		if (n < 0)
			return (int)n;
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		err = wait_fd(c->fd, wait, deadline, cancel);
		if (err)
			return err;
	}
	return 0;
}

/* Reads until the server closes; keeps the first REPLY_KEEP - 1 bytes in @buf. */
static int recv_all(struct conn *c, char *buf, size_t *kept, uint64_t deadline, const volatile int *cancel)
{
	char sink[4096];

	*kept = 0;
	for (;;) {
		size_t room = REPLY_KEEP - 1 - *kept;
		short wait;
		ssize_t n = room ? conn_recv(c, buf + *kept, room, &wait) : conn_recv(c, sink, sizeof(sink), &wait);
		int err;

		if (n == 0)
			break;
		if (n > 0) {
			*kept += room ? (size_t)n : 0;
			continue;
		}
		if (n != -EAGAIN)
			return (int)n;
		if (c->tls && tls_pending(c->tls))
			continue;
		err = wait_fd(c->fd, wait, deadline, cancel);
		if (err)
			return err;
	}
	buf[*kept] = '\0';
	return 0;
}

/* The status code and the body's first line; -EPROTO when it is no HTTP reply. */
static int parse_reply(char *buf, struct http_reply *reply, char *why, size_t whylen)
{
	char *body = strstr(buf, "\r\n\r\n");
	int minor;

	if (sscanf(buf, "HTTP/1.%d %3d", &minor, &reply->status) != 2 || reply->status < 100) {
		buf[strcspn(buf, "\r\n")] = '\0';
		snprintf(why, whylen, "not an HTTP/1 reply: '%.60s'", buf);
		return -EPROTO;
	}
	reply->text[0] = '\0';
	if (body) {
		body += 4;
		body[strcspn(body, "\r\n")] = '\0';
		snprintf(reply->text, sizeof(reply->text), "%s", body);
	}
	return 0;
}

int http_post(struct http_target *t, const char *path, const char *headers, const void *body,
	      size_t len, unsigned int timeout_ms, const volatile int *cancel, struct http_reply *reply,
	      char *why, size_t whylen)
{
	uint64_t deadline = now_ns(CLOCK_MONOTONIC) + (uint64_t)timeout_ms * 1000000;
	char head[2048], *buf = NULL;
	struct conn c = { .fd = -1 };
	size_t kept;
	int err, n;

	n = snprintf(head, sizeof(head),
		     "POST %s%s HTTP/1.1\r\nHost: %s\r\nUser-Agent: aperture/%s\r\nConnection: close\r\n"
		     "Content-Length: %zu\r\n%s\r\n", t->prefix, path, t->hostport, APERTURE_VERSION, len,
		     headers ? headers : "");
	if (n < 0 || (size_t)n >= sizeof(head)) {
		snprintf(why, whylen, "request head too long");
		return -E2BIG;
	}
	c.fd = connect_target(t, deadline, cancel, why, whylen);
	if (c.fd < 0)
		return c.fd;
	why[0] = '\0';
	buf = malloc(REPLY_KEEP);
	err = buf ? 0 : -ENOMEM;
	if (!err && t->https)
		err = handshake(&c, t, deadline, cancel, why, whylen);
	if (!err)
		err = send_all(&c, head, (size_t)n, deadline, cancel);
	if (!err)
		err = send_all(&c, body, len, deadline, cancel);
	if (!err)
		err = recv_all(&c, buf, &kept, deadline, cancel);
	if (err && !why[0])
		snprintf(why, whylen, "%s: %s", t->hostport, err == -ETIMEDOUT ? "no answer within the deadline"
			 : err == -EPROTO && c.tls ? tls_why(c.tls) : strerror(-err));
	else if (!err)
		err = parse_reply(buf, reply, why, whylen);
	free(buf);
	if (c.tls)
		tls_conn_free(c.tls);
	close(c.fd);
	return err;
}
