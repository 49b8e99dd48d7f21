// SPDX-License-Identifier: GPL-2.0
/*
 * TLS client on mbedTLS 2.28 (Debian's libmbedtls, linked statically; it is
 * dual licensed Apache-2.0 / GPL-2.0-or-later).  See tls.h.
 *
 * Why mbedTLS: it added about 0.5 MB to the static binary where OpenSSL 3
 * added 4 MB (README, dependencies), and it has what gRPC needs: ALPN, SNI,
 * chain and host name verification, client certificates.  Its 2.28 branch
 * speaks TLS 1.2 only (every gRPC server does) and checks only DNS names in
 * certificates: the IP address SANs are checked here.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <mbedtls/asn1.h>
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/error.h>
#include <mbedtls/net_sockets.h>	/* its error codes only */
#include <mbedtls/oid.h>
#include <mbedtls/pk.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>
#include "tls.h"
#include "util.h"

/* Where distributions keep their CA bundle (Debian/Ubuntu/Alpine, Fedora/RHEL, openSUSE, others). */
static const char *const system_ca_bundles[] = {
	"/etc/ssl/certs/ca-certificates.crt",
	"/etc/pki/tls/certs/ca-bundle.crt",
	"/etc/ssl/ca-bundle.pem",
	"/etc/ssl/cert.pem",
};

/* gRPC is HTTP/2 only (tls_opts.alpn NULL): a server that does not pick h2 cannot serve us. */
#define ALPN_DEFAULT "h2"

/*
 * TLS 1.2 with ephemeral ECDH only: AES-GCM and ChaCha20-Poly1305 first, then
 * AES-CBC for older servers.  The build counts on this list: link_trims.c
 * leaves out the ciphers (3DES, Camellia, Blowfish, RC4, CCM) and the finite
 * field DH that no other suite of mbedTLS's default list would need.
 */
static const int ciphersuites[] = {
	MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	MBEDTLS_TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	MBEDTLS_TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	MBEDTLS_TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	MBEDTLS_TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
	MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384,
	MBEDTLS_TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384,
	MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256,
	MBEDTLS_TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256,
	MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA,
	MBEDTLS_TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA,
	MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA,
	MBEDTLS_TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA,
	0
};

struct tls_config {
	mbedtls_ssl_config conf;
	mbedtls_entropy_context entropy;
	mbedtls_ctr_drbg_context drbg;
	mbedtls_x509_crt ca;
	mbedtls_x509_crt own_cert;
	mbedtls_pk_context own_key;
	bool skip_verify;
	const char *alpn[2];		/* the protocol offered, NULL-terminated (mbedTLS keeps the pointer) */
};

struct tls_conn {
	mbedtls_ssl_context ssl;
	int fd;
	int sock_errno;			/* errno of a failed send/recv */
	bool have_cert;			/* we have a client certificate to show */
	const char *alpn;		/* the protocol the server must pick, if it picks one */
	bool ip_literal;		/* host is an address: check the IP SANs ourselves */
	unsigned char ip[16];
	size_t ip_len;
	char host[256];
	char why[256];
};

static void mbed_why(char *buf, size_t size, const char *what, int err)
{
	char msg[160];

	mbedtls_strerror(err, msg, sizeof(msg));
	snprintf(buf, size, "%s: %s", what, msg);
}

/* The system's CA bundle: 0, or -1 after a logged line. */
static int load_system_cas(mbedtls_x509_crt *ca)
{
	for (size_t i = 0; i < sizeof(system_ca_bundles) / sizeof(system_ca_bundles[0]); i++) {
		/* A bundle with some certificates mbedTLS cannot parse is still a bundle (rv > 0). */
		if (access(system_ca_bundles[i], R_OK) == 0 &&
		    mbedtls_x509_crt_parse_file(ca, system_ca_bundles[i]) >= 0 && ca->version)
			return 0;
	}
	log_error("--tls: no system CA bundle found (%s, ...); give the OAP's CA with --ca FILE",
		  system_ca_bundles[0]);
	return -1;
}

