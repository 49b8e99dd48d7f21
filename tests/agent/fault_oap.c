// SPDX-License-Identifier: GPL-2.0
/*
 * A SkyWalking OAP that misbehaves at the HTTP/2 level, which a grpcio
 * server (fake_oap.py) cannot be made to do.  h2c with prior knowledge on
 * libnghttp2's server API, one thread, one poll() loop.  Messages are
 * decoded and encoded with protobuf-c, not the agent's nanopb code.
 *
 *   fault_oap --port P --log FILE [--mode MODE] [--faults N] [--on METHODS]
 *             [--task-seconds S] [--delay-ms MS] [--after-task]
 *
 * It answers the four calls of `aperture run` as the OAP would: an id for
 * every reported process, one FIXED_TIME ON_CPU task of --task-seconds for
 * every known process (handed out while latestUpdateTime is older than it),
 * and it stores the profiling data of collectProfilingData.  The first
 * --faults calls (default 3) of the --on methods (report, keepalive, query,
 * collect, all; comma-separated; default collect) misbehave as --mode says
 * (with --after-task, the first calls after the task was handed out):
 *
 *   ok       no fault
 *   goaway   GOAWAY (NO_ERROR, last stream before this one) when the call
 *            starts, then the connection is closed
 *   rst      RST_STREAM (INTERNAL_ERROR) once the first request DATA came
 *   ctype    :status 200, content-type text/html, an HTML page, then trailers
 *            with grpc-status 0 (which a client must not believe: not gRPC)
 *   badpb    grpc-status 0 with a message that is no protobuf
 *   huge     grpc-status 0 after a 64 MiB message (prefix and bytes)
 *   slow     no answer (--delay-ms MS: the normal answer after MS)
 *   http500  :status 500, text/plain
 *   die      the server exits (as if killed) once the first request DATA came
 *   http1    an HTTP/1.1 server: the first --faults connections get a 400
 *            and are closed (a port of the OAP that speaks HTTP/1.1; --on
 *            does not apply)
 *   tls      a TLS server: the first --faults connections get a TLS alert
 *            (unexpected_message) and are closed
 *
 * The log (appended, one line each):
 *   listening PORT mode=MODE faults=N
 *   connection accepted (N open)
 *   call N METHOD fault=MODE|- bytes=B messages=M samples=S complete=0|1 answer=WHAT close=H2ERROR
 *   task ID process PROCESSID
 *   record TASK PROCESS START CURRENT STACKIDS COUNT
 *   held TASK PROCESS START CURRENT STACKIDS COUNT
 * A record line is written for each profiling message of an upload the
 * server answered with grpc-status 0 (what it stored); a resent upload
 * writes the same records again (the real OAP overwrites them by id).  A
 * held line is one of an upload that arrived whole but was not answered
 * so: the agent must send it again.
 */
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <nghttp2/nghttp2.h>
#include "common/Command.pb-c.h"
#include "ebpf/profiling/Process.pb-c.h"
#include "ebpf/profiling/Profile.pb-c.h"

#define PREFIX_LEN 5
#define MAX_REQUEST (32u << 20)		/* a request larger than this is reset */
#define HUGE_LEN (64u << 20)
#define MAX_PROCS 64
#define MAX_CONNS 32

enum mode { MODE_OK, MODE_GOAWAY, MODE_RST, MODE_CTYPE, MODE_BADPB, MODE_HUGE, MODE_SLOW,
	    MODE_HTTP500, MODE_DIE, MODE_HTTP1, MODE_TLS, MODE_COUNT };
static const char *const mode_names[MODE_COUNT] = {
	"ok", "goaway", "rst", "ctype", "badpb", "huge", "slow", "http500", "die", "http1", "tls",
};

enum method { M_OTHER, M_REPORT, M_KEEPALIVE, M_QUERY, M_COLLECT, M_COUNT };
static const char *const method_paths[M_COUNT] = {
	"", "/skywalking.v3.EBPFProcessService/reportProcesses",
	"/skywalking.v3.EBPFProcessService/keepAlive",
	"/skywalking.v3.EBPFProfilingService/queryTasks",
	"/skywalking.v3.EBPFProfilingService/collectProfilingData",
};
static const char *const method_short[M_COUNT] = { "other", "report", "keepalive", "query", "collect" };

struct options {
	int port;
	const char *log_path;
	enum mode mode;
	unsigned int faults;
	unsigned int on;		/* bit per enum method */
	int task_seconds;		/* 0: no task */
	long delay_ms;			/* slow: -1 never answers */
	bool after_task;		/* faults only once the task was handed out */
};

struct process {
	int32_t pid;
	char id[64];
};

