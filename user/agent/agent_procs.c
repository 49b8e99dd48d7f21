// SPDX-License-Identifier: GPL-2.0
/*
 * Which host processes the agent profiles (--pid, --exe-pattern, --cgroup),
 * and telling the OAP about them: reportProcesses, which gives each its
 * process id, and the keepAlive heartbeat.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "agent_procs.h"
#include "cpython.h"
#include "elfsyms.h"
#include "globmatch.h"
#include "kernel_features.h"
#include "jvm_attach.h"
#include "procmaps.h"
#include "safe_open.h"
#include "util.h"

static bool cgroup_selected(const struct agent_opts *o, uint32_t pid)
{
	char path[64], buf[4096], *line, *save = NULL;

	if (o->ncgroups == 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%u/cgroup", pid);
	if (read_small_file(path, buf, sizeof(buf)) <= 0)
		return false;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "0::", 3))
			continue;
		for (int i = 0; i < o->ncgroups; i++) {
			size_t n = strlen(o->cgroups[i]);

			if (!strcmp(o->cgroups[i], "/") ||
			    (!strncmp(line + 3, o->cgroups[i], n) && (line[3 + n] == '\0' || line[3 + n] == '/')))
				return true;
		}
	}
	return false;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* --exe-pattern's match: the executable's path or name, or the comm. */
static bool exe_matches(const char *glob, const char *exe, const char *comm)
{
	return (*exe && (glob_match(glob, exe) || glob_match(glob, base_name(exe)))) || glob_match(glob, comm);
}

static bool exe_selected(const struct agent_opts *o, const char *exe, const char *comm)
{
	for (int i = 0; i < o->nexe; i++)
		if (exe_matches(o->exe_patterns[i], exe, comm))
			return true;
	return false;
}

/* --label's labels, then those of the --exe-label globs the process matches; NULL: no memory. */
static const char **proc_labels(const struct agent_opts *o, const char *exe, const char *comm,
				size_t *n)
{
	const char **labels = calloc_logged((size_t)o->nlabels + (size_t)o->nexe_labels + 1, sizeof(*labels));
	char glob[PATH_MAX];

	if (!labels)
		return NULL;
	*n = 0;
	for (int i = 0; i < o->nlabels; i++)
		labels[(*n)++] = o->labels[i];
	for (int i = 0; i < o->nexe_labels; i++) {
		const struct exe_label *l = &o->exe_labels[i];

		snprintf(glob, sizeof(glob), "%.*s", (int)l->glob_len, l->glob);
		if (exe_matches(glob, exe, comm))
			labels[(*n)++] = l->label;
	}
	return labels;
}

static char *read_cmdline(uint32_t pid)
{
	char path[64], buf[4096];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%u/cmdline", pid);
	n = read_small_file(path, buf, sizeof(buf));
	if (n < 0)
		n = 0;
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
	while (n > 0 && buf[n - 1] == ' ')
		buf[--n] = '\0';
	return strdup_logged(buf);
}

/*
 * Interpreters and JITs: their functions are not in their ELF symbols.  The
 * names are Rover's (pkg/tools/process/process.go, NotSupportProfilingExe,
 * matched as prefixes of the executable's name) less "ssh", a native
 * program that aperture symbolizes like any other.
 */
static const char *const interpreters[] = { "java", "python", "node", "bash", "ruby" };

static bool is_interpreter(const char *base)
{
	for (size_t i = 0; i < sizeof(interpreters) / sizeof(interpreters[0]); i++)
		if (!strncmp(base, interpreters[i], strlen(interpreters[i])))
			return true;
	return false;
}

/*
 * A JIT's /tmp/perf-PID.map where the symbolizer reads it: in the process's
 * own root, a regular file (not a link), opened as the symbolizer opens it.
 */
static bool has_perf_map(uint32_t pid)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/tmp/perf-%u.map", proc_ns_pid(pid));
	fd = target_open(pid, path, UINT64_MAX, TARGET_NOFOLLOW, NULL);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* Whether the executable of @pid names any function: .symtab, .dynsym, minidebuginfo or a debug file. */
