/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Apache SkyWalking eBPF profiling messages (package skywalking.v3): encoding
 * what an agent sends, decoding what the OAP answers.  nanopb underneath;
 * callers see plain C structs and encoded byte buffers.
 */
#ifndef SKYWALKING_H
#define SKYWALKING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "profile.h"

#define SW_PATH_REPORT_PROCESSES "/skywalking.v3.EBPFProcessService/reportProcesses"
#define SW_PATH_KEEP_ALIVE "/skywalking.v3.EBPFProcessService/keepAlive"
#define SW_PATH_QUERY_TASKS "/skywalking.v3.EBPFProfilingService/queryTasks"
#define SW_PATH_COLLECT "/skywalking.v3.EBPFProfilingService/collectProfilingData"
#define SW_PATH_QUERY_POLICIES "/skywalking.v3.ContinuousProfilingService/queryPolicies"
#define SW_PATH_REPORT_TASK "/skywalking.v3.ContinuousProfilingService/reportProfilingTask"
#define SW_PATH_METERS "/skywalking.v3.MeterReportService/collectBatch"

/*
 * The layer the service of our processes is given (keepAlive applies it).
 * GENERAL: the OAP's General Service dashboard has the eBPF profiling
 * widget, and services instrumented by language agents live there too.
 */
#define SW_LAYER_DEFAULT "GENERAL"
#define SW_TASK_COMMAND "EBPFProfilingTaskQuery"
/* The OAP's answers to the continuous calls (ContinuousProfilingPolicyCommand, ContinuousProfilingReportCommand). */
#define SW_POLICY_COMMAND "ContinuousProfilingPolicyQuery"
#define SW_POLICY_ARG "ServiceWithPolicyJSON"
#define SW_REPORT_COMMAND "ContinuousProfilingReportTask"

/* Whether @name is one of the OAP's built-in layers (Layer.java) that a process may be in. */
bool sw_layer_known(const char *name);
/* The known layers, comma-separated, for an error message. */
const char *sw_layer_names(void);

/* One encoded message. */
struct sw_msg {
	uint8_t *data;
	size_t len;
};

/* A growing list of encoded messages. */
struct sw_msgs {
	struct sw_msg *v;
	size_t n, cap;
	size_t bytes;		/* sum of len */
};

void sw_msgs_free(struct sw_msgs *m);
/* Appends @msg (its data taken on success). 0 or -ENOMEM. */
int sw_msgs_push(struct sw_msgs *m, struct sw_msg msg);

/* A host process as reported to the OAP. */
struct sw_process {
	uint32_t pid;
	const char *layer;
	const char *service;
	const char *instance;
	const char *process_name;
	const char *command_line;
	const char *host_ip;
	const char *const *labels;	/* entity labels, plain strings */
	size_t nlabels;
	bool profilable;	/* property support_ebpf_profiling: "true" or "false" */
	char *process_id;	/* the OAP's id, once it answered (malloc'd; owner frees) */
};

/* EBPFProcessReportList: one hostProcess per process. 0 or -errno. */
int sw_encode_report(struct sw_process *const *procs, size_t n, const char *agent_id,
		     struct sw_msg *out);
/* EBPFProcessPingPkgList. */
int sw_encode_ping(struct sw_process *const *procs, size_t n, const char *agent_id,
		   struct sw_msg *out);
/*
 * Decodes EBPFReportProcessDownstream and sets process_id of each process
 * whose pid and entity (service, instance, process name) match an answer.
 * Returns how many matched, or -EBADMSG / -ENOMEM.
 */
int sw_decode_downstream(const uint8_t *buf, size_t len, struct sw_process *const *procs, size_t n);

/* EBPFProfilingTaskQuery. */
int sw_encode_task_query(const char *agent_id, int64_t latest_update_ms, struct sw_msg *out);

struct sw_kv {
	char *key;
	char *value;
};

/*
 * What one Commands reply may make the agent hold.  The real OAP sends one
 * command of 9 arguments per (task, process), and for a NETWORK task the ids
 * of one instance's processes; a 16 MiB reply of empty commands or of short
 * ids would otherwise be a million allocations.  Past a cap the rest is
 * skipped, and counted in the decoded struct.
 */
#define SW_MAX_COMMANDS 1024
#define SW_MAX_COMMAND_ARGS 32
#define SW_MAX_PROCESS_IDS 1024

struct sw_command {
	char *name;
	struct sw_kv *args;
	size_t nargs, args_cap;
};