static int load_cas(struct tls_config *cfg, const char *ca_file)
{
	char why[256];
	int rv;

	if (!ca_file)
		return load_system_cas(&cfg->ca);
	rv = mbedtls_x509_crt_parse_file(&cfg->ca, ca_file);
	if (rv == 0)
		return 0;
	if (rv > 0)
		snprintf(why, sizeof(why), "%d certificate(s) could not be parsed", rv);
	else
		mbed_why(why, sizeof(why), "not a PEM or DER certificate", rv);
	log_error("--ca %s: %s", ca_file, why);
	return -1;
}

static int load_own_cert(struct tls_config *cfg, const struct tls_opts *o)
{
	char why[256];
	int rv;

	rv = mbedtls_x509_crt_parse_file(&cfg->own_cert, o->cert_file);
	if (rv) {
		mbed_why(why, sizeof(why), "not a PEM or DER certificate", rv);
		log_error("--cert %s: %s", o->cert_file, rv > 0 ? "not every certificate parses" : why);
		return -1;
	}
	rv = mbedtls_pk_parse_keyfile(&cfg->own_key, o->key_file, NULL);
	if (rv) {
		mbed_why(why, sizeof(why), "not an unencrypted PEM or DER private key", rv);
		log_error("--key %s: %s", o->key_file, why);
		return -1;
	}
	if (mbedtls_pk_check_pair(&cfg->own_cert.pk, &cfg->own_key)) {
		log_error("--key %s is not the key of --cert %s", o->key_file, o->cert_file);
		return -1;
	}
	rv = mbedtls_ssl_conf_own_cert(&cfg->conf, &cfg->own_cert, &cfg->own_key);
	if (rv) {
		mbed_why(why, sizeof(why), "cannot use the client certificate", rv);
		log_error("--cert %s: %s", o->cert_file, why);
		return -1;
	}
	return 0;
}

static int setup_conf(struct tls_config *cfg)
{
	static const char pers[] = "aperture-tls";
	char why[256];
	int rv;

	rv = mbedtls_ctr_drbg_seed(&cfg->drbg, mbedtls_entropy_func, &cfg->entropy,
				   (const unsigned char *)pers, sizeof(pers) - 1);
	if (!rv)
		rv = mbedtls_ssl_config_defaults(&cfg->conf, MBEDTLS_SSL_IS_CLIENT,
						 MBEDTLS_SSL_TRANSPORT_STREAM, MBEDTLS_SSL_PRESET_DEFAULT);
	if (!rv)
		rv = mbedtls_ssl_conf_alpn_protocols(&cfg->conf, cfg->alpn);
	if (rv) {
		mbed_why(why, sizeof(why), "cannot set up TLS", rv);
		log_error("--tls: %s", why);
		return -1;
	}
	mbedtls_ssl_conf_rng(&cfg->conf, mbedtls_ctr_drbg_random, &cfg->drbg);
	mbedtls_ssl_conf_ciphersuites(&cfg->conf, ciphersuites);
	/* HTTP/2 (RFC 7540 9.2) wants TLS 1.2 or later. */
	mbedtls_ssl_conf_min_version(&cfg->conf, MBEDTLS_SSL_MAJOR_VERSION_3, MBEDTLS_SSL_MINOR_VERSION_3);
	return 0;
}

struct tls_config *tls_config_new(const struct tls_opts *o)
{
	struct tls_config *cfg = calloc_logged(1, sizeof(*cfg));

	if (!cfg)
		return NULL;
	mbedtls_ssl_config_init(&cfg->conf);
	mbedtls_entropy_init(&cfg->entropy);
	mbedtls_ctr_drbg_init(&cfg->drbg);
	mbedtls_x509_crt_init(&cfg->ca);
	mbedtls_x509_crt_init(&cfg->own_cert);
	mbedtls_pk_init(&cfg->own_key);
	cfg->skip_verify = o->skip_verify;
	cfg->alpn[0] = o->alpn ? o->alpn : ALPN_DEFAULT;
	if (setup_conf(cfg))
		goto fail;
	if (o->skip_verify) {
		mbedtls_ssl_conf_authmode(&cfg->conf, MBEDTLS_SSL_VERIFY_NONE);
	} else {
		if (load_cas(cfg, o->ca_file))
			goto fail;
		mbedtls_ssl_conf_authmode(&cfg->conf, MBEDTLS_SSL_VERIFY_REQUIRED);
		mbedtls_ssl_conf_ca_chain(&cfg->conf, &cfg->ca, NULL);
	}
	if (o->cert_file && load_own_cert(cfg, o))
		goto fail;
	return cfg;
fail:
	tls_config_free(cfg);
	return NULL;
}