/* What the server knows across connections. */
struct oap {
	struct options o;
	FILE *log;
	unsigned int faults_left;
	unsigned int calls;
	struct process procs[MAX_PROCS];
	int nprocs;
	char task_id[64];		/* "" until the first query with a known process */
	int64_t task_update_ms;
};

struct stream {
	int32_t id;
	unsigned int call_no;
	enum method method;
	bool faulty;			/* this call misbehaves as --mode says */
	bool complete;			/* the request's END_STREAM came */
	bool reset_sent;
	bool stored;			/* answered grpc-status 0: its records are written */
	const char *answer;		/* what it was answered, for the log */
	uint8_t *req;			/* request DATA, still framed */
	size_t req_len, req_cap;
	uint8_t *body;			/* response DATA to send */
	size_t body_len, body_off;
	uint64_t filler_left;		/* huge: bytes after body still to send */
	bool trailers;			/* grpc-status 0 after the body */
	int64_t answer_at_ms;		/* slow with --delay-ms: when; 0: none due */
	struct stream *next;
};

struct conn {
	int fd;
	nghttp2_session *session;
	struct stream *streams;
	bool dead;
	bool foreign;			/* http1, tls modes: answers what comes in another protocol */
	struct oap *oap;
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- options ---- */

static int mode_of(const char *name)
{
	for (int m = 0; m < MODE_COUNT; m++)
		if (!strcmp(name, mode_names[m]))
			return m;
	return -1;
}

/* "collect,query" or "all" into method bits; 0 on a bad name. */
static unsigned int methods_of(const char *list)
{
	char copy[256], *tok, *save = NULL;
	unsigned int bits = 0;

	snprintf(copy, sizeof(copy), "%s", list);
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int m;

		if (!strcmp(tok, "all"))
			return ~0u;
		for (m = 1; m < M_COUNT && strcmp(tok, method_short[m]); m++)
			;
		if (m == M_COUNT)
			return 0;
		bits |= 1u << m;
	}
	return bits;
}

static void usage(void)
{
	fprintf(stderr, "usage: fault_oap --port P --log FILE [--mode MODE] [--faults N] "
		"[--on report,keepalive,query,collect|all] [--task-seconds S] [--delay-ms MS] "
		"[--after-task]\n");
	exit(2);
}

static void parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "port", required_argument, NULL, 'p' }, { "log", required_argument, NULL, 'l' },
		{ "mode", required_argument, NULL, 'm' }, { "faults", required_argument, NULL, 'n' },
		{ "on", required_argument, NULL, 'o' }, { "task-seconds", required_argument, NULL, 't' },
		{ "delay-ms", required_argument, NULL, 'd' }, { "after-task", no_argument, NULL, 'a' },
		{ 0 },
	};
	int c, m;

	*o = (struct options){ .port = -1, .faults = 3, .on = 1u << M_COLLECT, .task_seconds = 6,
			       .delay_ms = -1 };
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'p': o->port = atoi(optarg); break;
		case 'l': o->log_path = optarg; break;
		case 'n': o->faults = (unsigned int)atoi(optarg); break;
		case 't': o->task_seconds = atoi(optarg); break;
		case 'd': o->delay_ms = atol(optarg); break;
		case 'a': o->after_task = true; break;
		case 'o':
			o->on = methods_of(optarg);
			if (!o->on)
				usage();
			break;
		case 'm':
			m = mode_of(optarg);
			if (m < 0)
				usage();
			o->mode = (enum mode)m;
			break;
		default: usage();
		}
	}
	if (o->port < 0 || !o->log_path)
		usage();
}

/* ---- the request ---- */

/* The next framed message of @s at *@off: its bytes and length, or NULL at the end or on a bad frame. */
static const uint8_t *next_message(const struct stream *s, size_t *off, size_t *len)
{
	const uint8_t *p;

	if (*off + PREFIX_LEN > s->req_len)
		return NULL;
	p = s->req + *off;
	if (p[0] != 0)
		return NULL;	/* compressed: the agent never does that */
	*len = (size_t)p[1] << 24 | (size_t)p[2] << 16 | (size_t)p[3] << 8 | p[4];
	if (*off + PREFIX_LEN + *len > s->req_len)
		return NULL;
	*off += PREFIX_LEN + *len;
	return p + PREFIX_LEN;
}

/* The request's only message (unary calls), unpacked with @desc; NULL if it does not decode. */
static ProtobufCMessage *unary_request(const struct stream *s, const ProtobufCMessageDescriptor *desc)
{
	size_t off = 0, len;
	const uint8_t *msg = next_message(s, &off, &len);

	return msg ? protobuf_c_message_unpack(desc, NULL, len, msg) : NULL;
}

