// SPDX-License-Identifier: GPL-2.0
/*
 * Lock contention profiler: owns the locks skeleton (bpf/events/locks.bpf.c).
 * Samples are weighed in contentions and delay, as Go's mutex profiles are,
 * and the lock is the leaf frame: its name where the kernel or the ELF file
 * tells, else its address and the code that contends for it.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "numparse.h"
#include "datasym.h"
#include "locks.h"
#include "locks.skel.h"
#include "procmaps.h"
#include "profile_event.h"
#include "profiler.h"
#include "settings.h"
#include "util.h"

_Static_assert(sizeof(struct locks_config) <= PROFILER_CONFIG_MAX, "locks_config too big");

/*
 * --lock-hold on the sides that can be timed here: user mutexes need
 * uprobes, kernel locks need trampolines (fentry), which some kernels refuse.
 */
static void hold_possible(const struct locks_config *cfg, __u32 *user, __u32 *kernel)
{
	*user = cfg->hold_user && cfg->user && feature_has(FEAT_UPROBE);
	*kernel = cfg->hold_kernel && cfg->kernel && feature_has(FEAT_FENTRY);
}

/* hold_possible, said once, on @cfg before it is written to the kernel. */
static void hold_sides(struct locks_config *cfg)
{
	__u32 user, kernel;
	char why[128];

	hold_possible(cfg, &user, &kernel);
	if (cfg->hold_user && cfg->user && !user)
		log_warn("locks: --lock-hold: no user mutex hold times: this kernel lacks %s",
			 feature_missing(FEAT_UPROBE, why, sizeof(why)));
	if (cfg->hold_kernel && cfg->kernel && !kernel)
		log_warn("locks: --lock-hold: no kernel lock hold times: this kernel lacks %s%s",
			 feature_missing(FEAT_FENTRY, why, sizeof(why)), user ? "; user mutex holds only" : "");
	cfg->hold_user = user;
	cfg->hold_kernel = kernel;
}

static const char *side_name(const struct locks_config *cfg)
{
	return cfg->kernel && cfg->user ? "both" : cfg->kernel ? "kernel" : "user";
}

/* The sides and hold timing chose the programs loaded. */
static void locks_keep_fixed(const void *now, void *next, struct changed_keys *keys)
{
	const struct locks_config *have = now;
	struct locks_config *want = next;
	__u32 have_user, have_kernel, want_user, want_kernel;

	if (have->kernel != want->kernel || have->user != want->user)
		changed_keys_add(keys, "--lock-side %s (loaded: %s)", side_name(want), side_name(have));
	hold_possible(have, &have_user, &have_kernel);
	hold_possible(want, &want_user, &want_kernel);
	if (have_user != want_user || have_kernel != want_kernel)
		changed_keys_add(keys, "--lock-hold %s (loaded: %s)", want_user || want_kernel ? "on" : "off",
				 have_user || have_kernel ? "on" : "off");
	want->kernel = have->kernel;
	want->user = have->user;
	want->hold_user = have->hold_user;
	want->hold_kernel = have->hold_kernel;
}

/*
 * Runqueue locks by CPU (lock_rq_collect): per-CPU data that no kernel symbol
 * names.  A fact of the running kernel, read once per open.
 */
static uint64_t *rq_lock_addrs;
static int rq_lock_ncpus;

/* The CPUs whose runqueue lock may be named: 0 when the kernel cannot tell. */
static int rq_lock_cpus(const struct locks_config *cfg)
{
	int ncpus;

	if (!cfg->kernel || !feature_has(FEAT_RQ_LOCKS))
		return 0;
	ncpus = libbpf_num_possible_cpus();
	return ncpus <= 0 ? 0 : ncpus > LOCKS_RQ_MAX_CPUS ? LOCKS_RQ_MAX_CPUS : ncpus;
}

/*
 * Runs lock_rq_collect on each CPU and keeps what it found; a CPU it cannot
 * run on (offline) has its runqueue lock go by address.
 */
