/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A small HTTP/1.1 client for one POST at a time: plain TCP, or TLS (tls.h,
 * ALPN http/1.1) for an https URL, one connection per request ("Connection:
 * close"), every step bounded by the request's deadline, the name lookup
 * included (lookup.h), never a blocking socket call.
 */
#ifndef HTTP_H
#define HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include "tls.h"

struct lookup;

/* Where to send: from "http://HOST[:PORT][/PREFIX]". */
struct http_target {
	char host[256];			/* a name, an IPv4 address, or an IPv6 address without brackets */
	char port[8];
	char prefix[256];		/* the URL's path, no trailing '/'; "" for none */
	char hostport[272];		/* the Host header */
	bool https;
	struct tls_config *tls;		/* https: set by http_target_tls */
	struct lookup *lookup;		/* a name lookup a request gave up on, still running (lookup.h) */
};

struct http_reply {
	int status;			/* the status code */
	char text[256];			/* the start of the body, one line, for messages */
};

/* Parses @url; false after one line naming @what (e.g. "--pyroscope"). */
bool http_target_parse(struct http_target *t, const char *url, const char *what);
/* For an https target: the TLS settings (CA file, NULL: the system's bundle); false after one line. */
bool http_target_tls(struct http_target *t, const char *ca_file);
void http_target_free(struct http_target *t);

/*
 * POSTs @body (@len bytes) to @path (starting with '/', query included,
 * appended to the target's prefix) with the extra header lines @headers
 * ("Name: value\r\n" each, or NULL).  0 with @reply filled, or a negative
 * errno with @why (one line) saying what failed: connection refused,
 * -ETIMEDOUT when @timeout_ms passed (a name lookup too), -ECANCELED once
 * *@cancel is set.  A lookup still running then stays in @t for the next
 * request; http_target_free ends it.
 */
int http_post(struct http_target *t, const char *path, const char *headers, const void *body,
	      size_t len, unsigned int timeout_ms, const volatile int *cancel, struct http_reply *reply,
	      char *why, size_t whylen);

#endif /* HTTP_H */