/* "kernelId_userId" as the OAP joins the stack ids of a record. */
static void stack_ids(const Skywalking__V3__EBPFProfilingStackMetadata *const *stacks, size_t n,
		      char *out, size_t size)
{
	int kernel = -1, user = -1;

	for (size_t i = 0; i < n; i++) {
		if (stacks[i]->stacktype == SKYWALKING__V3__EBPFPROFILING_STACK_TYPE__PROCESS_USER_SPACE)
			user = stacks[i]->stackid;
		else
			kernel = stacks[i]->stackid;
	}
	if (kernel >= 0 && user >= 0)
		snprintf(out, size, "%d_%d", kernel, user);
	else
		snprintf(out, size, "%d", kernel >= 0 ? kernel : user);
}

/* The count of one profiling message, and its stack ids. */
static uint64_t message_count(const Skywalking__V3__EBPFProfilingData *d, char *ids, size_t size)
{
	if (d->profiling_case == SKYWALKING__V3__EBPFPROFILING_DATA__PROFILING_ON_CPU) {
		stack_ids((const void *)d->oncpu->stacks, d->oncpu->n_stacks, ids, size);
		return (uint64_t)d->oncpu->dumpcount;
	}
	if (d->profiling_case == SKYWALKING__V3__EBPFPROFILING_DATA__PROFILING_OFF_CPU) {
		stack_ids((const void *)d->offcpu->stacks, d->offcpu->n_stacks, ids, size);
		return (uint64_t)d->offcpu->switchcount;
	}
	snprintf(ids, size, "-");
	return 0;
}

/*
 * Walks an upload: counts its messages and samples; with @tag ("record",
 * "held"), writes a line for each.  The task metadata of a message holds for
 * the messages after it until the next one that carries its own.
 */
static void walk_upload(struct oap *oap, const struct stream *s, const char *tag, unsigned int *nmsgs,
			uint64_t *samples)
{
	Skywalking__V3__EBPFProfilingTaskMetadata *task = NULL;
	Skywalking__V3__EBPFProfilingData *held = NULL;	/* owns @task */
	size_t off = 0, len;
	const uint8_t *msg;

	*nmsgs = 0;
	*samples = 0;
	while ((msg = next_message(s, &off, &len))) {
		Skywalking__V3__EBPFProfilingData *d =
			skywalking__v3__ebpfprofiling_data__unpack(NULL, len, msg);
		char ids[32];
		uint64_t count;

		if (!d) {
			fprintf(oap->log, "undecodable profiling message in call %u\n", s->call_no);
			break;
		}
		count = message_count(d, ids, sizeof(ids));
		(*nmsgs)++;
		*samples += count;
		if (d->task) {
			if (held)
				skywalking__v3__ebpfprofiling_data__free_unpacked(held, NULL);
			held = d;
			task = d->task;
		}
		if (tag && task)
			fprintf(oap->log, "%s %s %s %lld %lld %s %llu\n", tag, task->taskid, task->processid,
				(long long)task->profilingstarttime, (long long)task->currenttime, ids,
				(unsigned long long)count);
		if (d != held)
			skywalking__v3__ebpfprofiling_data__free_unpacked(d, NULL);
	}
	if (held)
		skywalking__v3__ebpfprofiling_data__free_unpacked(held, NULL);
}

/* ---- replies ---- */

/* The gRPC message prefix: not compressed, big-endian length. */
static void put_prefix(uint8_t *p, uint32_t len)
{
	p[0] = 0;
	p[1] = (uint8_t)(len >> 24);
	p[2] = (uint8_t)(len >> 16);
	p[3] = (uint8_t)(len >> 8);
	p[4] = (uint8_t)len;
}

/* Frames a packed message as the response body of @s. 0 or -ENOMEM. */
static int set_body(struct stream *s, const ProtobufCMessage *msg)
{
	size_t len = msg ? protobuf_c_message_get_packed_size(msg) : 0;

	s->body = malloc(PREFIX_LEN + len);
	if (!s->body)
		return -ENOMEM;
	put_prefix(s->body, (uint32_t)len);
	if (msg)
		protobuf_c_message_pack(msg, s->body + PREFIX_LEN);
	s->body_len = PREFIX_LEN + len;
	return 0;
}

static struct process *process_known(struct oap *oap, int32_t pid)
{
	for (int i = 0; i < oap->nprocs; i++)
		if (oap->procs[i].pid == pid)
			return &oap->procs[i];
	return NULL;
}

/* The process id the OAP gives @pid, remembered for queryTasks. */
static const char *process_id(struct oap *oap, int32_t pid)
{
	struct process *p = process_known(oap, pid);

	if (p || oap->nprocs == MAX_PROCS)
		return p ? p->id : "too-many-processes";
	p = &oap->procs[oap->nprocs++];
	p->pid = pid;
	snprintf(p->id, sizeof(p->id), "fault-process-%d", pid);
	return p->id;
}

