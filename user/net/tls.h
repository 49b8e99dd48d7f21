/* SPDX-License-Identifier: GPL-2.0 */
/*
 * TLS for the gRPC channel (mbedTLS): one config per channel (CA chain, client
 * certificate, random generator), one connection per socket.  Client only,
 * TLS 1.2, ALPN "h2", SNI and the server's name checked against its
 * certificate (DNS names, and IP addresses for an address literal).
 *
 * The socket stays non-blocking: every call returns TLS_WANT_READ or
 * TLS_WANT_WRITE when it would block, and is repeated (with the same
 * arguments, for tls_send) once poll() says so.
 */
#ifndef TLS_H
#define TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct tls_opts {
	bool enabled;
	const char *ca_file;		/* PEM; NULL: the system's CA bundle */
	const char *cert_file;		/* client certificate (mutual TLS), PEM; or NULL */
	const char *key_file;		/* its private key, PEM; with cert_file */
	bool skip_verify;		/* no certificate or name check at all */
	const char *alpn;		/* the one ALPN protocol offered and accepted; NULL: "h2" (gRPC) */
};

enum { TLS_WANT_READ = -1001, TLS_WANT_WRITE = -1002, TLS_FAILED = -1003 };

struct tls_config;
struct tls_conn;

/* Reads the CA bundle and client certificate.  NULL after one logged line. */
struct tls_config *tls_config_new(const struct tls_opts *opts);
void tls_config_free(struct tls_config *cfg);

/* A connection on connected socket @fd to @host (the name checked and sent as SNI).  NULL: no memory. */
struct tls_conn *tls_conn_new(struct tls_config *cfg, int fd, const char *host);
/* 0 once the handshake is done and the server checked, TLS_WANT_*, or TLS_FAILED (see tls_why). */
int tls_handshake(struct tls_conn *c);
/* Bytes sent (> 0), TLS_WANT_*, or TLS_FAILED. */
ssize_t tls_send(struct tls_conn *c, const void *buf, size_t len);
/* Bytes read (> 0), 0 when the server closed, TLS_WANT_*, or TLS_FAILED. */
ssize_t tls_recv(struct tls_conn *c, void *buf, size_t len);
/* Decrypted bytes are waiting: read them before polling the socket. */
bool tls_pending(const struct tls_conn *c);
/* Why the last call failed, one line. */
const char *tls_why(const struct tls_conn *c);
/* Sends close_notify (best effort, never blocks) and frees; the socket stays open. */
void tls_conn_free(struct tls_conn *c);

#endif /* TLS_H */