static void rq_locks_read(struct locks_bpf *skel, int ncpus)
{
	int prog_fd = bpf_program__fd(skel->progs.lock_rq_collect);
	int map_fd = bpf_map__fd(skel->maps.rq_locks);
	int found = 0, err = 0;
	uint64_t *addrs;

	free(rq_lock_addrs);
	rq_lock_addrs = NULL;
	rq_lock_ncpus = 0;
	if (!ncpus)
		return;
	addrs = calloc_logged(ncpus, sizeof(*addrs));
	if (!addrs)
		return;
	for (uint32_t cpu = 0; cpu < (uint32_t)ncpus; cpu++) {
		LIBBPF_OPTS(bpf_test_run_opts, run, .flags = BPF_F_TEST_RUN_ON_CPU, .cpu = cpu);

		if (bpf_prog_test_run_opts(prog_fd, &run)) {
			err = errno;
			continue;
		}
		if (run.retval && bpf_map_lookup_elem(map_fd, &cpu, &addrs[cpu]) == 0 && addrs[cpu])
			found++;
	}
	if (!found) {
		log_warn("locks: runqueue locks go unnamed: lock_rq_collect found none (%s)",
			 err ? strerror(err) : "no runqueue said it was its CPU's");
		free(addrs);
		return;
	}
	rq_lock_addrs = addrs;
	rq_lock_ncpus = ncpus;
	for (int cpu = 0; cpu < ncpus; cpu++)
		if (addrs[cpu])
			log_info("locks: rq_lock[cpu%d] at 0x%llx", cpu, (unsigned long long)addrs[cpu]);
}

/* The CPU whose runqueue lock is @lock, or -1. */
static int rq_lock_cpu(uint64_t lock)
{
	for (int cpu = 0; cpu < rq_lock_ncpus; cpu++)
		if (rq_lock_addrs[cpu] == lock && lock)
			return cpu;
	return -1;
}

static int locks_open(struct profiler *p, const struct profiler_opts *o)
{
	struct locks_config *cfg = profiler_config(&p->opts, p->ops);
	int rq_cpus = rq_lock_cpus(cfg);
	int err;

	hold_sides(cfg);
	err = PROFILER_OPEN_SKEL_PREPARED(p, locks, ({
		bpf_program__set_autoload(__skel->progs.lock_rq_collect, rq_cpus > 0);
		bpf_map__set_max_entries(__skel->maps.rq_locks, rq_cpus > 0 ? rq_cpus : 1);
		/* A side switched off is not even loaded. */
		bpf_program__set_autoload(__skel->progs.lock_begin, cfg->kernel);
		bpf_program__set_autoload(__skel->progs.lock_end, cfg->kernel);
		bpf_program__set_autoload(__skel->progs.futex_switch, cfg->user);
		bpf_program__set_autoload(__skel->progs.mutex_unlock_user, cfg->hold_user);
		bpf_program__set_autoload(__skel->progs.mutex_unlock_kernel, cfg->hold_kernel);
		bpf_program__set_autoload(__skel->progs.up_read_kernel, cfg->hold_kernel);
		bpf_program__set_autoload(__skel->progs.up_write_kernel, cfg->hold_kernel);
	}));
	if (!err)
		rq_locks_read(p->skel, rq_cpus);
	return err;
}

/* "libc.so.6", "libc-2.31.so": the C library, whose pthread_mutex_unlock the targets call. */
static bool is_libc(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return strncmp(base, "libc.so", 7) == 0 || (strncmp(base, "libc-", 5) == 0 && strstr(base, ".so"));
}


/* The host's own libc: where a command that is not started yet will find it. */
static bool host_libc(char *path, size_t len)
{
	static const char *const candidates[] = {
#if defined(__x86_64__)
		"/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6",
#elif defined(__aarch64__)
		"/lib/aarch64-linux-gnu/libc.so.6", "/usr/lib/aarch64-linux-gnu/libc.so.6",
#endif
		"/lib64/libc.so.6", "/usr/lib64/libc.so.6", "/lib/libc.so.6", "/usr/lib/libc.so.6",
	};

	return first_readable(candidates, sizeof(candidates) / sizeof(candidates[0]), path, len);
}

/* uprobes already attached: one per (libc file, pid), whatever path reached the file. */
#define MAX_UNLOCK_PROBES 512
struct unlock_probes {
	struct { dev_t dev; ino_t ino; int pid; } done[MAX_UNLOCK_PROBES];
	int n;
	int failed;
	unsigned int refused;	/* libc names that are not the file mapped, probes over the cap */
};

/*
 * Attaches the unlock uprobe to pthread_mutex_unlock of @st's file, reached
 * by @open_path and named @path, for @pid (-1: every process).
 */