/* reportProcesses: an id for each host process, with its pid and entity as sent. */
static int reply_report(struct oap *oap, struct stream *s)
{
	Skywalking__V3__EBPFProcessReportList *req = (void *)unary_request(
		s, &skywalking__v3__ebpfprocess_report_list__descriptor);
	Skywalking__V3__EBPFReportProcessDownstream reply = SKYWALKING__V3__EBPFREPORT_PROCESS_DOWNSTREAM__INIT;
	Skywalking__V3__EBPFProcessDownstream *downs = NULL, **list = NULL;
	Skywalking__V3__EBPFHostProcessDownstream *hosts = NULL;
	size_t n = 0;
	int err = -ENOMEM;

	if (!req)
		return set_body(s, NULL);	/* not for us to judge: the agent's tests do */
	downs = calloc(req->n_processes + 1, sizeof(*downs));
	hosts = calloc(req->n_processes + 1, sizeof(*hosts));
	list = calloc(req->n_processes + 1, sizeof(*list));
	if (!downs || !hosts || !list)
		goto out;
	for (size_t i = 0; i < req->n_processes; i++) {
		const Skywalking__V3__EBPFHostProcessMetadata *h = req->processes[i]->hostprocess;

		if (req->processes[i]->metadata_case !=
		    SKYWALKING__V3__EBPFPROCESS_PROPERTIES__METADATA_HOST_PROCESS)
			continue;
		skywalking__v3__ebpfhost_process_downstream__init(&hosts[n]);
		hosts[n].pid = h->pid;
		hosts[n].entitymetadata = h->entity;
		skywalking__v3__ebpfprocess_downstream__init(&downs[n]);
		downs[n].processid = (char *)process_id(oap, h->pid);
		downs[n].process_case = SKYWALKING__V3__EBPFPROCESS_DOWNSTREAM__PROCESS_HOST_PROCESS;
		downs[n].hostprocess = &hosts[n];
		list[n] = &downs[n];
		n++;
	}
	reply.n_processes = n;
	reply.processes = list;
	err = set_body(s, &reply.base);
out:
	free(list);
	free(hosts);
	free(downs);
	skywalking__v3__ebpfprocess_report_list__free_unpacked(req, NULL);
	return err;
}

#define TASK_ARGS 9

/* The task command for one process, as CommandService builds it (strings in @store). */
static void task_command(const struct oap *oap, const struct process *p, Skywalking__V3__Command *cmd,
			 Skywalking__V3__KeyStringValuePair *kv, Skywalking__V3__KeyStringValuePair **kvp,
			 char store[][32])
{
	const char *keys[TASK_ARGS] = { "SerialNumber", "TaskId", "ProcessId", "TaskUpdateTime",
					"TriggerType", "TargetType", "TaskStartTime",
					"ExtensionConfigJSON", "FixedTriggerDuration" };
	const char *values[TASK_ARGS] = { "fault-serial", oap->task_id, p->id, store[0], "FIXED_TIME",
					  "ON_CPU", store[0], "null", store[1] };

	snprintf(store[0], 32, "%lld", (long long)oap->task_update_ms);
	snprintf(store[1], 32, "%d", oap->o.task_seconds);
	skywalking__v3__command__init(cmd);
	cmd->command = "EBPFProfilingTaskQuery";
	for (int i = 0; i < TASK_ARGS; i++) {
		skywalking__v3__key_string_value_pair__init(&kv[i]);
		kv[i].key = (char *)keys[i];
		kv[i].value = (char *)values[i];
		kvp[i] = &kv[i];
	}
	cmd->n_args = TASK_ARGS;
	cmd->args = kvp;
}

/* The one task is created at the first query once a process is known. */
static void create_task(struct oap *oap)
{
	if (oap->task_id[0] || !oap->nprocs || oap->o.task_seconds <= 0)
		return;
	oap->task_update_ms = now_ms();
	snprintf(oap->task_id, sizeof(oap->task_id), "fault-task-%lld", (long long)oap->task_update_ms);
}

/* queryTasks: the task for every known process while latestUpdateTime is older than it. */
static int reply_query(struct oap *oap, struct stream *s)
{
	Skywalking__V3__EBPFProfilingTaskQuery *req = (void *)unary_request(
		s, &skywalking__v3__ebpfprofiling_task_query__descriptor);
	Skywalking__V3__Commands reply = SKYWALKING__V3__COMMANDS__INIT;
	Skywalking__V3__Command cmds[MAX_PROCS], *list[MAX_PROCS];
	Skywalking__V3__KeyStringValuePair kv[MAX_PROCS][TASK_ARGS], *kvp[MAX_PROCS][TASK_ARGS];
	char store[MAX_PROCS][2][32];
	int64_t latest = req ? req->latestupdatetime : 0;

	if (req)
		skywalking__v3__ebpfprofiling_task_query__free_unpacked(req, NULL);
	create_task(oap);
	if (oap->task_id[0] && latest < oap->task_update_ms) {
		for (int i = 0; i < oap->nprocs; i++) {
			task_command(oap, &oap->procs[i], &cmds[i], kv[i], kvp[i], store[i]);
			list[i] = &cmds[i];
			fprintf(oap->log, "task %s process %s\n", oap->task_id, oap->procs[i].id);
		}
		reply.n_commands = (size_t)oap->nprocs;
		reply.commands = list;
	}
	return set_body(s, &reply.base);
}