static bool exe_has_symbols(uint32_t pid, const char *exe)
{
	char path[64];
	struct elf_syms es;
	int fd, root_fd;
	bool named;

	snprintf(path, sizeof(path), "/proc/%u/exe", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return true;	/* gone, or not ours to read: let the OAP offer it */
	root_fd = target_root_open(pid);
	/* The _start the symbolizer names at the entry point of a stripped file is not a symbol of its own. */
	named = elf_syms_load(&es, fd, exe, root_fd) == 0 && es.tab.nsyms > es.nsynthetic;
	elf_syms_free(&es);
	if (root_fd >= 0)
		close(root_fd);
	close(fd);
	return named;
}

/*
 * Whether a task would name this process's Python functions: its CPython is
 * found and checked (or not initialized yet), and the tasks walk CPython
 * frames (DWARF unwinding here, --python not off, user stacks asked for).
 */
static bool python_walked(uint32_t pid, const struct profiler_opts *po)
{
	struct cpython_proc py;
	char why[128];
	int err;

	if (po->python_off || po->unwind == UNWIND_FP || po->stack_mode == STACK_MODE_KERNEL ||
	    !feature_has(FEAT_DWARF_UNWIND))
		return false;
	err = cpython_find(pid, &py, why, sizeof(why));
	return err == 0 || err == -EAGAIN;
}

/*
 * support_ebpf_profiling: whether aperture can name what it samples in this
 * process.  Rover (ProfilingStat) says false for the interpreters above and
 * for an executable with no .symtab or .dynsym entry at all; aperture also
 * profiles an interpreter that writes a perf map, a CPython whose frames it
 * walks, and wants a function symbol of the executable's own (a stripped
 * dynamic executable has .dynsym entries, but only for what it imports), and
 * with --jvm-perfmap a JVM (mapping libjvm.so), which its tasks ask for a
 * perf map.  Kernel threads (no executable) have kernel stacks only, which
 * kallsyms names.
 */
static bool profilable(uint32_t pid, const char *exe, const char *name, const struct agent_opts *o)
{
	if (!*exe)
		return true;
	if (is_interpreter(name))
		return has_perf_map(pid) || (o->jvm_perfmap_s && jvm_maps_libjvm(pid)) ||
		       python_walked(pid, &o->prof);
	return exe_has_symbols(pid, exe);
}

static void agent_proc_free(struct agent_proc *p)
{
	if (!p)
		return;
	free(p->sw.process_id);
	free(p->service);
	free(p->instance);
	free(p->name);
	free(p->cmdline);
	free(p->labels);
	free(p);
}

static struct agent_proc *proc_new(const struct procs *ps, const struct agent_opts *o, uint32_t pid,
				   uint64_t start, const char *exe, const char *comm)
{
	struct agent_proc *p = calloc_logged(1, sizeof(*p));
	const char *base = base_name(exe);
	size_t nlabels = 0;

	if (!p)
		return NULL;
	p->name = strdup_logged(*base ? base : comm);
	p->service = strdup_logged(o->service ? o->service : ps->hostname);
	p->instance = strdup_logged(o->instance ? o->instance : p->name ? p->name : comm);
	p->cmdline = read_cmdline(pid);
	p->labels = proc_labels(o, exe, comm, &nlabels);
	if (!p->name || !p->service || !p->instance || !p->cmdline || !p->labels) {
		agent_proc_free(p);
		return NULL;
	}
	p->start_time = start;
	p->seen = true;
	p->sw = (struct sw_process){
		.pid = pid, .layer = o->layer, .service = p->service, .instance = p->instance,
		.process_name = p->name, .command_line = p->cmdline, .host_ip = ps->host_ip,
		.labels = p->labels, .nlabels = nlabels,
		.profilable = profilable(pid, exe, p->name, o),
	};
	if (!p->sw.profilable)
		log_info("process %u (%s): support_ebpf_profiling=false (%s)", pid, p->name,
			 is_interpreter(p->name) ? "an interpreter without a perf map (for a JVM: --jvm-perfmap) nor CPython frames walked"
						 : "no function symbols in its executable");
	return p;
}

static struct agent_proc *proc_find(const struct procs *ps, uint32_t pid, uint64_t start)
{
	for (size_t i = 0; i < ps->n; i++)
		if (ps->v[i]->sw.pid == pid && ps->v[i]->start_time == start)
			return ps->v[i];
	return NULL;
}

static int proc_add(struct procs *ps, struct agent_proc *p)
{
	struct agent_proc **v = realloc(ps->v, (ps->n + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	ps->v = v;
	ps->v[ps->n++] = p;
	return 0;
}

/* Looks at one /proc entry; a selected process not seen before is added. */
static void scan_one(struct procs *ps, const struct agent_opts *o, uint32_t pid)
{
	char path[64], exe[PATH_MAX] = "", comm[64] = "";
	struct agent_proc *p;
	uint64_t start;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%u/exe", pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	if (n > 10 && !strcmp(exe + n - 10, " (deleted)"))
		exe[n - 10] = '\0';
	snprintf(path, sizeof(path), "/proc/%u/comm", pid);
	if (read_small_file(path, comm, sizeof(comm)) < 0)
		return;		/* gone */
	comm[strcspn(comm, "\n")] = '\0';
	/* Kernel threads (no exe) have no user stacks: only when asked by pid. */
	if (!pid_in(o->pids, o->npids, pid) &&
	    (!*exe || (!exe_selected(o, exe, comm) && !cgroup_selected(o, pid))))
		return;
	start = proc_start_time(pid);
	if (!start)
		return;		/* exited since the listing, or its stat unreadable */
	p = proc_find(ps, pid, start);
	if (p) {
		p->seen = true;
		return;
	}
	if (ps->n >= MAX_AGENT_PROCS) {
		if (!ps->left_out++)
			log_warn("more than %d selected processes: the others are left out (the stats line counts them)",
				 MAX_AGENT_PROCS);
		return;
	}
	p = proc_new(ps, o, pid, start, exe, comm);
	if (!p || proc_add(ps, p)) {
		agent_proc_free(p);
		return;
	}
	log_info("process %u (%s) selected", pid, p->name);
}

/* Rescans /proc: picks up new processes, forgets exited ones. */
static void scan_processes(struct procs *ps, const struct agent_opts *o)
{
	DIR *dir = opendir("/proc");
	struct dirent *de;
	uint32_t self = (uint32_t)getpid();
	size_t i, kept = 0;

	if (!dir) {
		log_warn("cannot read /proc: %s", strerror(errno));
		return;
	}
	for (i = 0; i < ps->n; i++)
		ps->v[i]->seen = false;
	while ((de = readdir(dir))) {
		char *end;
		unsigned long pid = strtoul(de->d_name, &end, 10);

		if (*end || pid == 0 || pid == self)
			continue;
		scan_one(ps, o, (uint32_t)pid);
	}
	closedir(dir);
	for (i = 0; i < ps->n; i++) {
		if (ps->v[i]->seen) {
			ps->v[kept++] = ps->v[i];
			continue;
		}
		log_info("process %u (%s) exited", ps->v[i]->sw.pid, ps->v[i]->name);
		agent_proc_free(ps->v[i]);
	}
	ps->n = kept;
}

enum proc_filter { PROCS_ALL, PROCS_UNREPORTED, PROCS_REPORTED };

/* The sw_process of each process @which selects; NULL on ENOMEM. */
static struct sw_process **proc_list(const struct procs *ps, enum proc_filter which, size_t *n)
{
	struct sw_process **list = calloc(ps->n ? ps->n : 1, sizeof(*list));

	*n = 0;
	if (!list) {
		log_warn("out of memory listing processes");
		return NULL;
	}
	for (size_t i = 0; i < ps->n; i++)
		if (which == PROCS_ALL || ps->v[i]->reported == (which == PROCS_REPORTED))
			list[(*n)++] = &ps->v[i]->sw;
	return list;
}

void procs_report(struct procs *ps, const struct agent_opts *o, struct oap *oap, bool all)
{
	struct grpc_buf reply = { 0 };
	struct sw_process **list;
	struct sw_msg req;
	size_t n, i;
	int matched;

	list = proc_list(ps, all ? PROCS_ALL : PROCS_UNREPORTED, &n);
	if (list && n == 0)
		oap_call_idle(oap, CALL_REPORT);	/* those it failed to report are gone */
	if (!list || n == 0 || sw_encode_report(list, n, oap->agent_id, &req))
		goto out;
	if (!oap_unary(oap, CALL_REPORT, &req, &reply)) {
		if (!procs_any_unreported(ps))
			oap_call_idle(oap, CALL_REPORT);	/* a periodic re-report: the next one is far */
		goto out;
	}
	matched = sw_decode_downstream(reply.data, reply.len, list, n);
	oap_answer_decoded(oap, CALL_REPORT, matched >= 0);
	if (matched < 0)
		goto out;
	for (i = 0; i < ps->n; i++)
		if (ps->v[i]->sw.process_id)
			ps->v[i]->reported = true;
	log_info("reported %zu processes, the OAP identified %d", n, matched);
out:
	grpc_buf_free(&reply);
	free(list);
}

static void keep_alive(const struct procs *ps, struct oap *oap)
{
	struct grpc_buf reply = { 0 };
	struct sw_process **list;
	struct sw_msg req;
	size_t n;

	list = proc_list(ps, PROCS_REPORTED, &n);
	if (list && n == 0)
		oap_call_idle(oap, CALL_KEEPALIVE);
	if (list && n && !sw_encode_ping(list, n, oap->agent_id, &req))
		oap_unary(oap, CALL_KEEPALIVE, &req, &reply);
	grpc_buf_free(&reply);
	free(list);
}

bool procs_any_unreported(const struct procs *ps)
{
	for (size_t i = 0; i < ps->n; i++)
		if (!ps->v[i]->reported)
			return true;
	return false;
}

void procs_heartbeat(struct procs *ps, const struct agent_opts *o, struct oap *oap)
{
	scan_processes(ps, o);
	if (ps->heartbeats % o->report_every == 0)
		procs_report(ps, o, oap, true);
	else if (procs_any_unreported(ps))
		procs_report(ps, o, oap, false);
	if (!oap->fatal)
		keep_alive(ps, oap);
	ps->heartbeats++;
}

/*
 * Usually one: two local processes share an OAP id only when they share
 * service, instance and process name.
 */
size_t procs_pids(const struct procs *ps, const char *process_id, uint32_t **out)
{
	uint32_t *pids = calloc(ps->n ? ps->n : 1, sizeof(*pids));
	size_t n = 0;

	*out = pids;
	if (!pids)
		return 0;
	for (size_t i = 0; i < ps->n; i++) {
		const struct agent_proc *p = ps->v[i];

		if (p->sw.process_id && !strcmp(p->sw.process_id, process_id))
			pids[n++] = p->sw.pid;
	}
	return n;
}

void procs_forget(struct procs *ps)
{
	for (size_t i = 0; i < ps->n; i++)
		agent_proc_free(ps->v[i]);
	ps->n = 0;
}

void procs_free(struct procs *ps)
{
	procs_forget(ps);
	free(ps->v);
	ps->v = NULL;
}

/* The host name is the default service; the address goes with every process reported. */
void procs_host_identity(struct procs *ps)
{
	struct ifaddrs *ifs, *i;

	if (gethostname(ps->hostname, sizeof(ps->hostname) - 1) || !ps->hostname[0])
		snprintf(ps->hostname, sizeof(ps->hostname), "localhost");
	snprintf(ps->host_ip, sizeof(ps->host_ip), "127.0.0.1");
	if (getifaddrs(&ifs))
		return;
	for (i = ifs; i; i = i->ifa_next) {
		const struct sockaddr_in *sin = (const void *)i->ifa_addr;

		if (!sin || sin->sin_family != AF_INET || !strcmp(i->ifa_name, "lo") ||
		    ntohl(sin->sin_addr.s_addr) >> 24 == 127)
			continue;
		inet_ntop(AF_INET, &sin->sin_addr, ps->host_ip, sizeof(ps->host_ip));
		break;
	}
	freeifaddrs(ifs);
}