static void attach_unlock(struct profiler *p, struct unlock_probes *up, const char *path, const char *open_path,
			  const struct stat *st, int pid)
{
	struct locks_bpf *skel = p->skel;
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = "pthread_mutex_unlock");
	struct bpf_link *link;

	if (up->n >= MAX_UNLOCK_PROBES) {
		up->refused++;
		return;
	}
	for (int i = 0; i < up->n; i++)
		if (up->done[i].dev == st->st_dev && up->done[i].ino == st->st_ino && up->done[i].pid == pid)
			return;
	link = bpf_program__attach_uprobe_opts(skel->progs.mutex_unlock_user, pid, open_path, 0, &uo);
	if (profiler_add_link(p, link)) {
		log_warn("locks: --lock-hold: cannot probe pthread_mutex_unlock in %s: %s", path, strerror(errno));
		up->failed++;
		return;
	}
	log_info("locks: --lock-hold: pthread_mutex_unlock probed in %s (%s %d)", path,
		 pid < 0 ? "every process" : "pid", pid);
	up->done[up->n].dev = st->st_dev;
	up->done[up->n].ino = st->st_ino;
	up->done[up->n++].pid = pid;
}

struct unlock_probe_scan {
	struct profiler *p;
	struct unlock_probes *up;
	int attach_pid;
	bool found;
};

/* The libc a process maps (through its root: a container's own), probed; no other after it. */
static bool on_libc(const struct mapped_file *file, void *arg)
{
	struct unlock_probe_scan *scan = arg;

	attach_unlock(scan->p, scan->up, file->path, file->fd_path, &file->st, scan->attach_pid);
	scan->found = true;
	return false;
}

/* @pid's libc probed for @attach_pid; false when it maps none that can be. */
static bool probe_libc_of(struct profiler *p, struct unlock_probes *up, int pid, int attach_pid)
{
	struct unlock_probe_scan scan = { p, up, attach_pid, false };

	proc_mapped_files(pid, is_libc, on_libc, &scan, &up->refused);
	return scan.found;
}

/* The host's libc, for @pid; false when there is none. */
static bool probe_host_libc(struct profiler *p, struct unlock_probes *up, int pid)
{
	char path[PATH_MAX];
	struct stat st;

	if (!host_libc(path, sizeof(path)) || stat(path, &st))
		return false;
	attach_unlock(p, up, path, path, &st, pid);
	return true;
}

/*
 * The uprobes for --lock-hold: on each target's libc, for that target only
 * (a uprobe traps on every call: other processes must not pay for it); a
 * target without one mapped yet (the command about to exec) gets the host's
 * libc.  The whole machine: every libc some process maps, for everyone.
 */
static int attach_unlock_probes(struct profiler *p)
{
	struct unlock_probes *up = calloc_logged(1, sizeof(*up));
	struct dirent *de;
	DIR *proc;

	if (!up)
		return -ENOMEM;
	for (int i = 0; i < p->opts.npids; i++) {
		int pid = (int)p->opts.pids[i];

		if (!probe_libc_of(p, up, pid, pid))
			probe_host_libc(p, up, pid);
	}
	if (!p->opts.npids && !p->opts.targets_only) {
		probe_host_libc(p, up, -1);
		proc = opendir("/proc");
		while (proc && (de = readdir(proc)))
			if (de->d_name[0] >= '1' && de->d_name[0] <= '9')
				probe_libc_of(p, up, atoi(de->d_name), -1);
		if (proc)
			closedir(proc);
	}
	if (!up->n && !up->failed && (p->opts.npids || !p->opts.targets_only))
		log_warn("locks: --lock-hold: no libc found to probe: no user mutex hold times");
	if (up->refused)
		log_warn("locks: --lock-hold: %u libc names in processes' maps not probed (not the file mapped, "
			 "or over %d probes)", up->refused, MAX_UNLOCK_PROBES);
	free(up);
	return 0;
}

static int locks_attach(struct profiler *p)
{
	const struct locks_config *cfg = profiler_config(&p->opts, p->ops);
	int err = profiler_attach_tracing(p);

	if (err || !cfg->hold_user || !p->skel)
		return err;
	return attach_unlock_probes(p);
}

static void locks_close(struct profiler *p)
{
	locks_bpf__destroy(p->skel);
	free(rq_lock_addrs);
	rq_lock_addrs = NULL;
	rq_lock_ncpus = 0;
}

/* struct locks_value -> { contentions, delay ns[, hold ns] } */
static void locks_to_values(const struct profiler *p, const uint64_t *raw, uint64_t *values)
{
	const struct locks_value *v = (const void *)raw;

	values[0] = v->contentions;
	values[1] = v->wait_ns;
	values[2] = v->hold_ns;	/* a third value only with --lock-hold (locks_nvalues) */
}

