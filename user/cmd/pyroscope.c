// SPDX-License-Identifier: GPL-2.0
/*
 * The Pyroscope route: each interval's profile, per kind, pushed to Grafana
 * Pyroscope's /ingest as a pprof file in a multipart/form-data body.
 *
 * The protocol is Pyroscope's own ingest handler (grafana/pyroscope at
 * 3fe6a457a32004efc46da819cbc114472d07415e, pkg/ingester/pyroscope/
 * ingest_handler.go and pkg/og/convert/pprof/profile.go):
 * - POST /ingest?name=APP{k=v,...}&from=MS&until=MS&spyName=aperture; name is
 *   parsed by api/model/labelset (the app and label names checked here by
 *   the same rules, so a push is never refused for them);
 * - no format= parameter: the handler takes the body as multipart only when
 *   format is none of its formats; format=pprof makes it read the whole body
 *   as a bare pprof file, which a multipart body is not (422);
 * - the pprof file in the form's "profile" part, gzip as our encoder writes
 *   it; a "sample_type_config" part names what each sample type is, since
 *   the server derives the profile's metric from it: on-CPU "cpu" is
 *   process_cpu, locks are mutex (contentions, delay), and off-CPU, whose
 *   "offcpu" type would otherwise read as CPU, is named block;
 * - 200 taken; 400/413/422 refused for good (that upload is dropped, counted);
 *   everything else (401/403, 429, 5xx, no connection) is retried after a
 *   backoff, the upload kept.
 *
 * Each upload is saved in the agent's ledger (a batch file) before it is
 * queued in the agent's spool, and removed once Pyroscope took it or the
 * spool's bound dropped it: what waits, in memory and on disk, is bounded by
 * --pyroscope-spool-size, and a restart sends what the last run left.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include "agent_spool.h"
#include "agent_store.h"
#include "exporter.h"
#include "http.h"
#include "pyroscope.h"
#include "util.h"

#define PUSH_TIMEOUT_MS 10000
#define STOP_TIMEOUT_MS 2000		/* the last pushes at a stop: a dead server holds the stop no longer */
#define BACKOFF_FIRST_MS 1000
#define BACKOFF_MAX_MS 30000
#define QUERY_MAX 4096
#define PPROF_MAX (256u << 20)

/*
 * How the server names the profile's metric from its sample types (see the
 * header comment): the display names of pkg/og/storage/tree's
 * DefaultSampleTypeMapping for Go's CPU and mutex profiles, and Go's block
 * profile's for off-CPU.  Sending it replaces that default mapping.
 */
static const char sample_type_config[] =
	"{\"samples\":{\"display-name\":\"cpu\",\"units\":\"samples\",\"sampled\":true},"
	"\"cpu\":{\"units\":\"samples\",\"sampled\":true},"
	"\"switches\":{\"display-name\":\"block_count\",\"units\":\"lock_samples\"},"
	"\"offcpu\":{\"display-name\":\"block_duration\",\"units\":\"lock_nanoseconds\"},"
	"\"contentions\":{\"display-name\":\"mutex_count\",\"units\":\"lock_samples\"},"
	"\"delay\":{\"display-name\":\"mutex_duration\",\"units\":\"lock_nanoseconds\"}}";

struct pyroscope {
	struct http_target target;
	const char *url;
	char name[QUERY_MAX / 2];	/* APP{k=v,...}, percent-encoded */
	char headers[1024];		/* Authorization, X-Scope-OrgID */
	char boundary[40];
	const volatile int *stop;
	struct store store;
	struct spool spool;
	uint64_t next_seq;
	uint64_t next_try_ns;		/* CLOCK_MONOTONIC: no push before, after a failure */
	unsigned int backoff_ms;
	bool down;			/* the outage is said once */
	bool stopping;
	uint64_t pushed, refused;
};

/* api/model/labelset's rules: label names [A-Za-z0-9_.], the app name also '-' and '/'. */
static bool label_name_ok(const char *s, size_t len, bool app)
{
	if (!len)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
		      c == '.' || (app && (c == '-' || c == '/'))))
			return false;
	}
	return true;
}

