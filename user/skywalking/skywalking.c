// SPDX-License-Identifier: GPL-2.0
/*
 * SkyWalking messages with nanopb.  Every string and repeated field is a
 * callback (see the .options files): the encoders below point them at our
 * own structs, and the decoders copy what arrives into malloc'd strings.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include <pb_decode.h>
#include <pb_encode.h>
#include "common/Command.pb.h"
#include "common/Common.pb.h"
#include "ebpf/profiling/Continuous.pb.h"
#include "ebpf/profiling/Process.pb.h"
#include "ebpf/profiling/Profile.pb.h"
#include "language-agent/Meter.pb.h"
#include "skywalking.h"
#include "util.h"

void sw_msgs_free(struct sw_msgs *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i].data);
	free(m->v);
	memset(m, 0, sizeof(*m));
}

int sw_msgs_push(struct sw_msgs *m, struct sw_msg msg)
{
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 16;
		struct sw_msg *v = realloc(m->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		m->v = v;
		m->cap = cap;
	}
	m->v[m->n++] = msg;
	m->bytes += msg.len;
	return 0;
}

/* Encodes @msg into a fresh buffer (sized first, then written). */
static int encode(const pb_msgdesc_t *fields, const void *msg, struct sw_msg *out)
{
	size_t size;

	out->data = NULL;
	out->len = 0;
	if (!pb_get_encoded_size(&size, fields, msg))
		return -EINVAL;
	out->data = malloc(size ? size : 1);
	if (!out->data)
		return -ENOMEM;
	pb_ostream_t stream = pb_ostream_from_buffer(out->data, size);
	if (!pb_encode(&stream, fields, msg)) {
		log_error("protobuf encoding failed: %s", PB_GET_ERROR(&stream));
		free(out->data);
		out->data = NULL;
		return -EINVAL;
	}
	out->len = stream.bytes_written;
	return 0;
}

/* ---- generic callbacks ---- */

/* arg: const char *; proto3 leaves empty strings out. */
static bool enc_str(pb_ostream_t *stream, const pb_field_t *field, void *const *arg)
{
	const char *s = *arg;

	if (!s || !*s)
		return true;
	return pb_encode_tag_for_field(stream, field) &&
	       pb_encode_string(stream, (const pb_byte_t *)s, strlen(s));
}

static void set_str(pb_callback_t *cb, const char *s)
{
	cb->funcs.encode = enc_str;
	cb->arg = (void *)s;
}

/* arg: char **; keeps the last value seen. */
static bool dec_str(pb_istream_t *stream, const pb_field_t *field, void **arg)
{
	char **dst = *arg;
	size_t len = stream->bytes_left;
	char *s = malloc(len + 1);

	if (!s)
		return false;
	if (!pb_read(stream, (pb_byte_t *)s, len)) {
		free(s);
		return false;
	}
	s[len] = '\0';
	free(*dst);
	*dst = s;
	return true;
}

static void want_str(pb_callback_t *cb, char **dst)
{
	cb->funcs.decode = dec_str;
	cb->arg = dst;
}

struct kv_list {
	const struct sw_kv *kv;
	size_t n;
};

static bool enc_kvs(pb_ostream_t *stream, const pb_field_t *field, void *const *arg)
{
	const struct kv_list *list = *arg;

	for (size_t i = 0; i < list->n; i++) {
		skywalking_v3_KeyStringValuePair kv = skywalking_v3_KeyStringValuePair_init_zero;

		set_str(&kv.key, list->kv[i].key);
		set_str(&kv.value, list->kv[i].value);
		if (!pb_encode_tag_for_field(stream, field) ||
		    !pb_encode_submessage(stream, skywalking_v3_KeyStringValuePair_fields, &kv))
			return false;
	}
	return true;
}

/* ---- layers ---- */

/*
 * The OAP's built-in layers that a service may be in (isNormal), from
 * org.apache.skywalking.oap.server.core.analysis.Layer (apache/skywalking
 * 5839d2ad, 2026-08; 9.0 knows the names up to K8S_SERVICE, 10.0 up to
 * ACTIVEMQ).  keepAlive applies the layer with Layer.valueOf: a name the OAP
 * does not know fails the call.
 */
static const char *const layers[] = {
	"MESH", "GENERAL", "OS_LINUX", "K8S", "FAAS", "MESH_CP", "MESH_DP", "DATABASE", "CACHE",
	"BROWSER", "SO11Y_OAP", "SO11Y_SATELLITE", "MQ", "K8S_SERVICE", "MYSQL", "POSTGRESQL",
	"APISIX", "AWS_EKS", "OS_WINDOWS", "AWS_S3", "AWS_DYNAMODB", "AWS_GATEWAY", "REDIS",
	"ELASTICSEARCH", "RABBITMQ", "MONGODB", "KAFKA", "PULSAR", "BOOKKEEPER", "NGINX", "ROCKETMQ",
	"CLICKHOUSE", "ACTIVEMQ", "CILIUM_SERVICE", "SO11Y_JAVA_AGENT", "KONG", "SO11Y_GO_AGENT",
	"FLINK", "BANYANDB", "GENAI", "ENVOY_AI_GATEWAY", "IOS", "WECHAT_MINI_PROGRAM",
	"ALIPAY_MINI_PROGRAM", "AIRFLOW",
};