/* An upload answered with grpc-status 0 is stored, whatever the message that goes with it. */
static void store_upload(struct oap *oap, struct stream *s)
{
	unsigned int nmsgs;
	uint64_t samples;

	if (s->method != M_COLLECT)
		return;
	walk_upload(oap, s, "record", &nmsgs, &samples);
	s->stored = true;
}

/* The answer a well-behaved OAP gives. */
static int good_reply(struct oap *oap, struct stream *s)
{
	s->trailers = true;
	s->answer = "ok";
	switch (s->method) {
	case M_REPORT:
		return reply_report(oap, s);
	case M_QUERY:
		return reply_query(oap, s);
	case M_COLLECT:
		store_upload(oap, s);
		return set_body(s, NULL);	/* Commands, empty */
	default:
		return set_body(s, NULL);	/* keepAlive: Commands, empty */
	}
}

/* Garbage where a protobuf message should be: a field whose length runs past the end. */
static int bad_reply(struct oap *oap, struct stream *s)
{
	static const uint8_t garbage[] = { 0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0xde, 0xad, 0xbe, 0xef };

	s->body = malloc(PREFIX_LEN + sizeof(garbage));
	if (!s->body)
		return -ENOMEM;
	put_prefix(s->body, sizeof(garbage));
	memcpy(s->body + PREFIX_LEN, garbage, sizeof(garbage));
	s->body_len = PREFIX_LEN + sizeof(garbage);
	s->trailers = true;
	s->answer = "badpb";
	store_upload(oap, s);
	return 0;
}

/* A 64 MiB message: its prefix says so, and that many bytes follow (zeros). */
static int huge_reply(struct stream *s)
{
	s->body = malloc(PREFIX_LEN);
	if (!s->body)
		return -ENOMEM;
	put_prefix(s->body, HUGE_LEN);
	s->body_len = PREFIX_LEN;
	s->filler_left = HUGE_LEN;
	s->trailers = true;
	s->answer = "huge";
	return 0;
}

static int text_reply(struct stream *s, const char *text, const char *answer)
{
	s->body = (uint8_t *)strdup(text);
	if (!s->body)
		return -ENOMEM;
	s->body_len = strlen(text);
	s->answer = answer;
	return 0;
}

/* ---- sending ---- */

static ssize_t read_body(nghttp2_session *session, int32_t stream_id, uint8_t *buf, size_t length,
			 uint32_t *data_flags, nghttp2_data_source *source, void *user_data)
{
	struct stream *s = source->ptr;
	size_t n = 0;

	if (s->body_off < s->body_len) {
		n = s->body_len - s->body_off < length ? s->body_len - s->body_off : length;
		memcpy(buf, s->body + s->body_off, n);
		s->body_off += n;
	} else if (s->filler_left) {
		n = s->filler_left < length ? (size_t)s->filler_left : length;
		memset(buf, 0, n);
		s->filler_left -= n;
	}
	if (s->body_off == s->body_len && !s->filler_left) {
		*data_flags |= NGHTTP2_DATA_FLAG_EOF;
		if (s->trailers) {
			nghttp2_nv trailer[] = {
				{ (uint8_t *)"grpc-status", (uint8_t *)"0", 11, 1, NGHTTP2_NV_FLAG_NONE },
			};

			*data_flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
			if (nghttp2_submit_trailer(session, stream_id, trailer, 1))
				return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
		}
	}
	return (ssize_t)n;
}

/* Response headers, then the body (and trailers) of @s. */
static void submit(struct conn *c, struct stream *s, const char *status, const char *ctype)
{
	nghttp2_data_provider body = { .source.ptr = s, .read_callback = read_body };
	nghttp2_nv hdrs[] = {
		{ (uint8_t *)":status", (uint8_t *)status, 7, strlen(status), NGHTTP2_NV_FLAG_NONE },
		{ (uint8_t *)"content-type", (uint8_t *)ctype, 12, strlen(ctype), NGHTTP2_NV_FLAG_NONE },
	};

	if (nghttp2_submit_response(c->session, s->id, hdrs, 2, &body))
		nghttp2_submit_rst_stream(c->session, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_INTERNAL_ERROR);
}