void tls_config_free(struct tls_config *cfg)
{
	if (!cfg)
		return;
	mbedtls_ssl_config_free(&cfg->conf);
	mbedtls_ctr_drbg_free(&cfg->drbg);
	mbedtls_entropy_free(&cfg->entropy);
	mbedtls_x509_crt_free(&cfg->ca);
	mbedtls_x509_crt_free(&cfg->own_cert);
	mbedtls_pk_free(&cfg->own_key);
	free(cfg);
}

/* ---- the socket under mbedTLS ---- */

static int bio_send(void *ctx, const unsigned char *buf, size_t len)
{
	struct tls_conn *c = ctx;
	ssize_t n = send(c->fd, buf, len, MSG_NOSIGNAL);

	if (n >= 0)
		return (int)n;
	if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
		return MBEDTLS_ERR_SSL_WANT_WRITE;
	c->sock_errno = errno;
	return MBEDTLS_ERR_NET_SEND_FAILED;
}

static int bio_recv(void *ctx, unsigned char *buf, size_t len)
{
	struct tls_conn *c = ctx;
	ssize_t n = recv(c->fd, buf, len, 0);

	if (n >= 0)
		return (int)n;	/* 0: EOF, which mbedTLS reports as MBEDTLS_ERR_SSL_CONN_EOF */
	if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
		return MBEDTLS_ERR_SSL_WANT_READ;
	c->sock_errno = errno;
	return MBEDTLS_ERR_NET_RECV_FAILED;
}

struct tls_conn *tls_conn_new(struct tls_config *cfg, int fd, const char *host)
{
	struct tls_conn *c = calloc(1, sizeof(*c));
	int rv;

	if (!c)
		return NULL;
	c->fd = fd;
	c->have_cert = cfg->own_cert.version != 0;
	c->alpn = cfg->alpn[0];
	snprintf(c->host, sizeof(c->host), "%s", host);
	mbedtls_ssl_init(&c->ssl);
	rv = mbedtls_ssl_setup(&c->ssl, &cfg->conf);
	if (inet_pton(AF_INET, host, c->ip) == 1) {
		c->ip_literal = true;
		c->ip_len = 4;
	} else if (inet_pton(AF_INET6, host, c->ip) == 1) {
		c->ip_literal = true;
		c->ip_len = 16;
	}
	/*
	 * A name goes out as SNI, and mbedTLS checks it against the certificate
	 * (not under skip_verify: authmode none).  An address is no SNI (RFC
	 * 6066) and mbedTLS 2.28 does not check addresses: check_session does.
	 */
	if (!rv && !c->ip_literal)
		rv = mbedtls_ssl_set_hostname(&c->ssl, host);
	if (rv) {
		mbedtls_ssl_free(&c->ssl);
		free(c);
		return NULL;
	}
	if (cfg->skip_verify)
		c->ip_literal = false;	/* nothing to check */
	mbedtls_ssl_set_bio(&c->ssl, c, bio_send, bio_recv, NULL);
	return c;
}