bool sw_layer_known(const char *name)
{
	for (size_t i = 0; i < sizeof(layers) / sizeof(layers[0]); i++)
		if (!strcmp(layers[i], name))
			return true;
	return false;
}

const char *sw_layer_names(void)
{
	static char buf[1024];

	if (!buf[0]) {
		size_t used = 0;

		for (size_t i = 0; i < sizeof(layers) / sizeof(layers[0]) && used < sizeof(buf); i++)
			used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%s%s", i ? ", " : "",
						 layers[i]);
	}
	return buf;
}

/* ---- processes ---- */

struct proc_list {
	struct sw_process *const *procs;
	size_t n;
	bool ping;		/* EBPFProcessPingPkg instead of EBPFProcessProperties */
};

/* arg: the sw_process; its labels as a repeated string. */
static bool enc_labels(pb_ostream_t *stream, const pb_field_t *field, void *const *arg)
{
	const struct sw_process *p = *arg;

	for (size_t i = 0; i < p->nlabels; i++)
		if (!pb_encode_tag_for_field(stream, field) ||
		    !pb_encode_string(stream, (const pb_byte_t *)p->labels[i], strlen(p->labels[i])))
			return false;
	return true;
}

static void entity_of(const struct sw_process *p, skywalking_v3_EBPFProcessEntityMetadata *e)
{
	set_str(&e->layer, p->layer ? p->layer : SW_LAYER_DEFAULT);
	set_str(&e->serviceName, p->service);
	set_str(&e->instanceName, p->instance);
	set_str(&e->processName, p->process_name);
	e->labels.funcs.encode = enc_labels;
	e->labels.arg = (void *)p;
}

/*
 * The OAP offers profiling, and hands out CPU tasks, only for processes whose
 * property is "true" (EBPFProcessServiceHandler.getProfilingSupportStatus),
 * and keeps the first value it stored (ProcessTraffic.combine leaves it).
 */
static struct sw_kv support_property(const struct sw_process *p)
{
	return (struct sw_kv){ "support_ebpf_profiling", p->profilable ? "true" : "false" };
}

/* The heartbeat only needs what keeps the process profilable. */
static bool enc_ping(pb_ostream_t *stream, const struct sw_process *p)
{
	const struct sw_kv support = support_property(p);
	skywalking_v3_EBPFProcessPingPkg ping = skywalking_v3_EBPFProcessPingPkg_init_zero;
	struct kv_list kvs = { &support, 1 };

	ping.has_entityMetadata = true;
	entity_of(p, &ping.entityMetadata);
	ping.properties.funcs.encode = enc_kvs;
	ping.properties.arg = &kvs;
	return pb_encode_submessage(stream, skywalking_v3_EBPFProcessPingPkg_fields, &ping);
}

static bool enc_host_process(pb_ostream_t *stream, const struct sw_process *p)
{
	skywalking_v3_EBPFProcessProperties msg = skywalking_v3_EBPFProcessProperties_init_zero;
	skywalking_v3_EBPFHostProcessMetadata *h = &msg.hostProcess;
	char pid[16];
	const struct sw_kv props[] = {
		{ "host_ip", (char *)p->host_ip },
		{ "pid", pid },
		{ "command_line", (char *)p->command_line },
		support_property(p),
	};
	struct kv_list kvs = { props, sizeof(props) / sizeof(props[0]) };

	snprintf(pid, sizeof(pid), "%u", p->pid);
	msg.has_hostProcess = true;
	h->has_entity = true;
	entity_of(p, &h->entity);
	h->pid = (int32_t)p->pid;
	h->properties.funcs.encode = enc_kvs;
	h->properties.arg = &kvs;
	return pb_encode_submessage(stream, skywalking_v3_EBPFProcessProperties_fields, &msg);
}

static bool enc_procs(pb_ostream_t *stream, const pb_field_t *field, void *const *arg)
{
	const struct proc_list *list = *arg;

	for (size_t i = 0; i < list->n; i++) {
		const struct sw_process *p = list->procs[i];

		if (!pb_encode_tag_for_field(stream, field) ||
		    !(list->ping ? enc_ping(stream, p) : enc_host_process(stream, p)))
			return false;
	}
	return true;
}

int sw_encode_report(struct sw_process *const *procs, size_t n, const char *agent_id,
		     struct sw_msg *out)
{
	skywalking_v3_EBPFProcessReportList msg = skywalking_v3_EBPFProcessReportList_init_zero;
	struct proc_list list = { procs, n, false };

	msg.processes.funcs.encode = enc_procs;
	msg.processes.arg = &list;
	set_str(&msg.ebpfAgentID, agent_id);
	return encode(skywalking_v3_EBPFProcessReportList_fields, &msg, out);
}

int sw_encode_ping(struct sw_process *const *procs, size_t n, const char *agent_id,
		   struct sw_msg *out)
{
	skywalking_v3_EBPFProcessPingPkgList msg = skywalking_v3_EBPFProcessPingPkgList_init_zero;
	struct proc_list list = { procs, n, true };