/* Answers a complete request, as --mode says when the call is faulty. */
static void answer(struct conn *c, struct stream *s)
{
	const char *status = "200", *ctype = "application/grpc";
	int err;

	switch (s->faulty ? c->oap->o.mode : MODE_OK) {
	case MODE_CTYPE:
		err = text_reply(s, "<html><body><h1>Welcome</h1></body></html>\n", "ctype");
		s->trailers = true;	/* grpc-status 0 too, which a client must not believe */
		ctype = "text/html; charset=utf-8";
		break;
	case MODE_HTTP500:
		err = text_reply(s, "internal server error\n", "http500");
		status = "500";
		ctype = "text/plain";
		break;
	case MODE_BADPB:
		err = bad_reply(c->oap, s);
		break;
	case MODE_HUGE:
		err = huge_reply(s);
		break;
	default:
		err = good_reply(c->oap, s);
	}
	if (err)
		nghttp2_submit_rst_stream(c->session, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_INTERNAL_ERROR);
	else
		submit(c, s, status, ctype);
}

/* A complete request: answered now, later (slow --delay-ms) or never (slow). */
static void request_done(struct conn *c, struct stream *s)
{
	s->complete = true;
	if (!s->faulty || c->oap->o.mode != MODE_SLOW) {
		answer(c, s);
		return;
	}
	s->answer = "slow";
	if (c->oap->o.delay_ms >= 0)
		s->answer_at_ms = now_ms() + c->oap->o.delay_ms;
}

/* ---- streams ---- */

static struct stream *stream_of(struct conn *c, int32_t id)
{
	return nghttp2_session_get_stream_user_data(c->session, id);
}

static void stream_unlink(struct conn *c, struct stream *s)
{
	for (struct stream **pp = &c->streams; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	free(s->req);
	free(s->body);
	free(s);
}

/* The call line: what came, and how it was answered; the held lines of an upload not stored. */
static void log_call(struct oap *oap, const struct stream *s, uint32_t error_code)
{
	unsigned int nmsgs = 0;
	uint64_t samples = 0;

	if (s->method == M_COLLECT)
		walk_upload(oap, s, s->complete && !s->stored ? "held" : NULL, &nmsgs, &samples);
	fprintf(oap->log, "call %u %s fault=%s bytes=%zu messages=%u samples=%llu complete=%d answer=%s close=%s\n",
		s->call_no, method_short[s->method], s->faulty ? mode_names[oap->o.mode] : "-",
		s->req_len, nmsgs, (unsigned long long)samples, s->complete,
		s->answer ? s->answer : "none", nghttp2_http2_strerror(error_code));
}

/* Whether the call that starts now misbehaves: the first --faults of the --on methods. */
static bool takes_fault(struct oap *oap, enum method m)
{
	if (oap->o.mode == MODE_OK || !(oap->o.on & (1u << m)) || !oap->faults_left)
		return false;
	if (oap->o.after_task && !oap->task_id[0])
		return false;
	oap->faults_left--;
	return true;
}

/* Request headers are in: the faults that strike when a call starts. */
static void call_started(struct conn *c, struct stream *s)
{
	struct oap *oap = c->oap;

	s->call_no = ++oap->calls;
	s->faulty = takes_fault(oap, s->method);
	if (s->faulty && oap->o.mode == MODE_GOAWAY) {
		/* This stream and any later one were never processed: the client may retry them. */
		s->answer = "goaway";
		nghttp2_session_terminate_session2(c->session, s->id > 2 ? s->id - 2 : 0, NGHTTP2_NO_ERROR);
	}
}

/* Resets the stream of @s, which will not be answered (@why, for the log). */
static void reset(struct conn *c, struct stream *s, const char *why)
{
	s->reset_sent = true;
	s->answer = why;
	nghttp2_submit_rst_stream(c->session, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_INTERNAL_ERROR);
}

/* Keeps @len more request bytes; false when there is no room. */
static bool keep_request(struct stream *s, const uint8_t *data, size_t len)
{
	size_t cap = s->req_cap ? s->req_cap : 4096;
	uint8_t *grown;

	if (s->req_len + len > MAX_REQUEST)
		return false;
	if (s->req_len + len > s->req_cap) {
		while (cap < s->req_len + len)
			cap *= 2;
		grown = realloc(s->req, cap);
		if (!grown)
			return false;
		s->req = grown;
		s->req_cap = cap;
	}
	memcpy(s->req + s->req_len, data, len);
	s->req_len += len;
	return true;
}

/* Request DATA: kept, and the faults that strike mid-upload. */
static void request_data(struct conn *c, struct stream *s, const uint8_t *data, size_t len)
{
	struct oap *oap = c->oap;

	if (s->faulty && oap->o.mode == MODE_DIE) {
		fprintf(oap->log, "call %u %s fault=die bytes=%zu: exiting\n", s->call_no,
			method_short[s->method], s->req_len + len);
		fflush(oap->log);
		_exit(3);
	}
	if (s->reset_sent)
		return;
	if (!keep_request(s, data, len))
		reset(c, s, "too-large");	/* a test server has its limits too */
	else if (s->faulty && oap->o.mode == MODE_RST)
		reset(c, s, "rst");	/* what came is logged with the call */
}

/* ---- nghttp2 callbacks ---- */

static ssize_t on_send(nghttp2_session *session, const uint8_t *data, size_t length, int flags,
		       void *user_data)
{
	struct conn *c = user_data;
	ssize_t n = send(c->fd, data, length, MSG_NOSIGNAL);

	if (n >= 0)
		return n;
	if (errno == EAGAIN || errno == EINTR)
		return NGHTTP2_ERR_WOULDBLOCK;
	return NGHTTP2_ERR_CALLBACK_FAILURE;
}

static int on_begin_headers(nghttp2_session *session, const nghttp2_frame *frame, void *user_data)
{
	struct conn *c = user_data;
	struct stream *s;

	if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	s->id = frame->hd.stream_id;
	s->next = c->streams;
	c->streams = s;
	nghttp2_session_set_stream_user_data(session, s->id, s);
	return 0;
}

static int on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name,
		     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags, void *user_data)
{
	struct stream *s = stream_of(user_data, frame->hd.stream_id);

	if (!s || namelen != 5 || memcmp(name, ":path", 5))
		return 0;
	for (int m = 1; m < M_COUNT; m++)
		if (strlen(method_paths[m]) == valuelen && !memcmp(method_paths[m], value, valuelen))
			s->method = (enum method)m;
	return 0;
}