/* Hold time is a sample type only when measured: a column of zeros would read as "no hold". */
static int locks_nvalues(const struct profiler *p)
{
	const struct locks_config *cfg = profiler_config(&p->opts, p->ops);

	return cfg->hold_user || cfg->hold_kernel ? 3 : 2;
}

static const char *lock_kind(uint32_t flags)
{
	if (flags & LOCK_F_USER_MUTEX)
		return "pthread_mutex";
	if (flags & LOCK_F_USER_PI)
		return "pthread_mutex_pi";
	if (flags & LOCK_F_USER_WAIT)
		return "futex_wait";
	if (flags & LOCK_F_RT)
		return "rt_mutex";
	if (flags & LOCK_F_PERCPU)
		return flags & LOCK_F_WRITE ? "percpu_rwsem(w)" : "percpu_rwsem(r)";
	if (flags & LOCK_F_MUTEX)
		return "mutex";
	if (flags & LOCK_F_SPIN)
		return flags & LOCK_F_READ ? "rwlock(r)" : flags & LOCK_F_WRITE ? "rwlock(w)" : "spinlock";
	return flags & LOCK_F_READ ? "rwsem(r)" : flags & LOCK_F_WRITE ? "rwsem(w)" : "lock";
}

/* Kernel frames that are the lock (or the scheduler) itself, not the code that wants it. */
static bool in_lock_code(const char *fn)
{
	static const char *const prefixes[] = {
		"_raw_", "__raw_", "raw_", "do_raw_", "queued_", "native_queued", "__pv_queued",
		"pv_", "mutex_", "__mutex", "rwsem_", "__rwsem", "down_", "__down", "up_",
		"osq_", "rt_mutex", "__rt_mutex", "rwbase_", "percpu_down", "percpu_up", "lock_",
		"__lock", "schedule", "__schedule", "preempt_schedule", "io_schedule", "rt_spin",
	};

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (strncmp(fn, prefixes[i], strlen(prefixes[i])) == 0)
			return true;
	return false;
}

/* The first kernel frame outside the lock code: who contends. */
static const char *kernel_caller(const struct profile_sample *s)
{
	for (uint32_t i = 0; i < s->nkernel; i++) {
		const char *fn = s->frames[i].sym.function;

		if (s->frames[i].kernel && fn && !in_lock_code(fn))
			return fn;
	}
	return NULL;
}

/* "big_lock:pthread_mutex" -> "big_lock" in @out */
static void name_part(const char *known, char *out, size_t len)
{
	const char *kind = strrchr(known, ':');

	snprintf(out, len, "%.*s", kind ? (int)(kind - known) : (int)strlen(known), known);
}

/*
 * "NAME:KIND", no spaces (folded stacks would mangle them): the kind per sample (a rwsem is taken for reading here and
 * for writing there), the name once per lock.
 */
static char *locks_object_name(const struct profile *p, const struct profile_sample *s,
			       const uint64_t *raw, const char *known)
{
	const struct locks_value *v = (const void *)raw;
	const char *kind = lock_kind(v->flags);
	char sym[128], *name = NULL;
	const char *caller;
	int n, cpu;

	if (known) {
		name_part(known, sym, sizeof(sym));
		n = asprintf(&name, "%s:%s", sym, kind);
	} else if (v->flags & LOCK_F_MMAP)
		n = asprintf(&name, "mmap_lock:%s", kind);
	else if (v->flags & LOCK_F_SIGLOCK)
		n = asprintf(&name, "siglock:%s", kind);
	else if ((v->flags & (LOCK_F_USER_MUTEX | LOCK_F_USER_PI | LOCK_F_USER_WAIT)) &&
		 data_symbol_name(s->tgid, s->object, sym, sizeof(sym)) == 0)
		n = asprintf(&name, "%s:%s", sym, kind);
	else if ((v->flags & LOCK_F_SPIN) && (cpu = rq_lock_cpu(s->object)) >= 0)
		n = asprintf(&name, "rq_lock[cpu%d]:%s", cpu, kind);
	else if ((caller = kernel_caller(s)))
		n = asprintf(&name, "lock@%llx(%s):%s", (unsigned long long)s->object, caller, kind);
	else
		n = asprintf(&name, "lock@%llx:%s", (unsigned long long)s->object, kind);
	return n < 0 ? NULL : name;
}