	msg.processes.funcs.encode = enc_procs;
	msg.processes.arg = &list;
	set_str(&msg.ebpfAgentID, agent_id);
	return encode(skywalking_v3_EBPFProcessPingPkgList_fields, &msg, out);
}

struct entity_strs {
	char *layer, *service, *instance, *process;
};

static void want_entity(skywalking_v3_EBPFProcessEntityMetadata *e, struct entity_strs *s)
{
	want_str(&e->layer, &s->layer);
	want_str(&e->serviceName, &s->service);
	want_str(&e->instanceName, &s->instance);
	want_str(&e->processName, &s->process);
}

static void entity_strs_free(struct entity_strs *s)
{
	free(s->layer);
	free(s->service);
	free(s->instance);
	free(s->process);
}

static bool str_eq(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") == 0;
}

struct downstream_ctx {
	struct sw_process *const *procs;
	size_t n;
	int matched;
	bool oom;
};

static bool dec_downstream(pb_istream_t *stream, const pb_field_t *field, void **arg)
{
	struct downstream_ctx *ctx = *arg;
	skywalking_v3_EBPFProcessDownstream d = skywalking_v3_EBPFProcessDownstream_init_zero;
	struct entity_strs e = { 0 };
	char *process_id = NULL;
	bool ok;

	want_str(&d.processId, &process_id);
	want_entity(&d.hostProcess.entityMetadata, &e);
	ok = pb_decode(stream, skywalking_v3_EBPFProcessDownstream_fields, &d);
	if (ok && d.has_hostProcess && process_id) {
		for (size_t i = 0; i < ctx->n; i++) {
			struct sw_process *p = ctx->procs[i];

			if (p->pid != (uint32_t)d.hostProcess.pid || !str_eq(p->service, e.service) ||
			    !str_eq(p->instance, e.instance) || !str_eq(p->process_name, e.process))
				continue;
			free(p->process_id);
			p->process_id = strdup(process_id);
			if (!p->process_id)
				ctx->oom = true;
			ctx->matched++;
		}
	}
	free(process_id);
	entity_strs_free(&e);
	return ok && !ctx->oom;
}

int sw_decode_downstream(const uint8_t *buf, size_t len, struct sw_process *const *procs, size_t n)
{
	skywalking_v3_EBPFReportProcessDownstream msg = skywalking_v3_EBPFReportProcessDownstream_init_zero;
	struct downstream_ctx ctx = { procs, n, 0, false };
	pb_istream_t stream = pb_istream_from_buffer(buf, len);

	msg.processes.funcs.decode = dec_downstream;
	msg.processes.arg = &ctx;
	if (!pb_decode(&stream, skywalking_v3_EBPFReportProcessDownstream_fields, &msg))
		return ctx.oom ? -ENOMEM : -EBADMSG;
	return ctx.matched;
}

/* ---- tasks ---- */

int sw_encode_task_query(const char *agent_id, int64_t latest_update_ms, struct sw_msg *out)
{
	skywalking_v3_EBPFProfilingTaskQuery msg = skywalking_v3_EBPFProfilingTaskQuery_init_zero;

	set_str(&msg.roverInstanceId, agent_id);
	msg.latestUpdateTime = latest_update_ms;
	return encode(skywalking_v3_EBPFProfilingTaskQuery_fields, &msg, out);
}

/* ---- continuous profiling (ebpf/profiling/Continuous.proto) ---- */

struct policy_list {
	const struct sw_service_policy *v;
	size_t n;
};

static bool enc_policies(pb_ostream_t *stream, const pb_field_t *field, void *const *arg)
{
	const struct policy_list *list = *arg;

	for (size_t i = 0; i < list->n; i++) {
		skywalking_v3_ContinuousProfilingServicePolicyQuery q =
			skywalking_v3_ContinuousProfilingServicePolicyQuery_init_zero;

		set_str(&q.serviceName, list->v[i].service);
		set_str(&q.uuid, list->v[i].uuid);
		if (!pb_encode_tag_for_field(stream, field) ||
		    !pb_encode_submessage(stream, skywalking_v3_ContinuousProfilingServicePolicyQuery_fields, &q))
			return false;
	}
	return true;
}

int sw_encode_policy_query(const struct sw_service_policy *v, size_t n, struct sw_msg *out)
{
	skywalking_v3_ContinuousProfilingPolicyQuery msg = skywalking_v3_ContinuousProfilingPolicyQuery_init_zero;
	struct policy_list list = { v, n };

	msg.policies.funcs.encode = enc_policies;
	msg.policies.arg = &list;
	return encode(skywalking_v3_ContinuousProfilingPolicyQuery_fields, &msg, out);
}

/* arg: the report; its causes, each a single value (aperture has no URI causes). */
static bool enc_causes(pb_ostream_t *stream, const pb_field_t *field, void *const *arg)
{
	const struct sw_continuous_report *r = *arg;

	for (size_t i = 0; i < r->ncauses; i++) {
		skywalking_v3_ContinuousProfilingCause c = skywalking_v3_ContinuousProfilingCause_init_zero;

		c.type = (skywalking_v3_ContinuousProfilingCauseType)r->causes[i].type;
		c.which_cause = skywalking_v3_ContinuousProfilingCause_singleValue_tag;
		c.cause.singleValue.threshold = r->causes[i].threshold;
		c.cause.singleValue.current = r->causes[i].current;
		if (!pb_encode_tag_for_field(stream, field) ||
		    !pb_encode_submessage(stream, skywalking_v3_ContinuousProfilingCause_fields, &c))
			return false;
	}
	return true;
}

