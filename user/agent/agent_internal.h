/* SPDX-License-Identifier: GPL-2.0 */
#ifndef AGENT_INTERNAL_H
#define AGENT_INTERNAL_H

/*
 * What the pieces of `aperture run` share: the agent's state and the calls
 * one piece makes into another.  Only user/skywalking/agent*.c include this;
 * the rest of aperture sees agent.h.
 *
 *   agent.c        the loop, shutdown, agent_main
 *   agent_opts.c   options, --help, the token
 *   agent_oap.c    the gRPC calls and how their failures are told
 *   agent_procs.c  process selection, reportProcesses, keepAlive
 *   agent_tasks.c  queryTasks, accepting, starting and ending tasks
 *   agent_prof.c   the profilers: each one's target set follows its tasks
 *   agent_spool.c  the encoded messages kept while the OAP is unreachable
 *   agent_flush.c  profiler snapshots into collectProfilingData messages
 *   agent_ledger.c what survives a crash: tasks, unacknowledged uploads, generations
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include "grpc.h"
#include "profiler.h"
#include "skywalking.h"
#include "util.h"

#define MAX_SELECT 64
/* Selected processes tracked at most; more are left out (counted) until some exit. */
#define MAX_AGENT_PROCS 4096
#define MS 1000000ull		/* ns per ms */
#define STATE_DIR_DEFAULT "/var/lib/aperture"

struct agent_opts {
	const char *oap;
	char *token;
	uint32_t pids[MAX_SELECT];
	int npids;
	const char *exe_patterns[MAX_SELECT];
	int nexe;
	const char *cgroups[MAX_SELECT];	/* paths relative to the cgroup2 root */
	int ncgroups;
	const char *service, *instance;
	const char *layer;		/* --layer, a name of the OAP's Layer */
	const char *labels[MAX_SELECT];	/* --label: entity labels of every process */
	int nlabels;
	/* --exe-label GLOB=LABEL: a label of the processes GLOB matches (as --exe-pattern) */
	struct exe_label {
		const char *glob;	/* GLOB=LABEL as given: the glob is the part before '=' */
		size_t glob_len;
		const char *label;
	} exe_labels[MAX_SELECT];
	int nexe_labels;
	uint64_t heartbeat_ms, task_ms, flush_ms, deadline_ms, backoff_max_ms;
	uint64_t report_every;
	uint64_t spool_bytes;
	uint64_t duration_s;
	struct profiler_opts prof;	/* each profiler's own options (-F, --min-block-us, ...) */
	const char *pin_dir;		/* NULL: profilers load per task, nothing pinned */
	const char *state_dir;		/* --state-dir: the ledger lives in a subdirectory */
	struct tls_opts tls;		/* --tls, --ca, --cert, --key, --insecure-skip-verify */
};

struct agent_proc {
	struct sw_process sw;		/* points into the strings below */
	uint64_t start_time;		/* /proc/PID/stat starttime: tells a reused pid apart */
	char *service, *instance, *name, *cmdline;
	const char **labels;		/* --label ones, then the matching --exe-label ones */
	bool seen;			/* in the latest scan */
	bool reported;			/* the OAP answered with its id */
};

enum task_state { TASK_PENDING, TASK_RUNNING, TASK_DONE };
/* A task's kind is the id of the profiler that serves it (an index into agent.prof). */
#define KIND_NONE (-1)

/*
 * One task for one process: the OAP sends a task created on a service as one
 * command per process (same TaskId, one ProcessId each), so a task here is
 * (TaskId, ProcessId) and t.process_ids holds exactly that one id.
 */
struct agent_task {
	struct sw_task t;
	int kind;			/* profiler id; KIND_NONE: remembered only, never run */
	enum task_state state;
	uint32_t *pids;
	size_t npids;
	int64_t run_start_ms, stop_at_ms;	/* CLOCK_REALTIME */
	uint64_t count;			/* samples / switches queued for the OAP */
	uint64_t messages;
	bool ending;			/* stop time passed: no longer counted, last flush due */
};

/*
 * Tasks held at most (pending, running and remembered ones): past it a new
 * task is refused.  The real OAP hands out one per (task, process) of this
 * agent's; MAX_AGENT_PROCS processes under one task each would still fit
 * only partly, but no OAP of a sane deployment keeps 1024 live tasks.
 */
#define AGENT_MAX_TASKS 1024
/*
 * How far ahead a task may start (7 days).  The OAP takes any start time;
 * a pending task is held until it starts, so without a bound one that
 * starts in the year 3000 is held for good.
 */
#define TASK_MAX_AHEAD_DAYS 7

/* What the OAP sent past a cap: refused, counted, said once each (agent_tasks.c). */
enum oap_refusal { REFUSED_COMMANDS, REFUSED_ARGS, REFUSED_IDS, REFUSED_TASKS, REFUSED_AHEAD, REFUSED_COUNT };

/* The OAP's calls; each is a bit of agent.failing. */
enum oap_call { CALL_REPORT, CALL_KEEPALIVE, CALL_QUERY, CALL_COLLECT, CALL_COUNT };

struct agent_prof {
	const struct profiler_ops *ops;
	struct profiler *p;
	struct ring_buffer *events;
	uint32_t *pids;			/* p->opts.pids points here */
};