static void locks_defaults(void *config)
{
	struct locks_config *cfg = config;

	cfg->kernel = cfg->user = 1;
}

static bool parse_min_wait(const char *arg, void *config)
{
	struct locks_config *cfg = config;

	return parse_us_as_ns("--lock-min-us", arg, 0, &cfg->min_wait_ns);
}

static bool parse_threshold(const char *arg, void *config)
{
	struct locks_config *cfg = config;

	return parse_us_as_ns("--lock-threshold-us", arg, 1, &cfg->raw_min_ns);
}

static bool parse_side(const char *arg, void *config)
{
	struct locks_config *cfg = config;

	cfg->kernel = strcmp(arg, "kernel") == 0 || strcmp(arg, "both") == 0;
	cfg->user = strcmp(arg, "user") == 0 || strcmp(arg, "both") == 0;
	if (cfg->kernel || cfg->user)
		return true;
	log_error("--lock-side: '%s' is not one of kernel, user, both", arg);
	return false;
}

static bool parse_hold(const char *arg, void *config)
{
	struct locks_config *cfg = config;

	cfg->hold_user = cfg->hold_kernel = 1;
	return true;
}

static const struct profiler_option locks_options[] = {
	{ "lock-min-us", 0, "N", "locks: ignore waits shorter than N us (default 0)", parse_min_wait },
	{ "lock-side", 0, "S", "locks: kernel (lock:contention_*), user (futex waits) or both (default)",
	  parse_side },
	{ "lock-threshold-us", 0, "US", "locks: lock waits over US us as Lock records (--events FILE)",
	  parse_threshold },
	{ "lock-hold", 0, NULL, "locks: also time how long contended locks are held (a uprobe on "
	  "pthread_mutex_unlock: ~1 us per unlock)", parse_hold },
	{ NULL },
};

/* --lock-threshold-us: one wait; one stack, leaf first: the kernel's frames (kernel locks), then the user's. */
static bool locks_raw_event(struct profiler *p, const struct aperture_raw_event *ev, size_t size,
			    struct raw_frames *f, struct profile_event *e)
{
	int at = raw_frames_add(f, p, ev->hdr.tgid, ev->kernel_stack_id, true);

	(void)size;	/* the common struct, which the ring buffer's reader checked */
	raw_frames_add(f, p, ev->hdr.tgid, ev->user_stack_id, false);
	e->kind = PE_LOCK;
	e->lock.lock_addr = ev->object;
	e->lock.hold_time_ns = ev->hold_ns;	/* --lock-hold; else 0: not measured */
	e->lock.wait_time_ns = ev->duration_ns;
	e->lock.stack_trace = raw_frames_ips(f, at);
	e->lock.stack_symbols = raw_frames_names(f, at);
	e->lock.comm = f->comm;
	return true;
}

const struct profiler_ops profiler_locks = {
	.name = "locks",
	.id = PROFILER_LOCKS,
	.cli.title = "Lock contention",
	.cli.help = "lock contention: kernel locks and user mutexes (futex waits), wait time per lock",
	.cli.opt_in = true,		/* the futex side runs on every context switch */
	.cli.options = locks_options,
	.config.size = sizeof(struct locks_config),
	.config.defaults = locks_defaults,
	.config.keep_fixed = locks_keep_fixed,
	.schema.nraw = sizeof(struct locks_value) / sizeof(uint64_t),
	.schema.folded_raw = 1,
	.needs = FEAT_BIT(FEAT_BTF) | FEAT_BIT(FEAT_TASK_STORAGE) | FEAT_BIT(FEAT_TP_SCHED_EXEC) |
		 FEAT_BIT(FEAT_RINGBUF) | FEAT_BIT(FEAT_TP_CONTENTION) | FEAT_BIT(FEAT_TP_SCHED_SWITCH),
	.schema.nvalues = 3,
	.schema.nvalues_of = locks_nvalues,
	.schema.value_types = { { "contentions", "count" }, { "delay", "nanoseconds" }, { "hold", "nanoseconds" } },
	.schema.default_value = 1,
	.schema.period_type = { "contentions", "count" },
	.schema.to_values = locks_to_values,
	.schema.object_name = locks_object_name,
	.raw_type = EVENT_LOCK,
	.raw_event = locks_raw_event,
	.open = locks_open,
	.attach = locks_attach,
	.close = locks_close,
};