int sw_encode_continuous_report(const struct sw_continuous_report *r, struct sw_msg *out)
{
	skywalking_v3_ContinuousProfilingReport msg = skywalking_v3_ContinuousProfilingReport_init_zero;

	set_str(&msg.layer, r->layer ? r->layer : SW_LAYER_DEFAULT);
	set_str(&msg.serviceName, r->service);
	set_str(&msg.instanceName, r->instance);
	set_str(&msg.processName, r->process_name);
	msg.causes.funcs.encode = enc_causes;
	msg.causes.arg = (void *)r;
	msg.duration = r->duration_s;
	switch (r->target) {
	case SW_TARGET_ON_CPU:
		msg.which_targetTask = skywalking_v3_ContinuousProfilingReport_onCPU_tag;
		break;
	case SW_TARGET_OFF_CPU:
		msg.which_targetTask = skywalking_v3_ContinuousProfilingReport_offCPU_tag;
		break;
	default:
		return -EINVAL;	/* no NETWORK tasks here */
	}
	return encode(skywalking_v3_ContinuousProfilingReport_fields, &msg, out);
}

/* ---- meters (language-agent/Meter.proto) ---- */

struct meter_list {
	const struct sw_meter *v;
	size_t n;
	const char *service, *instance;
	int64_t timestamp_ms;
};

static void set_label(skywalking_v3_Label *l, const char *name, const char *value)
{
	snprintf(l->name, sizeof(l->name), "%s", name);
	snprintf(l->value, sizeof(l->value), "%s", value ? value : "");
}

static bool enc_meters(pb_ostream_t *stream, const pb_field_t *field, void *const *arg)
{
	const struct meter_list *list = *arg;

	for (size_t i = 0; i < list->n; i++) {
		skywalking_v3_MeterData d = skywalking_v3_MeterData_init_zero;
		skywalking_v3_MeterSingleValue *v = &d.metric.singleValue;

		d.which_metric = skywalking_v3_MeterData_singleValue_tag;
		snprintf(v->name, sizeof(v->name), "%s", list->v[i].name);
		set_label(&v->labels[0], "process_name", list->v[i].process_name);
		set_label(&v->labels[1], "layer", list->v[i].layer ? list->v[i].layer : SW_LAYER_DEFAULT);
		v->labels_count = 2;
		v->value = list->v[i].value;
		set_str(&d.service, list->service);
		set_str(&d.serviceInstance, list->instance);
		d.timestamp = list->timestamp_ms;
		if (!pb_encode_tag_for_field(stream, field) ||
		    !pb_encode_submessage(stream, skywalking_v3_MeterData_fields, &d))
			return false;
	}
	return true;
}

int sw_encode_meters(const char *service, const char *instance, int64_t timestamp_ms, const struct sw_meter *v,
		     size_t n, struct sw_msg *out)
{
	skywalking_v3_MeterDataCollection msg = skywalking_v3_MeterDataCollection_init_zero;
	struct meter_list list = { v, n, service, instance, timestamp_ms };

	msg.meterData.funcs.encode = enc_meters;
	msg.meterData.arg = &list;
	return encode(skywalking_v3_MeterDataCollection_fields, &msg, out);
}

/* One command's arguments, while decoding: where they go and the reply's drop counter. */
struct args_ctx {
	struct sw_command *c;
	size_t *dropped;
};

static bool dec_arg(pb_istream_t *stream, const pb_field_t *field, void **arg)
{
	struct args_ctx *ctx = *arg;
	struct sw_command *c = ctx->c;
	skywalking_v3_KeyStringValuePair kv = skywalking_v3_KeyStringValuePair_init_zero;

	if (c->nargs >= SW_MAX_COMMAND_ARGS) {
		(*ctx->dropped)++;
		return pb_decode(stream, skywalking_v3_KeyStringValuePair_fields, &kv);	/* read, not kept */
	}
	if (array_reserve((void **)&c->args, &c->args_cap, c->nargs, sizeof(*c->args), 16))
		return false;
	c->args[c->nargs] = (struct sw_kv){ 0 };
	want_str(&kv.key, &c->args[c->nargs].key);
	want_str(&kv.value, &c->args[c->nargs].value);
	c->nargs++;
	return pb_decode(stream, skywalking_v3_KeyStringValuePair_fields, &kv);
}

static bool dec_command(pb_istream_t *stream, const pb_field_t *field, void **arg)
{
	struct sw_commands *cmds = *arg;
	skywalking_v3_Command msg = skywalking_v3_Command_init_zero;
	struct args_ctx ctx = { .dropped = &cmds->args_dropped };

	if (cmds->n >= SW_MAX_COMMANDS) {
		cmds->commands_dropped++;
		return pb_decode(stream, skywalking_v3_Command_fields, &msg);	/* read, not kept */
	}
	if (array_reserve((void **)&cmds->v, &cmds->cap, cmds->n, sizeof(*cmds->v), 16))
		return false;
	ctx.c = &cmds->v[cmds->n++];
	*ctx.c = (struct sw_command){ 0 };
	want_str(&msg.command, &ctx.c->name);
	msg.args.funcs.decode = dec_arg;
	msg.args.arg = &ctx;
	return pb_decode(stream, skywalking_v3_Command_fields, &msg);
}

