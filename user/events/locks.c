// SPDX-License-Identifier: GPL-2.0
/*
 * Lock contention profiler: owns the locks skeleton (bpf/events/locks.bpf.c).
 * Samples are weighed in contentions and delay, as Go's mutex profiles are,
 * and the lock is the leaf frame: its name where the kernel or the ELF file
 * tells, else its address and the code that contends for it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "cli.h"
#include "datasym.h"
#include "locks.h"
#include "locks.skel.h"
#include "profiler.h"
#include "util.h"

_Static_assert(sizeof(struct locks_config) <= PROFILER_CONFIG_MAX, "locks_config too big");

static int locks_open(struct profiler *p, const struct profiler_opts *o)
{
	const struct locks_config *cfg = profiler_config(o, p->ops);
	int err = PROFILER_OPEN_SKEL_PREPARED(p, locks, ({
		/* A side switched off is not even loaded. */
		bpf_program__set_autoload(__skel->progs.lock_begin, cfg->kernel);
		bpf_program__set_autoload(__skel->progs.lock_end, cfg->kernel);
		bpf_program__set_autoload(__skel->progs.futex_begin, cfg->user);
		bpf_program__set_autoload(__skel->progs.futex_end, cfg->user);
	}));

	return err;
}

static void locks_close(struct profiler *p)
{
	locks_bpf__destroy(p->skel);
}

/* { contentions, wait ns, max, flags | interrupted } -> { contentions, delay ns } */
static void locks_to_values(const struct profiler *p, const uint64_t *raw, uint64_t *values)
{
	values[0] = raw[0];
	values[1] = raw[1];
}

static const char *lock_kind(uint32_t flags)
{
	if (flags & LOCK_F_USER_MUTEX)
		return "pthread_mutex";
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
	int n;

	if (known) {
		name_part(known, sym, sizeof(sym));
		n = asprintf(&name, "%s:%s", sym, kind);
	} else if (v->flags & LOCK_F_MMAP)
		n = asprintf(&name, "mmap_lock:%s", kind);
	else if (v->flags & LOCK_F_SIGLOCK)
		n = asprintf(&name, "siglock:%s", kind);
	else if ((v->flags & (LOCK_F_USER_MUTEX | LOCK_F_USER_WAIT)) &&
		 data_symbol_name(s->tgid, s->object, sym, sizeof(sym)) == 0)
		n = asprintf(&name, "%s:%s", sym, kind);
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

	return cli_parse_us_as_ns("--lock-min-us", arg, 0, &cfg->min_wait_ns);
}

static bool parse_threshold(const char *arg, void *config)
{
	struct locks_config *cfg = config;

	return cli_parse_us_as_ns("--lock-threshold-us", arg, 1, &cfg->raw_min_ns);
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

static const struct profiler_option locks_options[] = {
	{ "lock-min-us", 0, "N", "locks: ignore waits shorter than N us (default 0)", parse_min_wait },
	{ "lock-side", 0, "S", "locks: kernel (lock:contention_*), user (futex waits) or both (default)",
	  parse_side },
	{ "lock-threshold-us", 0, "US", "locks: lock waits over US us as Lock records (--events FILE)",
	  parse_threshold },
	{ NULL },
};

const struct profiler_ops profiler_locks = {
	.name = "locks",
	.id = PROFILER_LOCKS,
	.title = "Lock contention",
	.help = "lock contention: kernel locks and user mutexes (futex waits), wait time per lock",
	.opt_in = true,		/* the futex side runs on every syscall's entry and exit */
	.options = locks_options,
	.config_size = sizeof(struct locks_config),
	.config_defaults = locks_defaults,
	.nraw = 4,
	.folded_raw = 1,
	.needs = FEAT_BIT(FEAT_BTF) | FEAT_BIT(FEAT_TASK_STORAGE) | FEAT_BIT(FEAT_TP_SCHED_EXEC) |
		 FEAT_BIT(FEAT_RINGBUF) | FEAT_BIT(FEAT_TP_CONTENTION) | FEAT_BIT(FEAT_TP_SYS_ENTER) |
		 FEAT_BIT(FEAT_TP_SYS_EXIT),
	.nvalues = 2,
	.value_types = { { "contentions", "count" }, { "delay", "nanoseconds" } },
	.default_value = 1,
	.period_type = { "contentions", "count" },
	.to_values = locks_to_values,
	.object_name = locks_object_name,
	.open = locks_open,
	.close = locks_close,
};