struct spool_batch {
	struct sw_msgs msgs;		/* one collectProfilingData stream */
	uint64_t seq;			/* its file in the ledger; 0: none */
	struct spool_batch *next;
};

/*
 * The crash ledger (agent_ledger.c) in STATE_DIR/agent-HASH (HASH of the OAP
 * and pin dir): "ledger", replaced atomically, says which tasks run, the
 * upload sequence, and per profiler the map id of the last generation whose
 * counts are safe in a batch file; "batch-SEQ" files hold the encoded
 * uploads the OAP has not acknowledged.  dir_fd < 0: no ledger this run.
 */
struct ledger {
	int dir_fd, lock_fd;
	char path[4096];
	uint64_t next_seq;		/* the next batch file's number; >= 1 */
	uint32_t captured[PROFILER_MAX];	/* map id of the generation last saved, per profiler */
	bool failing;			/* a write failed: said once until one succeeds */
};

struct spool {
	struct spool_batch *head, *tail;
	size_t bytes, limit;
	uint64_t dropped_msgs, dropped_bytes;
	struct ledger *ledger;		/* batch files to remove once sent or dropped */
};

struct agent {
	struct agent_opts o;
	char agent_id[37];
	char hostname[256];
	char host_ip[INET6_ADDRSTRLEN];
	struct grpc_channel *ch;
	struct symbolizer *sym;
	struct agent_proc **procs;
	size_t nprocs;
	uint64_t procs_left_out;	/* selected while the table was full */
	struct agent_task **tasks;
	size_t ntasks, tasks_cap;
	uint64_t refused[REFUSED_COUNT];	/* by enum oap_refusal */
	unsigned int refused_said;	/* bit per enum oap_refusal: warned once */
	struct agent_prof prof[PROFILER_MAX];	/* by profiler id; ops NULL: no SkyWalking target */
	struct profiler_shared shared;	/* --pin: one control map, one target set */
	struct spool spool;
	struct ledger ledger;
	int64_t latest_update_ms;
	uint64_t heartbeats;
	int64_t last_flush_ms;		/* currentTime of the last upload: each one gets its own */
	/*
	 * An outage (a transient failure) is said when it starts, and its end
	 * once a call went through while no call still has work that failed
	 * (failing: bit per enum oap_call, cleared by the call's success or
	 * when it has nothing left to do), so that keepAlive going through
	 * does not end an outage of uploads (a proxy that refuses them).
	 */
	bool outage;
	unsigned int failing;
	unsigned int undecodable;	/* bit per enum oap_call: its last answer did not decode */
	bool fatal;			/* the OAP refused us: stop */
	int argc;			/* the command line, parsed again on SIGHUP */
	char **argv;
};

static inline int64_t wall_ms(void)
{
	return (int64_t)(now_ns(CLOCK_REALTIME) / MS);
}

/* agent_opts.c */
int parse_args(struct agent_opts *o, int argc, char **argv);

/* agent.c: a channel to @o's OAP with its token, TLS and backoff; NULL (logged) on failure. */
struct grpc_channel *agent_channel_new(const struct agent_opts *o);

/* agent_reload.c: SIGHUP */
void agent_reload(struct agent *a);

/* agent_oap.c */
bool transient(int code);
bool retryable(int code, const struct grpc_status *st);
bool call_failed(struct agent *a, enum oap_call call, int code, const struct grpc_status *st);
void call_idle(struct agent *a, enum oap_call call);
void answer_decoded(struct agent *a, enum oap_call call, bool decoded);
bool unary(struct agent *a, enum oap_call call, struct sw_msg *req, struct grpc_buf *reply);
int send_batch(struct agent *a, const struct sw_msgs *msgs, struct grpc_status *st);

/* agent_procs.c */
ssize_t read_small(const char *path, char *buf, size_t size);
void host_identity(struct agent *a);
void proc_free(struct agent_proc *p);
void report_processes(struct agent *a, bool all);
bool any_unreported(const struct agent *a);
void heartbeat(struct agent *a);

/* agent_tasks.c */
void task_free(struct agent_task *t);
void oap_refused(struct agent *a, enum oap_refusal why, uint64_t n);
int task_add(struct agent *a, struct agent_task *t);
int task_kind(const struct sw_task *t);
void query_tasks(struct agent *a);
void tick_tasks(struct agent *a);
void prune_tasks(struct agent *a);
void log_task_end(const struct agent *a, const struct agent_task *t, const char *how);

/* agent_prof.c */
void prof_close(struct agent_prof *ap);
int open_pinned(struct agent *a);
void reconfigure(struct agent *a, int kind);

/* agent_spool.c */
void spool_pop(struct spool *s);
void spool_push(struct spool *s, struct sw_msgs *msgs, uint64_t seq);
void spool_send(struct agent *a);
void spool_log_losses(const struct agent *a);

/* agent_flush.c */
void flush(struct agent *a);
void capture(struct agent *a, const int *gen);

/* agent_ledger.c */
void ledger_open(struct agent *a);
void ledger_close(struct ledger *l);
int ledger_save_batch(struct ledger *l, uint64_t seq, const struct sw_msgs *msgs);
void ledger_forget_batch(struct ledger *l, uint64_t seq);
void ledger_commit(struct agent *a);
void ledger_recover(struct agent *a);
void test_crash_point(const char *point);

#endif /* AGENT_INTERNAL_H */