int sw_decode_commands(const uint8_t *buf, size_t len, struct sw_commands *out)
{
	skywalking_v3_Commands msg = skywalking_v3_Commands_init_zero;
	pb_istream_t stream = pb_istream_from_buffer(buf, len);

	*out = (struct sw_commands){ 0 };
	msg.commands.funcs.decode = dec_command;
	msg.commands.arg = out;
	if (!pb_decode(&stream, skywalking_v3_Commands_fields, &msg)) {
		sw_commands_free(out);
		return -EBADMSG;
	}
	return 0;
}

void sw_commands_free(struct sw_commands *c)
{
	for (size_t i = 0; i < c->n; i++) {
		for (size_t j = 0; j < c->v[i].nargs; j++) {
			free(c->v[i].args[j].key);
			free(c->v[i].args[j].value);
		}
		free(c->v[i].args);
		free(c->v[i].name);
	}
	free(c->v);
	*c = (struct sw_commands){ 0 };
}

const char *sw_command_arg(const struct sw_command *c, const char *key)
{
	for (size_t i = 0; i < c->nargs; i++)
		if (c->args[i].key && !strcmp(c->args[i].key, key))
			return c->args[i].value ? c->args[i].value : "";
	return NULL;
}

static int parse_i64(const char *s, int64_t *out)
{
	char *end;
	long long v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

/* The comma-joined ids, at most SW_MAX_PROCESS_IDS of them (the rest counted in ids_dropped). */
static int split_ids(const char *s, struct sw_task *t)
{
	char *copy = strdup(s), *save = NULL, *tok;
	size_t cap = 0;
	int err = 0;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char **ids;

		while (*tok == ' ')
			tok++;
		if (!*tok)
			continue;
		if (t->nprocess_ids >= SW_MAX_PROCESS_IDS) {
			t->ids_dropped++;
			continue;
		}
		if (array_reserve((void **)&t->process_ids, &cap, t->nprocess_ids, sizeof(*ids), 4)) {
			err = -ENOMEM;
			break;
		}
		ids = t->process_ids;
		ids[t->nprocess_ids] = strdup(tok);
		if (!ids[t->nprocess_ids]) {
			err = -ENOMEM;
			break;
		}
		t->nprocess_ids++;
	}
	free(copy);
	if (!err && t->nprocess_ids == 0)
		err = -EINVAL;
	return err;
}

static enum sw_target target_of(const char *s)
{
	if (!strcmp(s, "ON_CPU"))
		return SW_TARGET_ON_CPU;
	if (!strcmp(s, "OFF_CPU"))
		return SW_TARGET_OFF_CPU;
	if (!strcmp(s, "NETWORK"))
		return SW_TARGET_NETWORK;
	return SW_TARGET_OTHER;
}

int sw_task_parse(const struct sw_command *c, struct sw_task *t)
{
	const char *id = sw_command_arg(c, "TaskId");
	const char *pids = sw_command_arg(c, "ProcessId");
	const char *target = sw_command_arg(c, "TargetType");
	const char *trigger = sw_command_arg(c, "TriggerType");
	int err;

	*t = (struct sw_task){ 0 };
	if (!c->name || strcmp(c->name, SW_TASK_COMMAND))
		return -ENOENT;
	/* Times are ms since the epoch: a negative one is malformed. */
	if (!id || !*id || !pids || !target || !trigger ||
	    parse_i64(sw_command_arg(c, "TaskUpdateTime"), &t->update_time_ms) ||
	    parse_i64(sw_command_arg(c, "TaskStartTime"), &t->start_time_ms) ||
	    t->update_time_ms < 0 || t->start_time_ms < 0)
		return -EINVAL;
	t->target = target_of(target);
	/*
	 * The duration only matters to FIXED_TIME CPU tasks; NETWORK tasks get
	 * theirs elsewhere.  The OAP enforces >= 60 s; bounding it keeps the
	 * agent's millisecond arithmetic far from overflow.
	 */
	if (t->target != SW_TARGET_NETWORK &&
	    (parse_i64(sw_command_arg(c, "FixedTriggerDuration"), &t->duration_s) ||
	     t->duration_s <= 0 || t->duration_s > SW_MAX_DURATION_S))
		return -EINVAL;
	t->task_id = strdup(id);
	t->target_name = strdup(target);
	t->trigger = strdup(trigger);
	if (!t->task_id || !t->target_name || !t->trigger) {
		sw_task_free(t);
		return -ENOMEM;
	}
	err = split_ids(pids, t);
	if (err)
		sw_task_free(t);
	return err;
}

void sw_task_free(struct sw_task *t)
{
	for (size_t i = 0; i < t->nprocess_ids; i++)
		free(t->process_ids[i]);
	free(t->process_ids);
	free(t->task_id);
	free(t->target_name);
	free(t->trigger);
	*t = (struct sw_task){ 0 };
}

/* ---- profiling data ---- */

