/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The host processes the agent selects (--pid, --exe-pattern, --cgroup), and
 * telling the OAP about them: reportProcesses, which gives each its process
 * id, and the keepAlive heartbeat.
 */
#ifndef AGENT_PROCS_H
#define AGENT_PROCS_H

#include <stdbool.h>
#include <stdint.h>
#include <arpa/inet.h>
#include "agent_oap.h"
#include "agent_opts.h"
#include "skywalking.h"

/* Selected processes tracked at most; more are left out (counted) until some exit. */
#define MAX_AGENT_PROCS 4096

struct agent_proc {
	struct sw_process sw;		/* points into the strings below */
	uint64_t start_time;		/* /proc/PID/stat starttime: tells a reused pid apart */
	char *service, *instance, *name, *cmdline;
	const char **labels;		/* --label ones, then the matching --exe-label ones */
	bool seen;			/* in the latest scan */
	bool reported;			/* the OAP answered with its id */
};

struct procs {
	struct agent_proc **v;
	size_t n;
	uint64_t left_out;		/* selected while the table was full */
	uint64_t heartbeats;
	char hostname[256];		/* the default service */
	char host_ip[INET6_ADDRSTRLEN];	/* goes with every process reported */
};

/* The host's name and address, for the processes reported from now on. */
void procs_host_identity(struct procs *ps);
/* Rescans /proc, reports what is new (all every --report-every), keepAlive. */
void procs_heartbeat(struct procs *ps, const struct agent_opts *o, struct oap *oap);
/* reportProcesses with every process (@all) or those the OAP has no id for yet. */
void procs_report(struct procs *ps, const struct agent_opts *o, struct oap *oap, bool all);
bool procs_any_unreported(const struct procs *ps);
/* Local pids of the OAP process @process_id in *@out (malloc'd); 0 when it is not known here. */
size_t procs_pids(const struct procs *ps, const char *process_id, uint32_t **out);
/* Forgets every process: the next heartbeat finds them again and reports them as they are now. */
void procs_forget(struct procs *ps);
void procs_free(struct procs *ps);

#endif /* AGENT_PROCS_H */