/* Does the certificate list @ip among its subjectAltName iPAddress entries? */
static bool cert_has_ip(const mbedtls_x509_crt *crt, const unsigned char *ip, size_t ip_len)
{
	unsigned char *p = crt->v3_ext.p, *end = p + crt->v3_ext.len, *ext_end, *names_end;
	size_t len;

	if (!p || mbedtls_asn1_get_tag(&p, end, &len, MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE))
		return false;
	end = p + len;
	while (p < end) {
		mbedtls_x509_buf oid;
		int critical;

		if (mbedtls_asn1_get_tag(&p, end, &len, MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE))
			return false;
		ext_end = p + len;
		if (mbedtls_asn1_get_tag(&p, ext_end, &oid.len, MBEDTLS_ASN1_OID))
			return false;
		oid.p = p;
		p += oid.len;
		mbedtls_asn1_get_bool(&p, ext_end, &critical);	/* optional */
		if (MBEDTLS_OID_CMP(MBEDTLS_OID_SUBJECT_ALT_NAME, &oid) ||
		    mbedtls_asn1_get_tag(&p, ext_end, &len, MBEDTLS_ASN1_OCTET_STRING) ||
		    mbedtls_asn1_get_tag(&p, ext_end, &len, MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE)) {
			p = ext_end;
			continue;
		}
		names_end = p + len;
		while (p < names_end) {
			unsigned char tag = *p++;

			if (mbedtls_asn1_get_len(&p, names_end, &len))
				return false;
			/* GeneralName iPAddress: [7] IMPLICIT OCTET STRING, 4 or 16 bytes */
			if (tag == (MBEDTLS_ASN1_CONTEXT_SPECIFIC | 7) && len == ip_len && !memcmp(p, ip, len))
				return true;
			p += len;
		}
		p = ext_end;
	}
	return false;
}

/* What a fatal alert from the server most likely means for us. */
static const char *alert_hint(unsigned char desc)
{
	switch (desc) {
	case MBEDTLS_SSL_ALERT_MSG_HANDSHAKE_FAILURE:
		return " (handshake failure: no common cipher, or the server wants a client certificate: --cert/--key)";
	case MBEDTLS_SSL_ALERT_MSG_BAD_CERT:
	case MBEDTLS_SSL_ALERT_MSG_UNKNOWN_CA:
	case MBEDTLS_SSL_ALERT_MSG_CERT_UNKNOWN:
		return " (the server refused our --cert)";
	case MBEDTLS_SSL_ALERT_MSG_NO_APPLICATION_PROTOCOL:
		return " (no application protocol: the server does not offer ours)";
	default:
		return "";
	}
}

/* mbedTLS's verification flags as one line: its lines joined by "; ". */
static void verify_flags_line(char *out, size_t size, uint32_t flags)
{
	char info[512], *line, *save = NULL;
	size_t used = 0;

	mbedtls_x509_crt_verify_info(info, sizeof(info), "", flags);
	out[0] = '\0';
	for (line = strtok_r(info, "\n", &save); line && used < size; line = strtok_r(NULL, "\n", &save))
		used += snprintf(out + used, size - used, "%s%s", used ? "; " : "", line);
}

static void handshake_why(struct tls_conn *c, int err)
{
	uint32_t flags = mbedtls_ssl_get_verify_result(&c->ssl);
	char info[200];
	bool hung_up = false;
	size_t len;

	if (err == MBEDTLS_ERR_X509_CERT_VERIFY_FAILED && flags && flags != (uint32_t)-1) {
		verify_flags_line(info, sizeof(info), flags);
		snprintf(c->why, sizeof(c->why), "certificate of %.60s not accepted: %.160s", c->host, info);
	} else if (err == MBEDTLS_ERR_NET_SEND_FAILED || err == MBEDTLS_ERR_NET_RECV_FAILED) {
		snprintf(c->why, sizeof(c->why), "%s", strerror(c->sock_errno));
		hung_up = true;
	} else if (err == MBEDTLS_ERR_SSL_CONN_EOF) {
		snprintf(c->why, sizeof(c->why), "connection closed during the handshake%s",
			 c->ssl.client_auth ? "" : " (is it a TLS port?)");
		hung_up = true;
	} else if (err == MBEDTLS_ERR_SSL_FATAL_ALERT_MESSAGE && c->ssl.in_msg) {
		snprintf(c->why, sizeof(c->why), "the server sent fatal alert %u%s", c->ssl.in_msg[1],
			 alert_hint(c->ssl.in_msg[1]));
	} else {
		mbed_why(c->why, sizeof(c->why), "handshake failed", err);
	}
	/* A server that refuses our certificate, or its absence, often just hangs up: say what it asked. */
	len = strlen(c->why);
	if (c->ssl.client_auth && !c->have_cert && !strstr(c->why, "--cert"))
		snprintf(c->why + len, sizeof(c->why) - len, " (the server asks for a client certificate: --cert/--key)");
	else if (c->ssl.client_auth && hung_up)
		snprintf(c->why + len, sizeof(c->why) - len, " (the server may have refused our --cert)");
}