/*
 * Unresolved frames are named per function, the way flame graphs aggregate:
 * "module+0xSTART" when the start of the function holding the address is
 * known, else "[unknown] module" (one node for the module), never one node
 * per sampled address.  The names are built once per call, in this table.
 */
struct unresolved_name {
	const struct sym_mapping *mapping;
	uint64_t start;			/* UNKNOWN_START: not known */
	char *name;
};

struct unresolved_names {
	struct unresolved_name *slots;	/* open addressing; mapping NULL: free */
	size_t n, cap;			/* cap: a power of two */
};

#define UNKNOWN_START UINT64_MAX

/*
 * The start of the function holding an unresolved frame.  The symbolizer
 * already names code without a symbol by its .eh_frame FDE's start
 * ("module+0xSTART" as the frame's function, user/symbolize/symbolize.c), so
 * the frames that reach this table lie outside every FDE: no start is known
 * and each module's become its one "[unknown] module" node.
 */
static uint64_t unresolved_function_start(const struct sym_frame *f)
{
	(void)f;
	return UNKNOWN_START;
}

static size_t unresolved_slot(const struct unresolved_names *t, const struct sym_mapping *m,
			      uint64_t start)
{
	size_t i = (size_t)((((uintptr_t)m >> 4) ^ start) * 0x9e3779b97f4a7c15ull) & (t->cap - 1);

	while (t->slots[i].mapping && (t->slots[i].mapping != m || t->slots[i].start != start))
		i = (i + 1) & (t->cap - 1);
	return i;
}

static int unresolved_grow(struct unresolved_names *t)
{
	struct unresolved_names bigger = { .cap = t->cap ? t->cap * 2 : 64 };

	bigger.slots = calloc(bigger.cap, sizeof(*bigger.slots));
	if (!bigger.slots)
		return -ENOMEM;
	for (size_t i = 0; i < t->cap; i++)
		if (t->slots[i].mapping)
			bigger.slots[unresolved_slot(&bigger, t->slots[i].mapping, t->slots[i].start)] =
				t->slots[i];
	bigger.n = t->n;
	free(t->slots);
	*t = bigger;
	return 0;
}

static void unresolved_free(struct unresolved_names *t)
{
	for (size_t i = 0; i < t->cap; i++)
		free(t->slots[i].name);
	free(t->slots);
	*t = (struct unresolved_names){ 0 };
}

/* The name of an unresolved frame in module @m; NULL on ENOMEM. */
static const char *unresolved_name(struct unresolved_names *t, const struct sym_frame *f)
{
	uint64_t start = unresolved_function_start(f);
	struct unresolved_name *slot;
	char *name;
	int len;

	if ((t->n + 1) * 2 > t->cap && unresolved_grow(t))
		return NULL;
	slot = &t->slots[unresolved_slot(t, f->mapping, start)];
	if (slot->mapping)
		return slot->name;
	if (start == UNKNOWN_START)
		len = asprintf(&name, "[unknown] %s", f->mapping->name);
	else
		len = asprintf(&name, "%s+0x%" PRIx64, f->mapping->name, start);
	if (len < 0)
		return NULL;
	*slot = (struct unresolved_name){ f->mapping, start, name };
	t->n++;
	return name;
}

/* What a frame is called in SkyWalking output; NULL on ENOMEM. */
static const char *frame_label(struct unresolved_names *t, const struct profile_frame *f)
{
	if (f->sym.function)
		return f->sym.function;
	if (!f->sym.mapping)
		return "[unknown]";
	return unresolved_name(t, &f->sym);
}

#define FNV_OFFSET 14695981039346656037ull
#define FNV_PRIME 1099511628211ull

/* FNV-1a over every frame's label, each terminated by 0xff. */
static uint64_t labels_hash(uint64_t h, const char *const *labels, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		for (const char *s = labels[i]; *s; s++)
			h = (h ^ (uint8_t)*s) * FNV_PRIME;
		h = (h ^ 0xff) * FNV_PRIME;
	}
	return h;
}

/* A sample to send, with its frames' labels (kernel then user, leaf first). */
struct sample_ref {
	const struct profile_sample *s;
	const char **labels;
	uint64_t hash;		/* over nkernel, nuser and every label */
};

/* Orders by label lists, so that identical lists end up adjacent. */
static int ref_cmp(const void *a, const void *b)
{
	const struct sample_ref *x = a, *y = b;
	uint32_t i;
	int c;

	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	if (x->s->nkernel != y->s->nkernel)
		return x->s->nkernel < y->s->nkernel ? -1 : 1;
	if (x->s->nuser != y->s->nuser)
		return x->s->nuser < y->s->nuser ? -1 : 1;
	for (i = 0; i < x->s->nkernel + x->s->nuser; i++) {
		c = strcmp(x->labels[i], y->labels[i]);
		if (c)
			return c;
	}
	return 0;
}

/* One distinct stack: the samples merged into it, summed. */
struct stack_group {
	const struct sample_ref *first;
	uint64_t count;		/* samples (on-CPU) or switches (off-CPU) */
	uint64_t duration_ns;	/* off-CPU */
};

struct stack_half {
	skywalking_v3_EBPFProfilingStackType type;
	int32_t id;
	const char *const *labels;
	uint32_t n;
};