bool pyroscope_check(const struct pyroscope_opts *o)
{
	struct http_target t;

	if (!http_target_parse(&t, o->url, "--pyroscope"))
		return false;
	if (o->ca_file && !t.https) {
		log_error("--pyroscope-ca: only for an https:// URL");
		return false;
	}
	if (!label_name_ok(o->app, strlen(o->app), true)) {
		log_error("--pyroscope-app '%s': want letters, digits and _ . - / only (Pyroscope's rule)", o->app);
		return false;
	}
	for (int i = 0; i < o->nlabels; i++) {
		const char *l = o->labels[i], *eq = strchr(l, '=');

		if (!eq || !label_name_ok(l, (size_t)(eq - l), false) || !strncmp(l, "__", 2) ||
		    strpbrk(eq + 1, "{},=") || !eq[1]) {
			log_error("--label '%s': want KEY=VALUE, KEY of letters, digits, _ and . (not starting "
				  "with __), VALUE non-empty without { } , =", l);
			return false;
		}
	}
	return true;
}

/* @in as a query value: unreserved bytes kept, the rest %XX.  false when it does not fit. */
static bool query_escape(char *out, size_t outlen, const char *in)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;

	for (; *in; in++) {
		unsigned char c = (unsigned char)*in;

		if (o + 4 > outlen)
			return false;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr("-._~", c)) {
			out[o++] = (char)c;
		} else {
			out[o++] = '%';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	out[o] = '\0';
	return true;
}

static void base64(char *out, const uint8_t *in, size_t len)
{
	static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t o = 0;

	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < len ? (uint32_t)in[i + 1] << 8 : 0) |
			     (i + 2 < len ? in[i + 2] : 0);

		out[o++] = abc[v >> 18];
		out[o++] = abc[(v >> 12) & 63];
		out[o++] = i + 1 < len ? abc[(v >> 6) & 63] : '=';
		out[o++] = i + 2 < len ? abc[v & 63] : '=';
	}
	out[o] = '\0';
}

/* The first line of @path, blanks around it removed, into @buf; false after one line. */
static bool read_secret(const char *opt, const char *path, char *buf, size_t size)
{
	ssize_t n = read_small_file(path, buf, size);
	char *start = buf, *end;

	if (n < 0) {
		log_error("%s %s: %s", opt, path, strerror((int)-n));
		return false;
	}
	buf[strcspn(buf, "\r\n")] = '\0';
	while (*start == ' ' || *start == '\t')
		start++;
	end = start + strlen(start);
	while (end > start && (end[-1] == ' ' || end[-1] == '\t'))
		*--end = '\0';
	memmove(buf, start, strlen(start) + 1);
	if (!*buf) {
		log_error("%s %s: empty", opt, path);
		return false;
	}
	return true;
}

static bool make_headers(struct pyroscope *p, const struct pyroscope_opts *o)
{
	char secret[256], b64[352];
	size_t len = 0;

	if (o->auth_file) {
		if (!read_secret("--pyroscope-auth-file", o->auth_file, secret, sizeof(secret)))
			return false;
		if (!strchr(secret, ':')) {
			log_error("--pyroscope-auth-file %s: want USER:PASSWORD on its first line", o->auth_file);
			return false;
		}
		base64(b64, (const uint8_t *)secret, strlen(secret));
		len += (size_t)snprintf(p->headers + len, sizeof(p->headers) - len, "Authorization: Basic %s\r\n", b64);
	}
	if (o->tenant_file) {
		if (!read_secret("--pyroscope-tenant-file", o->tenant_file, secret, sizeof(secret)))
			return false;
		if (strpbrk(secret, "\r\n\t ") || strlen(secret) > 150) {
			log_error("--pyroscope-tenant-file %s: a tenant id is one word of at most 150 bytes",
				  o->tenant_file);
			return false;
		}
		snprintf(p->headers + len, sizeof(p->headers) - len, "X-Scope-OrgID: %s\r\n", secret);
	}
	return true;
}