struct sw_commands {
	struct sw_command *v;
	size_t n, cap;
	size_t commands_dropped;	/* past SW_MAX_COMMANDS */
	size_t args_dropped;		/* past SW_MAX_COMMAND_ARGS, all commands together */
};

int sw_decode_commands(const uint8_t *buf, size_t len, struct sw_commands *out);
void sw_commands_free(struct sw_commands *c);
const char *sw_command_arg(const struct sw_command *c, const char *key);

enum sw_target {
	SW_TARGET_ON_CPU,
	SW_TARGET_OFF_CPU,
	SW_TARGET_NETWORK,
	SW_TARGET_OTHER,
};

/* The longest FixedTriggerDuration accepted (s): a year. */
#define SW_MAX_DURATION_S (366ll * 86400)

/* A profiling task as handed out in an EBPFProfilingTaskQuery command. */
struct sw_task {
	char *task_id;
	char **process_ids;
	size_t nprocess_ids;
	size_t ids_dropped;		/* past SW_MAX_PROCESS_IDS */
	int64_t update_time_ms;		/* >= 0 */
	int64_t start_time_ms;		/* >= 0 */
	int64_t duration_s;		/* FixedTriggerDuration, 1..SW_MAX_DURATION_S (0: NETWORK) */
	enum sw_target target;
	char *target_name;		/* TargetType as sent */
	char *trigger;			/* TriggerType */
};

/*
 * Parses a command; 0, -ENOENT when it is not a profiling task command,
 * -EINVAL when a required argument is missing or malformed.
 */
int sw_task_parse(const struct sw_command *c, struct sw_task *t);
void sw_task_free(struct sw_task *t);

/* What the first message of a task in a stream carries. */
struct sw_task_meta {
	const char *task_id;
	const char *process_id;
	int64_t start_ms;
	int64_t current_ms;
};

/*
 * Appends one EBPFProfilingData per distinct symbolized stack among the
 * samples of @prof whose tgid is in @pids (npids 0: all).  Unresolved frames
 * are named per function or module ("[unknown] libfoo.so"), not per address;
 * samples whose kernel and user symbol lists are then identical are merged;
 * stacks whose count is 0 are left out.  Stack ids come from each message's
 * place in @out, so that @out holds one upload with no id shared.  onCPU or
 * offCPU from prof->kind; @meta (may be NULL) goes on the first message
 * appended.  Returns messages appended or -errno; @total (may be NULL) gets
 * the sum of the count (samples or switches) sent.
 */
int sw_profile_messages(const struct profile *prof, const uint32_t *pids, size_t npids,
			const struct sw_task_meta *meta, struct sw_msgs *out, uint64_t *total);

/* One service's entry of a ContinuousProfilingPolicyQuery: the policy held ("" for none). */
struct sw_service_policy {
	const char *service;
	const char *uuid;
};

int sw_encode_policy_query(const struct sw_service_policy *v, size_t n, struct sw_msg *out);

/* ContinuousProfilingCauseType: the proto's numbers. */
enum sw_cause_type {
	SW_CAUSE_PROCESS_CPU = 0,
	SW_CAUSE_THREAD_COUNT = 1,
	SW_CAUSE_SYSTEM_LOAD = 2,
	SW_CAUSE_HTTP_ERROR_RATE = 3,
	SW_CAUSE_HTTP_AVG_RESPONSE_TIME = 4,	/* the proto: ProcessResponseTimeoutRate */
};

struct sw_cause {
	enum sw_cause_type type;
	double threshold, current;
};

/* A ContinuousProfilingReport: a policy of the process's service tripped. */
struct sw_continuous_report {
	const char *layer, *service, *instance, *process_name;
	const struct sw_cause *causes;
	size_t ncauses;
	int32_t duration_s;		/* how long the task will run */
	enum sw_target target;		/* ON_CPU or OFF_CPU */
};

int sw_encode_continuous_report(const struct sw_continuous_report *r, struct sw_msg *out);

/* A single-value meter of a process, labelled process_name and layer (as Rover's continuous meters). */
struct sw_meter {
	const char *name;
	double value;
	const char *process_name, *layer;
};

/* A MeterDataCollection: one MeterData per meter, each naming @service and @instance. */
int sw_encode_meters(const char *service, const char *instance, int64_t timestamp_ms, const struct sw_meter *v,
		     size_t n, struct sw_msg *out);

/* A random (version 4) UUID, 36 characters + NUL. */
void sw_uuid(char out[37]);

#endif /* SKYWALKING_H */