static bool enc_symbols(pb_ostream_t *stream, const pb_field_t *field, void *const *arg)
{
	const struct stack_half *half = *arg;

	for (uint32_t i = 0; i < half->n; i++) {
		const char *name = half->labels[i];

		if (!pb_encode_tag_for_field(stream, field) ||
		    !pb_encode_string(stream, (const pb_byte_t *)name, strlen(name)))
			return false;
	}
	return true;
}

/* A message's stacks and the ids of its two halves. */
struct group_stacks {
	const struct sample_ref *ref;
	int32_t kernel_id, user_id;
};

/* Kernel half first, then user: leaf first within each, as profile frames are. */
static bool enc_stacks(pb_ostream_t *stream, const pb_field_t *field, void *const *arg)
{
	const struct group_stacks *g = *arg;
	const struct profile_sample *s = g->ref->s;
	struct stack_half halves[2] = {
		{ skywalking_v3_EBPFProfilingStackType_PROCESS_KERNEL_SPACE, g->kernel_id,
		  g->ref->labels, s->nkernel },
		{ skywalking_v3_EBPFProfilingStackType_PROCESS_USER_SPACE, g->user_id,
		  g->ref->labels + s->nkernel, s->nuser },
	};

	for (int i = 0; i < 2; i++) {
		skywalking_v3_EBPFProfilingStackMetadata meta = skywalking_v3_EBPFProfilingStackMetadata_init_zero;

		if (halves[i].n == 0)
			continue;
		meta.stackType = halves[i].type;
		meta.stackId = halves[i].id;
		meta.stackSymbols.funcs.encode = enc_symbols;
		meta.stackSymbols.arg = &halves[i];
		if (!pb_encode_tag_for_field(stream, field) ||
		    !pb_encode_submessage(stream, skywalking_v3_EBPFProfilingStackMetadata_fields, &meta))
			return false;
	}
	return true;
}

static int32_t clamp_i32(uint64_t v)
{
	return v > INT32_MAX ? INT32_MAX : (int32_t)v;
}

/*
 * The OAP stores each message under sha256(scheduleId, "kernelId_userId",
 * uploadTime) (EBPFProfilingDataRecord.id): two messages of one upload with
 * the same ids overwrite each other.  The ids come from the message's place
 * in @out, which holds one whole upload: 2i+1 and 2i+2 for message i, so no
 * two messages of a flush share an id, whatever their symbols.
 */
static struct group_stacks stacks_of(const struct stack_group *g, const struct sw_msgs *out)
{
	int32_t base = (int32_t)((out->n * 2) & 0x3ffffffe);

	return (struct group_stacks){ g->first, base + 1, base + 2 };
}

static int encode_group(const struct stack_group *g, bool offcpu, const struct sw_task_meta *meta,
			const struct group_stacks *stacks_arg, struct sw_msg *out)
{
	skywalking_v3_EBPFProfilingData msg = skywalking_v3_EBPFProfilingData_init_zero;
	pb_callback_t *stacks;

	if (meta) {
		msg.has_task = true;
		set_str(&msg.task.taskId, meta->task_id);
		set_str(&msg.task.processId, meta->process_id);
		msg.task.profilingStartTime = meta->start_ms;
		msg.task.currentTime = meta->current_ms;
	}
	if (offcpu) {
		msg.which_profiling = skywalking_v3_EBPFProfilingData_offCPU_tag;
		msg.profiling.offCPU.switchCount = clamp_i32(g->count);
		msg.profiling.offCPU.duration = (int64_t)g->duration_ns;
		stacks = &msg.profiling.offCPU.stacks;
	} else {
		msg.which_profiling = skywalking_v3_EBPFProfilingData_onCPU_tag;
		msg.profiling.onCPU.dumpCount = clamp_i32(g->count);
		stacks = &msg.profiling.onCPU.stacks;
	}
	stacks->funcs.encode = enc_stacks;
	stacks->arg = (void *)stacks_arg;
	return encode(skywalking_v3_EBPFProfilingData_fields, &msg, out);
}

/* Index of the value with @unit, or @fallback. */
static int value_index(const struct profile *prof, const char *unit, int fallback)
{
	for (int i = 0; i < prof->nvalues && i < PROFILE_MAX_VALUES; i++)
		if (prof->value_types[i].unit && !strcmp(prof->value_types[i].unit, unit))
			return i;
	return fallback;
}

static bool pid_wanted(uint32_t tgid, const uint32_t *pids, size_t npids)
{
	if (npids == 0)
		return true;
	for (size_t i = 0; i < npids; i++)
		if (pids[i] == tgid)
			return true;
	return false;
}

/* What select_samples hands out; freed with selection_free. */
struct selection {
	struct sample_ref *refs;
	size_t n;
	const char **labels;		/* every selected frame's label */
	struct unresolved_names unresolved;	/* the labels of unresolved frames */
};

static void selection_free(struct selection *sel)
{
	free(sel->refs);
	free(sel->labels);
	unresolved_free(&sel->unresolved);
	*sel = (struct selection){ 0 };
}

static bool sample_selected(const struct profile_sample *s, const uint32_t *pids, size_t npids)
{
	return pid_wanted(s->tgid, pids, npids) && s->nkernel + s->nuser > 0;
}