/* APP{k=v,...}, escaped for the query. */
static bool make_name(struct pyroscope *p, const struct pyroscope_opts *o)
{
	char raw[QUERY_MAX / 4];
	size_t len = (size_t)snprintf(raw, sizeof(raw), "%s{", o->app);

	for (int i = 0; i < o->nlabels && len < sizeof(raw); i++)
		len += (size_t)snprintf(raw + len, sizeof(raw) - len, "%s%s", i ? "," : "", o->labels[i]);
	if (len + 2 > sizeof(raw) || !query_escape(p->name, sizeof(p->name), strcat(raw, "}"))) {
		log_error("--pyroscope-app and --label: longer than %zu bytes together", sizeof(raw) - 2);
		return false;
	}
	return true;
}

/* What the last run left in the ledger goes first, in order. */
static void take_over_ledger(struct pyroscope *p)
{
	uint64_t *seqs = NULL;
	ssize_t n;

	p->next_seq = 1;
	if (!store_is_open(&p->store))
		return;
	n = store_list_batches(&p->store, &seqs);
	for (ssize_t i = 0; i < n; i++) {
		struct sw_msgs msgs = { 0 };

		if (store_load_batch(&p->store, seqs[i], &msgs) == 0)
			spool_push(&p->spool, &msgs, seqs[i]);
		p->next_seq = seqs[i] + 1;
	}
	if (n > 0)
		log_notice("pyroscope: %zd uploads the last run could not send are queued again (ledger %s)", n,
			   p->store.path);
	free(seqs);
}

static void pyroscope_close(void *state);

void *pyroscope_open(const struct pyroscope_opts *o)
{
	struct pyroscope *p = calloc_logged(1, sizeof(*p));
	char key[4200];

	if (!p)
		return NULL;
	store_init(&p->store);
	p->url = o->url;
	p->stop = o->stop;
	p->spool.limit = (size_t)o->spool_bytes;
	p->spool.store = &p->store;
	if (!http_target_parse(&p->target, o->url, "--pyroscope") || !http_target_tls(&p->target, o->ca_file) ||
	    !make_headers(p, o) || !make_name(p, o)) {
		pyroscope_close(p);
		return NULL;
	}
	snprintf(p->boundary, sizeof(p->boundary), "aperture-%08x%08x%08x", (unsigned int)random(),
		 (unsigned int)getpid(), (unsigned int)now_ns(CLOCK_REALTIME));
	snprintf(key, sizeof(key), "pyroscope %s", o->url);
	store_open(&p->store, o->state_dir, key, NULL);	/* without it, runs on (said) */
	take_over_ledger(p);
	return p;
}

int pyroscope_reload(void *state, const struct pyroscope_opts *o)
{
	struct pyroscope *p = state, *next = calloc_logged(1, sizeof(*next));

	if (!next)
		return -ENOMEM;
	if (!make_headers(next, o) || !make_name(next, o)) {
		log_error("reload: pyroscope: the running app, labels, auth and tenant are kept");
		free(next);
		return -EINVAL;
	}
	memcpy(p->name, next->name, sizeof(p->name));
	memcpy(p->headers, next->headers, sizeof(p->headers));
	free(next);
	log_notice("reload: pyroscope: app %s, %d labels%s%s: used from the next push (the profiles already "
		   "waiting keep their name)", o->app, o->nlabels, o->auth_file ? ", auth file read again" : "",
		   o->tenant_file ? ", tenant file read again" : "");
	return 0;
}

/* @prof as gzip'ed pprof, through the pprof exporter into a memory file. */
static int encode_pprof(const struct profile *prof, uint8_t **out, size_t *len)
{
	struct export_opts opts = { .value_index = -1 };
	int fd = memfd_create("aperture-pyroscope", MFD_CLOEXEC), err;
	char path[64];
	struct stat st;

	*out = NULL;
	if (fd < 0)
		return -errno;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	err = exporter_pprof.write(prof, path, &opts);
	if (!err && fstat(fd, &st))
		err = -errno;
	if (!err && (st.st_size <= 0 || (uint64_t)st.st_size > PPROF_MAX))
		err = -EFBIG;
	if (!err && !(*out = malloc((size_t)st.st_size)))
		err = -ENOMEM;
	if (!err && pread(fd, *out, (size_t)st.st_size, 0) != st.st_size)
		err = -EIO;
	if (err) {
		free(*out);
		*out = NULL;
	}
	*len = err ? 0 : (size_t)st.st_size;
	close(fd);
	return err;
}