/* After the handshake: the protocol (h2) and, for an address, the address in the certificate. */
static int check_session(struct tls_conn *c)
{
	const char *alpn = mbedtls_ssl_get_alpn_protocol(&c->ssl);
	const mbedtls_x509_crt *peer;

	/* No ALPN at all: a server that predates it; HTTP/2 with prior knowledge may still work. */
	if (alpn && strcmp(alpn, c->alpn)) {
		snprintf(c->why, sizeof(c->why), "server chose ALPN protocol '%s', not %s%s", alpn, c->alpn,
			 strcmp(c->alpn, ALPN_DEFAULT) ? "" : " (gRPC)");
		return TLS_FAILED;
	}
	if (!c->ip_literal)
		return 0;
	peer = mbedtls_ssl_get_peer_cert(&c->ssl);
	if (peer && cert_has_ip(peer, c->ip, c->ip_len))
		return 0;
	snprintf(c->why, sizeof(c->why),
		 "certificate of %.46s not accepted: the address is not among its IP subject alternative names",
		 c->host);
	return TLS_FAILED;
}

int tls_handshake(struct tls_conn *c)
{
	int rv = mbedtls_ssl_handshake(&c->ssl);

	if (rv == MBEDTLS_ERR_SSL_WANT_READ)
		return TLS_WANT_READ;
	if (rv == MBEDTLS_ERR_SSL_WANT_WRITE)
		return TLS_WANT_WRITE;
	if (rv) {
		handshake_why(c, rv);
		return TLS_FAILED;
	}
	return check_session(c);
}

ssize_t tls_send(struct tls_conn *c, const void *buf, size_t len)
{
	int rv = mbedtls_ssl_write(&c->ssl, buf, len);

	if (rv > 0)
		return rv;
	if (rv == MBEDTLS_ERR_SSL_WANT_READ)
		return TLS_WANT_READ;
	if (rv == MBEDTLS_ERR_SSL_WANT_WRITE || rv == 0)
		return TLS_WANT_WRITE;
	if (rv == MBEDTLS_ERR_NET_SEND_FAILED)
		snprintf(c->why, sizeof(c->why), "%s", strerror(c->sock_errno));
	else
		mbed_why(c->why, sizeof(c->why), "TLS write", rv);
	return TLS_FAILED;
}

ssize_t tls_recv(struct tls_conn *c, void *buf, size_t len)
{
	int rv = mbedtls_ssl_read(&c->ssl, buf, len);

	if (rv > 0)
		return rv;
	if (rv == 0 || rv == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY || rv == MBEDTLS_ERR_SSL_CONN_EOF)
		return 0;
	if (rv == MBEDTLS_ERR_SSL_WANT_READ)
		return TLS_WANT_READ;
	if (rv == MBEDTLS_ERR_SSL_WANT_WRITE)
		return TLS_WANT_WRITE;
	if (rv == MBEDTLS_ERR_NET_RECV_FAILED)
		snprintf(c->why, sizeof(c->why), "%s", strerror(c->sock_errno));
	else
		mbed_why(c->why, sizeof(c->why), "TLS read", rv);
	return TLS_FAILED;
}

bool tls_pending(const struct tls_conn *c)
{
	return mbedtls_ssl_get_bytes_avail(&c->ssl) > 0;
}

const char *tls_why(const struct tls_conn *c)
{
	return c->why[0] ? c->why : "unknown TLS error";
}

void tls_conn_free(struct tls_conn *c)
{
	if (!c)
		return;
	mbedtls_ssl_close_notify(&c->ssl);	/* may not get out: the socket is non-blocking */
	mbedtls_ssl_free(&c->ssl);
	free(c);
}