/* Labels @s's frames into @labels; -ENOMEM. */
static int label_sample(struct selection *sel, const struct profile_sample *s, const char **labels)
{
	for (uint32_t i = 0; i < s->nkernel + s->nuser; i++) {
		labels[i] = frame_label(&sel->unresolved, &s->frames[i]);
		if (!labels[i])
			return -ENOMEM;
	}
	return 0;
}

/* The samples of @pids that have a stack, labelled and sorted so that equal label lists are adjacent. */
static int select_samples(const struct profile *prof, const uint32_t *pids, size_t npids,
			  struct selection *sel)
{
	size_t nframes = 0, used = 0;

	*sel = (struct selection){ 0 };
	for (size_t i = 0; i < prof->nsamples; i++)
		if (sample_selected(&prof->samples[i], pids, npids))
			nframes += prof->samples[i].nkernel + prof->samples[i].nuser;
	sel->refs = calloc(prof->nsamples ? prof->nsamples : 1, sizeof(*sel->refs));
	sel->labels = calloc(nframes ? nframes : 1, sizeof(*sel->labels));
	if (!sel->refs || !sel->labels)
		goto oom;
	for (size_t i = 0; i < prof->nsamples; i++) {
		const struct profile_sample *s = &prof->samples[i];
		struct sample_ref *r = &sel->refs[sel->n];

		if (!sample_selected(s, pids, npids))
			continue;
		r->s = s;
		r->labels = sel->labels + used;
		used += s->nkernel + s->nuser;
		if (label_sample(sel, s, r->labels))
			goto oom;
		r->hash = labels_hash(FNV_OFFSET ^ ((uint64_t)s->nkernel << 32 | s->nuser), r->labels,
				      s->nkernel + s->nuser);
		sel->n++;
	}
	if (sel->n > 1)
		qsort(sel->refs, sel->n, sizeof(*sel->refs), ref_cmp);
	return 0;
oom:
	selection_free(sel);
	return -ENOMEM;
}

/* Sums the run of samples equal to refs[0] into @g; returns its length. */
static size_t sum_group(const struct profile *prof, const struct sample_ref *refs, size_t n,
			struct stack_group *g)
{
	/* SkyWalking's OFF_CPU data carries a duration besides the count. */
	bool offcpu = prof->skywalking_target && !strcmp(prof->skywalking_target, "OFF_CPU");
	int count_idx = value_index(prof, "count", 0);
	int ns_idx = value_index(prof, "nanoseconds", 1);
	size_t j;

	*g = (struct stack_group){ .first = &refs[0] };
	for (j = 0; j < n && ref_cmp(&refs[0], &refs[j]) == 0; j++) {
		g->count += refs[j].s->values[count_idx];
		if (offcpu && ns_idx < prof->nvalues && ns_idx < PROFILE_MAX_VALUES)
			g->duration_ns += refs[j].s->values[ns_idx];
	}
	return j;
}

/* Encodes @g as the next message of @out. */
static int append_group(const struct stack_group *g, bool offcpu, const struct sw_task_meta *meta,
			struct sw_msgs *out)
{
	struct group_stacks stacks = stacks_of(g, out);
	struct sw_msg msg;
	int err = encode_group(g, offcpu, meta, &stacks, &msg);

	if (!err)
		err = sw_msgs_push(out, msg);
	if (err)
		free(msg.data);
	return err;
}

int sw_profile_messages(const struct profile *prof, const uint32_t *pids, size_t npids,
			const struct sw_task_meta *meta, struct sw_msgs *out, uint64_t *total)
{
	/* SkyWalking's OFF_CPU data carries a duration besides the count. */
	bool offcpu = prof->skywalking_target && !strcmp(prof->skywalking_target, "OFF_CPU");
	struct selection sel;
	size_t i, len;
	int added = 0, err;

	if (total)
		*total = 0;
	err = select_samples(prof, pids, npids, &sel);
	if (err)
		return err;
	for (i = 0; i < sel.n; i += len) {
		struct stack_group g;

		len = sum_group(prof, sel.refs + i, sel.n - i, &g);
		if (g.count == 0 && g.duration_ns == 0)
			continue;	/* no delta in this interval */
		err = append_group(&g, offcpu, added == 0 ? meta : NULL, out);
		if (err)
			break;
		if (total)
			*total += g.count;
		added++;
	}
	selection_free(&sel);
	return err ? err : added;
}

void sw_uuid(char out[37])
{
	uint8_t b[16];
	size_t got = 0;

	while (got < sizeof(b)) {
		ssize_t n = getrandom(b + got, sizeof(b) - got, 0);

		if (n <= 0) {
			/* Never expected; still produce a distinct id per start. */
			uint64_t t = now_ns(CLOCK_REALTIME) ^ ((uint64_t)getpid() << 32);

			memcpy(b, &t, sizeof(t));
			t = now_ns(CLOCK_MONOTONIC);
			memcpy(b + 8, &t, sizeof(t));
			break;
		}
		got += n;
	}
	b[6] = (b[6] & 0x0f) | 0x40;	/* version 4 */
	b[8] = (b[8] & 0x3f) | 0x80;	/* RFC 4122 variant */
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
		 b[13], b[14], b[15]);
}