/*
 * One upload, as the ledger keeps it: the query string, a NUL, the pprof file.
 * Saved before it is queued: a crash after this sends it at the next start.
 */
static int pyroscope_write(void *state, const struct profile *prof)
{
	struct pyroscope *p = state;
	char query[QUERY_MAX];
	struct sw_msgs msgs = { 0 };
	struct sw_msg m;
	uint8_t *pprof;
	size_t len = 0, qlen;
	int err = encode_pprof(prof, &pprof, &len);

	if (err) {
		log_error("pyroscope: cannot encode the %s profile: %s", prof->kind, strerror(-err));
		return err;
	}
	/* In milliseconds (13 digits: attime.Parse reads them as such): intervals meet exactly. */
	qlen = (size_t)snprintf(query, sizeof(query), "/ingest?name=%s&from=%" PRIu64 "&until=%" PRIu64
				"&spyName=aperture", p->name, prof->time_ns / 1000000,
				(prof->time_ns + prof->duration_ns) / 1000000) + 1;
	m.len = qlen + len;
	m.data = malloc(m.len);
	if (!m.data || sw_msgs_push(&msgs, m)) {
		free(m.data);
		free(pprof);
		log_error("pyroscope: no memory for the %s profile", prof->kind);
		return -ENOMEM;
	}
	memcpy(m.data, query, qlen);
	memcpy(m.data + qlen, pprof, len);
	free(pprof);
	if (store_save_batch(&p->store, p->next_seq, &msgs))
		spool_push(&p->spool, &msgs, 0);	/* not saved (said once): queued all the same */
	else
		spool_push(&p->spool, &msgs, store_is_open(&p->store) ? p->next_seq : 0);
	p->next_seq++;
	return 0;
}

/* The multipart/form-data body: the "profile" part, then "sample_type_config". */
static uint8_t *multipart(const struct pyroscope *p, const uint8_t *pprof, size_t len, size_t *out_len)
{
	char head[256], mid[256], tail[64];
	int hl = snprintf(head, sizeof(head), "--%s\r\nContent-Disposition: form-data; name=\"profile\"; "
			  "filename=\"profile.pprof\"\r\nContent-Type: application/octet-stream\r\n\r\n", p->boundary);
	int ml = snprintf(mid, sizeof(mid), "\r\n--%s\r\nContent-Disposition: form-data; "
			  "name=\"sample_type_config\"; filename=\"sample_type_config.json\"\r\n"
			  "Content-Type: application/json\r\n\r\n", p->boundary);
	int tl = snprintf(tail, sizeof(tail), "\r\n--%s--\r\n", p->boundary);
	size_t cl = strlen(sample_type_config);
	uint8_t *body = malloc((size_t)(hl + ml + tl) + len + cl), *w = body;

	if (!body)
		return NULL;
	memcpy(w, head, (size_t)hl), w += hl;
	memcpy(w, pprof, len), w += len;
	memcpy(w, mid, (size_t)ml), w += ml;
	memcpy(w, sample_type_config, cl), w += cl;
	memcpy(w, tail, (size_t)tl), w += tl;
	*out_len = (size_t)(w - body);
	return body;
}

static void backoff(struct pyroscope *p)
{
	p->backoff_ms = p->backoff_ms ? p->backoff_ms * 2 : BACKOFF_FIRST_MS;
	if (p->backoff_ms > BACKOFF_MAX_MS)
		p->backoff_ms = BACKOFF_MAX_MS;
	p->next_try_ns = now_ns(CLOCK_MONOTONIC) + (uint64_t)p->backoff_ms * 1000000;
}