static int on_frame_recv(nghttp2_session *session, const nghttp2_frame *frame, void *user_data)
{
	struct conn *c = user_data;
	struct stream *s = stream_of(c, frame->hd.stream_id);

	if (!s)
		return 0;
	if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST)
		call_started(c, s);
	if ((frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
	    (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) && !s->reset_sent && !s->answer)
		request_done(c, s);
	return 0;
}

static int on_data_chunk(nghttp2_session *session, uint8_t flags, int32_t stream_id, const uint8_t *data,
			 size_t len, void *user_data)
{
	struct conn *c = user_data;
	struct stream *s = stream_of(c, stream_id);

	if (s)
		request_data(c, s, data, len);
	return 0;
}

static int on_stream_close(nghttp2_session *session, int32_t stream_id, uint32_t error_code, void *user_data)
{
	struct conn *c = user_data;
	struct stream *s = stream_of(c, stream_id);

	if (!s)
		return 0;
	log_call(c->oap, s, error_code);
	stream_unlink(c, s);
	return 0;
}

static nghttp2_session_callbacks *callbacks(void)
{
	static nghttp2_session_callbacks *cbs;

	if (cbs || nghttp2_session_callbacks_new(&cbs))
		return cbs;
	nghttp2_session_callbacks_set_send_callback(cbs, on_send);
	nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, on_begin_headers);
	nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame_recv);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data_chunk);
	nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_stream_close);
	return cbs;
}

/* ---- connections and the loop ---- */

static struct conn *conn_new(struct oap *oap, int fd)
{
	nghttp2_settings_entry settings[] = {
		{ NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 100 },
		{ NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20 },
	};
	struct conn *c = calloc(1, sizeof(*c));
	nghttp2_session_callbacks *cbs = callbacks();
	int one = 1;

	if (!c || !cbs)
		goto fail;
	c->fd = fd;
	c->oap = oap;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (nghttp2_session_server_new(&c->session, cbs, c))
		goto fail;
	if (nghttp2_submit_settings(c->session, NGHTTP2_FLAG_NONE, settings, 2)) {
		nghttp2_session_del(c->session);
		goto fail;
	}
	return c;
fail:
	free(c);
	close(fd);
	return NULL;
}

static void conn_free(struct conn *c)
{
	/* Deleting the session closes its streams without callbacks: log what was left open. */
	for (struct stream *s = c->streams; s; s = c->streams) {
		log_call(c->oap, s, NGHTTP2_NO_ERROR);
		stream_unlink(c, s);
	}
	nghttp2_session_del(c->session);
	close(c->fd);
	free(c);
}

/*
 * http1, tls modes: what an HTTP/1.1 server, or a TLS one (a fatal
 * unexpected_message alert), says to an HTTP/2 preface; then it closes.
 */