static enum spool_verdict send_one(void *ctx, const struct sw_msgs *msgs)
{
	struct pyroscope *p = ctx;
	const struct sw_msg *m = &msgs->v[0];
	const char *query = (const char *)m->data;
	size_t qlen = strnlen(query, m->len), blen;
	char headers[1200], why[512];
	struct http_reply reply = { 0 };
	uint8_t *body;
	int err;

	if (msgs->n != 1 || qlen == m->len || strncmp(query, "/ingest?", 8)) {
		log_warn("pyroscope: a queued upload is not one of ours (ledger damaged?): dropped");
		return SPOOL_REJECTED;
	}
	body = multipart(p, m->data + qlen + 1, m->len - qlen - 1, &blen);
	if (!body)
		return SPOOL_RETRY;
	snprintf(headers, sizeof(headers), "%sContent-Type: multipart/form-data; boundary=%s\r\n", p->headers,
		 p->boundary);
	err = http_post(&p->target, query, headers, body, blen, p->stopping ? STOP_TIMEOUT_MS : PUSH_TIMEOUT_MS,
			p->stopping ? NULL : p->stop, &reply, why, sizeof(why));
	free(body);
	if (err == -ECANCELED)
		return SPOOL_RETRY;	/* stopping: the last try comes with the stop's own deadline */
	if (!err && reply.status / 100 == 2) {
		if (p->down)
			log_notice("pyroscope %s: pushing again", p->url);
		p->down = false;
		p->backoff_ms = 0;
		p->pushed++;
		return SPOOL_SENT;
	}
	if (!err && (reply.status == 400 || reply.status == 413 || reply.status == 422)) {
		log_warn("pyroscope %s: refused an upload: HTTP %d: %s; dropped", p->url, reply.status, reply.text);
		p->refused++;
		return SPOOL_REJECTED;
	}
	if (!err)
		snprintf(why, sizeof(why), "HTTP %d: %s%s", reply.status, reply.text,
			 reply.status == 401 || reply.status == 403 ? " (check --pyroscope-auth-file and "
			 "--pyroscope-tenant-file)" : "");
	if (!p->down)
		log_warn("pyroscope %s: %s; retrying with a backoff, the profiles wait in the spool (at most %zu "
			 "bytes)", p->url, why, p->spool.limit);
	p->down = true;
	backoff(p);
	return SPOOL_RETRY;
}

/*
 * Pushes what waits, unless a failure's backoff says not yet; then asks for
 * the next poll at the backoff's end, or in RETRY_TICK_NS when an upload
 * waits with no backoff (one could not be encoded), and not at all when the
 * spool is empty.
 */
#define RETRY_TICK_NS 100000000ull

static uint64_t pyroscope_poll(void *state, bool stopping)
{
	struct pyroscope *p = state;
	uint64_t now;

	p->stopping = stopping;
	if (p->spool.head && (stopping || now_ns(CLOCK_MONOTONIC) >= p->next_try_ns))
		spool_drain(&p->spool, send_one, p);
	if (!p->spool.head)
		return UINT64_MAX;
	now = now_ns(CLOCK_MONOTONIC);
	return p->next_try_ns > now ? p->next_try_ns : now + RETRY_TICK_NS;
}

static void pyroscope_health(void *state, struct usage_line *line)
{
	struct pyroscope *p = state;
	size_t waiting = 0;

	for (struct spool_batch *b = p->spool.head; b; b = b->next)
		waiting++;
	usage_append(line, "pyroscope: %s, %" PRIu64 " pushed, %zu waiting (%zu of %zu bytes), %" PRIu64
		     " refused, %" PRIu64 " dropped (spool full); ", p->down ? "down" : "up", p->pushed, waiting,
		     p->spool.bytes, p->spool.limit, p->refused, p->spool.dropped_msgs);
}

static void pyroscope_close(void *state)
{
	struct pyroscope *p = state;

	if (!p)
		return;
	spool_log_losses(&p->spool, p->url);
	spool_free(&p->spool);
	store_close(&p->store);
	http_target_free(&p->target);
	free(p);
}

const struct output_ops pyroscope_output = {
	.name = "pyroscope",
	.write = pyroscope_write,
	.poll = pyroscope_poll,
	.health = pyroscope_health,
	.close = pyroscope_close,
};