static void foreign_answer(struct conn *c)
{
	static const char http1[] = "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\n"
				    "Content-Length: 12\r\nConnection: close\r\n\r\nBad Request\n";
	static const uint8_t tls_alert[] = { 0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x0a };
	bool tls = c->oap->o.mode == MODE_TLS;
	uint8_t buf[4096];

	if (recv(c->fd, buf, sizeof(buf), 0) > 0 &&
	    send(c->fd, tls ? (const void *)tls_alert : http1, tls ? sizeof(tls_alert) : sizeof(http1) - 1,
		 MSG_NOSIGNAL) > 0)
		fprintf(c->oap->log, "call %u connection fault=%s bytes=0 messages=0 samples=0 complete=0 "
			"answer=%s close=-\n", ++c->oap->calls, mode_names[c->oap->o.mode],
			mode_names[c->oap->o.mode]);
	c->dead = true;
}

/* Reads what came, feeds nghttp2, sends what it has; marks the connection dead at the end. */
static void conn_io(struct conn *c, short revents)
{
	uint8_t buf[65536];

	if (c->foreign) {
		if (revents & (POLLIN | POLLHUP | POLLERR))
			foreign_answer(c);
		return;
	}
	if (revents & (POLLIN | POLLHUP | POLLERR)) {
		ssize_t n = recv(c->fd, buf, sizeof(buf), 0);

		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			c->dead = true;
		else if (n > 0 && nghttp2_session_mem_recv(c->session, buf, (size_t)n) < 0)
			c->dead = true;
	}
	if (!c->dead && nghttp2_session_send(c->session))
		c->dead = true;
	if (!nghttp2_session_want_read(c->session) && !nghttp2_session_want_write(c->session))
		c->dead = true;
}

/* slow --delay-ms: the answers now due. */
static void fire_timers(struct conn *c)
{
	int64_t now = now_ms();

	for (struct stream *s = c->streams; s; s = s->next)
		if (s->answer_at_ms && now >= s->answer_at_ms) {
			s->answer_at_ms = 0;
			answer(c, s);
			s->answer = "late";
		}
}

static int listen_on(int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) || listen(fd, 16) ||
	    getsockname(fd, (struct sockaddr *)&sin, &len)) {
		perror("fault_oap: listen");
		close(fd);
		return -1;
	}
	return fd;
}

static int accept_one(struct oap *oap, int lfd, struct conn **conns, int *nconns)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	struct conn *c;

	if (fd < 0)
		return -errno;
	if (*nconns == MAX_CONNS) {
		close(fd);
		return -EMFILE;
	}
	c = conn_new(oap, fd);
	if (!c)
		return -ENOMEM;
	conns[(*nconns)++] = c;
	if ((oap->o.mode == MODE_HTTP1 || oap->o.mode == MODE_TLS) && oap->faults_left) {
		oap->faults_left--;
		c->foreign = true;
		return 0;	/* no HTTP/2 SETTINGS from it */
	}
	fprintf(oap->log, "connection accepted (%d open)\n", *nconns);
	return nghttp2_session_send(c->session) ? -EPROTO : 0;
}

static void serve(struct oap *oap, int lfd)
{
	struct conn *conns[MAX_CONNS];
	struct pollfd pfds[MAX_CONNS + 1];
	int nconns = 0;

	for (;;) {
		int kept = 0;

		pfds[0] = (struct pollfd){ .fd = lfd, .events = POLLIN };
		for (int i = 0; i < nconns; i++)
			pfds[i + 1] = (struct pollfd){
				.fd = conns[i]->fd,
				.events = POLLIN | (nghttp2_session_want_write(conns[i]->session) ? POLLOUT : 0),
			};
		if (poll(pfds, (nfds_t)nconns + 1, 50) < 0 && errno != EINTR) {
			perror("fault_oap: poll");
			return;
		}
		for (int i = 0; i < nconns; i++) {
			fire_timers(conns[i]);
			conn_io(conns[i], pfds[i + 1].revents);
		}
		for (int i = 0; i < nconns; i++) {
			if (conns[i]->dead)
				conn_free(conns[i]);
			else
				conns[kept++] = conns[i];
		}
		nconns = kept;
		if (pfds[0].revents & POLLIN)
			accept_one(oap, lfd, conns, &nconns);
	}
}

int main(int argc, char **argv)
{
	struct oap oap = { 0 };
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	int lfd;

	parse_options(argc, argv, &oap.o);
	oap.faults_left = oap.o.faults;
	oap.log = fopen(oap.o.log_path, "a");
	if (!oap.log) {
		perror(oap.o.log_path);
		return 1;
	}
	setvbuf(oap.log, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	lfd = listen_on(oap.o.port);
	if (lfd < 0 || getsockname(lfd, (struct sockaddr *)&sin, &len))
		return 1;
	fprintf(oap.log, "listening %d mode=%s faults=%u\n", ntohs(sin.sin_port), mode_names[oap.o.mode],
		oap.o.faults);
	serve(&oap, lfd);
	return 1;
}
