// SPDX-License-Identifier: GPL-2.0
/* The profiler lifecycle and the snapshot protocol every profiler shares. */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "procmaps.h"
#include "profiler.h"
#include "python_tables.h"
#include "run.h"
#include "util.h"

const struct profiler_ops *const profilers[] = {
	&profiler_oncpu,
	&profiler_offcpu,
	&profiler_locks,
	&profiler_syscalls,
	&profiler_gpu,
	NULL,
};

#define STAT_NAME(id, what) [id] = what,
const char *const stat_names[STAT_MAX] = { APERTURE_STATS(STAT_NAME, STAT_NAME) };

uint64_t profiler_lost(const uint64_t *stats)
{
#define STAT_NOT_LOST(id, what)
#define STAT_LOST(id, what) + stats[id]
	return 0 APERTURE_STATS(STAT_NOT_LOST, STAT_LOST);
}

const struct map_slot_desc map_slots[MAP_SLOT_MAX] = {
	[MAP_CONTROL] = { "control", "control", true },
	[MAP_TARGET_PIDS] = { "target_pids", "target_pids", true },
	[MAP_SEEN_TGIDS] = { "seen_tgids", "seen_tgids", true },
	[MAP_EVENTS] = { "events", "events", true },
	[MAP_UNWIND_ROWS] = { "unwind_rows", "unwind_rows", true },
	[MAP_UNWIND_PROCS] = { "unwind_procs", "unwind_procs", true },
	[MAP_UNWIND_FILES] = { "unwind_files", "files", true },
	[MAP_PYTHON_PROCS] = { "python_procs", "python_procs", true },
	[MAP_PYTHON_CODES] = { "python_codes", "python_codes", true },
	[MAP_CONFIG] = { "kind_config", "config", false },
	[MAP_STACKS] = { "stacks", "stacks", false },
	[MAP_STATS] = { "stats", "stats", false },
	[MAP_TOTALS] = { "totals", "totals", false },
	[MAP_COUNTS_0] = { "counts_0", "counts_0", false },
	[MAP_COUNTS_1] = { "counts_1", "counts_1", false },
	[MAP_ACTIVE] = { "active_counts", "active", false },
};

#ifndef ENOTSUPP
#define ENOTSUPP 524	/* the kernel's internal "not supported", leaks to user space */
#endif

/* Records drained per batch syscall. */
#define DRAIN_BATCH 1024

const struct profiler_ops *profiler_find(const char *name)
{
	for (int i = 0; profilers[i]; i++)
		if (strcmp(profilers[i]->name, name) == 0)
			return profilers[i];
	return NULL;
}

/* Whether @opts walk user stacks: unwind_resolve's question (the dwarf_unwind probe). */
static bool walks_user_stacks(const struct profiler_opts *opts)
{
	return opts->stack_mode != STACK_MODE_KERNEL;
}

/*
 * Whether @opts have a target set whose children could be followed (named
 * processes, a set filled later, or totals kept for a pinned set):
 * children_followed's question (the tp_sched_process_fork probe).
 */
static bool may_follow_children(const struct profiler_opts *opts)
{
	return opts->npids || opts->targets_only || opts->keep_totals;
}

/*
 * --unwind auto: DWARF where the kernel can walk it (one line when it
 * cannot, once per run); dwarf: an error instead.  Kernel-only stacks need none.
 */
static int unwind_resolve(struct profiler *p)
{
	static bool told;
	char why[128];

	p->dwarf = p->fp_in_bpf = p->python = false;
	if (!walks_user_stacks(&p->opts))
		return 0;
	/* Frame-pointer walks in BPF too where it can (cheaper than bpf_get_stack's). */
	p->fp_in_bpf = feature_has(FEAT_DWARF_UNWIND);
	if (p->opts.unwind == UNWIND_FP)
		return 0;
	if (feature_has(FEAT_DWARF_UNWIND)) {
		p->dwarf = true;
		p->python = !p->opts.python_off;	/* CPython's frames are found from the native walk */
		return 0;
	}
	if (p->opts.unwind == UNWIND_DWARF) {
		log_error("--unwind dwarf: this kernel lacks %s",
			  feature_missing(FEAT_DWARF_UNWIND, why, sizeof(why)));
		return -EOPNOTSUPP;
	}
	if (!told)
		log_warn("user stacks by frame pointers only: %s",
			 feature_missing(FEAT_DWARF_UNWIND, why, sizeof(why)));
	told = true;
	return 0;
}

/* The program probes unwind_resolve and children_followed may ask for these options. */
static uint64_t probes_asked_later(const struct profiler_opts *opts)
{
	uint64_t mask = FEAT_BIT(FEAT_HASH_ALLOC);

	if (walks_user_stacks(opts))
		mask |= FEAT_BIT(FEAT_DWARF_UNWIND);
	if (may_follow_children(opts))
		mask |= FEAT_BIT(FEAT_TP_SCHED_FORK);
	return mask;
}

/*
 * A hash map that allocates at insert takes its elements from a per-CPU cache
 * that the kernel refills from irq_work, and at creation that cache holds one
 * element of the stacks' size (kernel/bpf/memalloc.c, prefill_mem_cache): the
 * first program run on a CPU that stores a user and a kernel stack would lose
 * the second (-ENOMEM, "stack allocation failed").  One insert and delete from
 * each CPU the loader may run on makes the kernel refill each cache first (a
 * CPU outside the loader's affinity keeps that one loss, counted).  The key is
 * APERTURE_STACK_LOST, which no program stores.
 */
static void stacks_prime(struct profiler *p)
{
	static struct aperture_stack empty;
	__u64 key = APERTURE_STACK_LOST;
	cpu_set_t allowed, one;

	if (!feature_has(FEAT_HASH_ALLOC) || sched_getaffinity(0, sizeof(allowed), &allowed))
		return;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &allowed))
			continue;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		if (sched_setaffinity(0, sizeof(one), &one))
			continue;
		if (bpf_map_update_elem(p->fd[MAP_STACKS], &key, &empty, BPF_NOEXIST) == 0)
			bpf_map_delete_elem(p->fd[MAP_STACKS], &key);
	}
	sched_setaffinity(0, sizeof(allowed), &allowed);
}

uint64_t profiler_needs(const struct profiler_ops *ops, bool *compat)
{
	uint64_t modern = ops->needs | FEAT_BIT(FEAT_BPF_LOOP);

	*compat = false;
	for (int f = 0; f < FEAT_MAX; f++) {
		if ((modern & FEAT_BIT(f)) && !feature_has(f)) {
			*compat = ops->compat_needs != 0;
			break;
		}
	}
	return *compat ? ops->compat_needs : modern;
}

int profiler_open(struct profiler **out, struct run *run, const struct profiler_ops *ops,
		  const struct profiler_opts *opts)
{
	struct profiler *p = calloc_logged(1, sizeof(*p));
	int err;

	*out = NULL;
	if (!p)
		return -ENOMEM;
	heap_keep_begin();	/* the probes' load and the profiler's each parse the kernel's BTF */
	feature_has(FEAT_OPENAT2);	/* how the symbolizer opens the targets' files: probed before any */
	p->ops = ops;
	p->run = run;
	p->opts = *opts;
	if (!p->opts.counts_entries)
		p->opts.counts_entries = PROFILER_COUNTS_DEFAULT;
	if (!p->opts.stacks_entries)
		p->opts.stacks_entries = PROFILER_STACKS_DEFAULT;
	for (int i = 0; i < MAP_SLOT_MAX; i++)
		p->fd[i] = -1;
	/*
	 * Each program probe asked alone is a load of the probe object (and a parse of the
	 * kernel's BTF, ~10 ms): the ones unwind_resolve and children_followed ask later go
	 * in one load with the profiler's needs.
	 */
	features_probe(ops->needs | ops->compat_needs | FEAT_BIT(FEAT_BPF_LOOP) | probes_asked_later(&p->opts));
	if (!features_require(ops->name, profiler_needs(ops, &p->compat))) {
		err = -EOPNOTSUPP;
		goto cleanup;
	}
	err = unwind_resolve(p);
	if (err)
		goto cleanup;
	err = ops->open(p, &p->opts);
	if (!err && fault_inject("load"))
		err = -EIO;
	if (err) {
		log_error("%s: cannot load BPF programs: %s%s", ops->name, strerror(-err),
			  log_verbose ? "" : " (-v shows the verifier's log)");
		goto cleanup;
	}
	if (p->compat) {
		char why[96];

		log_info("%s: the programs built for older kernels (%s)", ops->name,
			 feature_missing(FEAT_BPF_LOOP, why, sizeof(why)));
	}
	stacks_prime(p);
	err = profiler_configure(p);
	if (err)
		goto cleanup;
	heap_keep_end();
	*out = p;
	return 0;
cleanup:
	profiler_close(p);
	heap_keep_end();
	return err;
}

int profiler_attach(struct profiler *p)
{
	int err = p->ops->attach ? p->ops->attach(p) : profiler_attach_tracing(p);

	if (!err && fault_inject("attach"))
		err = -EIO;
	if (err)
		log_error("%s: cannot attach: %s%s", p->ops->name, strerror(-err),
			  log_verbose ? "" : " (-v shows why)");
	return err;
}

void profiler_close(struct profiler *p)
{
	if (!p)
		return;
	for (int i = 0; i < p->nlinks; i++) {
		/*
		 * A pinned link lives on in bpffs, but libbpf's detach of a
		 * perf_event link also disables the event (PERF_EVENT_IOC_DISABLE):
		 * disconnect first so that destroy only frees.  The event's own fd
		 * then stays open until the loader exits.
		 */
		if (p->links_pinned) {
			bpf_link__disconnect(p->links[i]);
			close(bpf_link__fd(p->links[i]));
		}
		bpf_link__destroy(p->links[i]);
	}
	free(p->links);
	stack_gc_free(p->gc);
	if (p->pinned) {
		for (int i = 0; i < MAP_SLOT_MAX; i++)
			if (p->fd[i] >= 0)
				close(p->fd[i]);
	} else if (p->ops->close) {
		p->ops->close(p);
	}
	free(p);
}

int profiler_add_link(struct profiler *p, struct bpf_link *link)
{
	struct bpf_link **grown;

	if (!link)
		return -errno;
	grown = realloc(p->links, (p->nlinks + 1) * sizeof(*grown));
	if (!grown) {
		bpf_link__destroy(link);
		return -ENOMEM;
	}
	p->links = grown;
	p->links[p->nlinks++] = link;
	return 0;
}

static struct bpf_map *slot_map(struct profiler *p, enum map_slot slot)
{
	return bpf_object__find_map_by_name(p->obj, map_slots[slot].map);
}

/*
 * The unwinding tables: sized when DWARF unwinding is on, one entry each when
 * off.  unwind_rows is mmapable (5.5+: every kernel with the DWARF walk's
 * bpf_loop) so that the unwinder stores its rows (unwinder.c: rows_write).
 * APERTURE_TEST_ROWS_NOT_MMAPABLE=1 (tests only) creates it as builds before
 * did, so that the unwinder's fallback runs as on their pinned maps.
 */
static int unwind_maps_prepare(struct profiler *p)
{
	int err = 0;

	if (p->python) {
		err = bpf_map__set_max_entries(slot_map(p, MAP_PYTHON_PROCS), UNWIND_PROCS_DEFAULT);
		err = err ?: bpf_map__set_max_entries(slot_map(p, MAP_PYTHON_CODES),
						      p->opts.python_codes ?: PYTHON_CODES_DEFAULT);
	}
	if (p->dwarf) {
		err = err ?: bpf_map__set_max_entries(slot_map(p, MAP_UNWIND_ROWS),
						      p->opts.unwind_rows ?: UNWIND_ROWS_DEFAULT);
		if (!getenv("APERTURE_TEST_ROWS_NOT_MMAPABLE"))
			err = err ?: bpf_map__set_map_flags(slot_map(p, MAP_UNWIND_ROWS), BPF_F_MMAPABLE);
		err = err ?: bpf_map__set_max_entries(slot_map(p, MAP_UNWIND_PROCS), UNWIND_PROCS_DEFAULT);
		err = err ?: bpf_map__set_max_entries(slot_map(p, MAP_UNWIND_FILES), UNWIND_FILES_DEFAULT);
	}
	return err;
}

/*
 * APERTURE_TEST_EVENTS_RING_BYTES=N (tests only): the events ring buffer's
 * size (a power of 2 of pages), so that a test can fill it and watch what a
 * failed new-process notification costs.  The raw events' headroom stays
 * reckoned from APERTURE_EVENTS_RING_BYTES: a smaller ring has none.
 */
/*
 * APERTURE_TEST_EVENTS_HOLD=PATH (tests only): while PATH exists nobody reads
 * the events ring, the flip's read included, so that a test can keep it full.
 */
bool events_held(void)
{
	const char *hold = getenv("APERTURE_TEST_EVENTS_HOLD");

	return hold && access(hold, F_OK) == 0;
}

static int events_ring_prepare(struct profiler *p)
{
	const char *env = getenv("APERTURE_TEST_EVENTS_RING_BYTES");
	unsigned long bytes;

	if (!env)
		return 0;
	bytes = strtoul(env, NULL, 10);
	log_warn("test setting: events ring buffer of %lu bytes", bytes);
	return bpf_map__set_max_entries(slot_map(p, MAP_EVENTS), (__u32)bytes);
}

/*
 * The fork program (bpf/lib/control.bpf.h target_fork) is the run's one: the
 * profiler that creates the shared maps loads it where targets may be named
 * (a pid filter, or a set kept for a later takeover or reload to target),
 * and control.follow_children turns it on or off live (--no-children).  A
 * kernel without it: one line, the pids only.
 */
static bool children_followed(const struct profiler *p, bool owner)
{
	static bool told;
	char why[128];

	if (!owner || !may_follow_children(&p->opts))
		return false;
	if (p->opts.no_children && !p->opts.keep_totals)
		return false;
	if (feature_has(FEAT_TP_SCHED_FORK))
		return true;
	if (!told)
		log_warn("children not followed: %s", feature_missing(FEAT_TP_SCHED_FORK, why, sizeof(why)));
	told = true;
	return false;
}

/*
 * Where the kernel lets a perf_event program insert into a hash map that
 * allocates at insert (6.1+), a kind's stacks and counts maps take memory as
 * they fill: preallocated, they cost 30-45 ms of the kernel's time and 23-38
 * MiB per kind at every start, however few stacks the run sees.  The inner map's
 * template of active_counts must carry the counts maps' flags, or the flip's
 * swap is refused.  Totals are counted only for a daemon (keep_totals).
 */
static int counts_maps_prepare(struct profiler *p)
{
	static const enum map_slot grown[] = { MAP_STACKS, MAP_COUNTS_0, MAP_COUNTS_1, MAP_TOTALS };
	struct bpf_map *inner = bpf_map__inner_map(slot_map(p, MAP_ACTIVE));
	int err = 0;

	err = err ?: bpf_map__set_max_entries(slot_map(p, MAP_COUNTS_0), p->opts.counts_entries);
	err = err ?: bpf_map__set_max_entries(slot_map(p, MAP_COUNTS_1), p->opts.counts_entries);
	err = err ?: bpf_map__set_max_entries(slot_map(p, MAP_TOTALS),
					      p->opts.keep_totals ? p->opts.counts_entries : 1);
	err = err ?: bpf_map__set_max_entries(slot_map(p, MAP_STACKS), p->opts.stacks_entries);
	if (err || !feature_has(FEAT_HASH_ALLOC))
		return err;
	if (!inner)
		return -ENOENT;
	for (size_t i = 0; i < sizeof(grown) / sizeof(grown[0]) && !err; i++) {
		struct bpf_map *map = slot_map(p, grown[i]);

		err = bpf_map__set_map_flags(map, bpf_map__map_flags(map) | BPF_F_NO_PREALLOC);
	}
	return err ?: bpf_map__set_map_flags(inner, bpf_map__map_flags(inner) | BPF_F_NO_PREALLOC);
}

/*
 * Before load: sizes the maps, reuses the run's shared maps, and loads the
 * exec, exit and fork programs (bpf/lib/) and the tables' maps_replaced
 * (bpf/unwind/) only in the profiler that creates them.
 */
int profiler_prepare(struct profiler *p)
{
	struct run *run = p->run;
	struct bpf_program *exec_prog = bpf_object__find_program_by_name(p->obj, "process_exec");
	struct bpf_program *exit_prog = bpf_object__find_program_by_name(p->obj, "process_exit");
	struct bpf_program *fork_prog = bpf_object__find_program_by_name(p->obj, "target_fork");
	struct bpf_program *maps_prog = bpf_object__find_program_by_name(p->obj, "maps_replaced");
	bool owner = !run || run->fd[MAP_CONTROL] < 0;
	int err = 0;

	err = err ?: counts_maps_prepare(p);
	err = err ?: unwind_maps_prepare(p);
	if (owner)
		err = err ?: events_ring_prepare(p);
	if (exec_prog)
		bpf_program__set_autoload(exec_prog, owner);
	if (exit_prog)
		bpf_program__set_autoload(exit_prog, owner);
	if (maps_prog)	/* the run's tables: the first profiler's (bpf/unwind/dwarf.bpf.h) */
		bpf_program__set_autoload(maps_prog, owner && p->dwarf);
	p->follows_children = fork_prog && children_followed(p, owner);
	if (fork_prog)
		bpf_program__set_autoload(fork_prog, p->follows_children);
	for (int i = 0; i < MAP_SLOT_MAX && !err && !owner; i++)
		if (map_slots[i].shared)
			err = bpf_map__reuse_fd(slot_map(p, i), run->fd[i]);
	return err;
}

/* After load: takes every slot's fd, and the first profiler's shared maps become the run's. */
int profiler_take_maps(struct profiler *p)
{
	for (int i = 0; i < MAP_SLOT_MAX; i++) {
		struct bpf_map *map = slot_map(p, i);

		if (!map)
			return -ENOENT;	/* every object has every slot (bpf/lib/) */
		p->fd[i] = bpf_map__fd(map);
	}
	if (p->run)
		run_take_shared(p->run, p);
	p->live = 0;
	return 0;
}

int profiler_attach_tracing(struct profiler *p)
{
	struct bpf_program *prog;
	int err = 0;

	bpf_object__for_each_program(prog, p->obj) {
		if (!bpf_program__autoload(prog) || bpf_program__type(prog) != BPF_PROG_TYPE_TRACING)
			continue;
		err = profiler_add_link(p, bpf_program__attach(prog));
		if (err)
			break;
	}
	return err;
}

static int write_config(struct profiler *p)
{
	__u32 zero = 0;

	if (!p->ops->config.size)
		return 0;
	if (bpf_map_update_elem(p->fd[MAP_CONFIG], &zero, profiler_config(&p->opts, p->ops), BPF_ANY)) {
		log_error("%s: cannot write its config map: %s", p->ops->name, strerror(errno));
		return -errno;
	}
	return 0;
}

int profiler_configure(struct profiler *p)
{
	const struct profiler_opts *o = &p->opts;
	struct aperture_control ctl = {};
	__u32 zero = 0;

	for (int i = 0; i < o->npids; i++) {
		__u8 profilers = 0;

		/* Shared with other profilers: add this one's bit to theirs. */
		bpf_map_lookup_elem(p->fd[MAP_TARGET_PIDS], &o->pids[i], &profilers);
		profilers |= 1u << p->ops->id;
		if (bpf_map_update_elem(p->fd[MAP_TARGET_PIDS], &o->pids[i], &profilers, BPF_ANY)) {
			log_error("%s: cannot add pid %u to the target set: %s",
				  p->ops->name, o->pids[i], strerror(errno));
			return -errno;
		}
	}
	/* Shared with the other profilers of this run: keep their enable bits. */
	run_control_lock(p->run);
	if (bpf_map_lookup_elem(p->fd[MAP_CONTROL], &zero, &ctl)) {
		memset(&ctl, 0, sizeof(ctl));
	} else if (ctl.layout_version != APERTURE_LAYOUT_VERSION) {
		__u32 gen = ctl.cache_gen;	/* never back: an old value would make old notes valid again */

		memset(&ctl, 0, sizeof(ctl));
		ctl.cache_gen = gen;
	}
	ctl.layout_version = APERTURE_LAYOUT_VERSION;
	if (o->disabled)
		ctl.enabled &= ~(1u << p->ops->id);
	else
		ctl.enabled |= 1u << p->ops->id;
	ctl.filter_pids = o->npids > 0 || o->targets_only;
	ctl.stack_mode = o->stack_mode;
	ctl.cgroup_id = o->cgroup_id;
	ctl.keep_totals = o->keep_totals;
	ctl.raw_events = o->raw_events;
	ctl.follow_children = !o->no_children;
	ctl.cache_gen++;	/* after the target_pids writes: tasks redo their cached decision */
	if (bpf_map_update_elem(p->fd[MAP_CONTROL], &zero, &ctl, BPF_ANY)) {
		int err = -errno;

		run_control_unlock(p->run);
		log_error("%s: cannot write the control map: %s", p->ops->name, strerror(-err));
		return err;
	}
	run_control_unlock(p->run);
	return write_config(p);
}

/*
 * A child the kernel followed (TARGET_CHILD) stays in the set while it
 * descends from one of @pids: its ancestry in /proc (an orphan adopted by
 * init since is dropped; it leaves at its exit anyway).
 */
static bool child_kept(uint32_t tgid, const uint32_t *pids, int npids)
{
	uint32_t pid = tgid;

	for (int depth = 0; depth < 64 && pid > 1; depth++) {
		pid = proc_parent(pid);
		if (pid_in(pids, npids, pid))
			return true;
	}
	return false;
}

int profiler_set_pids(struct profiler *p, const uint32_t *pids, int npids)
{
	uint32_t *stale = calloc_logged(APERTURE_TARGETS_MAX, sizeof(*stale)), key, *prev = NULL;
	__u8 mine = 1u << p->ops->id, profilers;
	int nstale = 0;

	if (!stale)
		return -ENOMEM;
	/* Collect first: deleting the current key makes get_next_key start over. */
	while (nstale < APERTURE_TARGETS_MAX && bpf_map_get_next_key(p->fd[MAP_TARGET_PIDS], prev, &key) == 0) {
		prev = &key;
		if (pid_in(pids, npids, key))
			continue;
		if (bpf_map_lookup_elem(p->fd[MAP_TARGET_PIDS], &key, &profilers) == 0 &&
		    (profilers & TARGET_CHILD) && child_kept(key, pids, npids))
			continue;
		stale[nstale++] = key;
	}
	/* Drop this profiler's bit; the entry goes when no profiler wants it. */
	for (int i = 0; i < nstale; i++) {
		if (bpf_map_lookup_elem(p->fd[MAP_TARGET_PIDS], &stale[i], &profilers) || !(profilers & mine))
			continue;
		profilers &= ~mine;
		if (profilers & ~TARGET_CHILD)
			bpf_map_update_elem(p->fd[MAP_TARGET_PIDS], &stale[i], &profilers, BPF_EXIST);
		else
			bpf_map_delete_elem(p->fd[MAP_TARGET_PIDS], &stale[i]);
	}
	free(stale);
	p->opts.pids = pids;
	p->opts.npids = npids;
	return profiler_configure(p);
}

/*
 * Fallback for kernels without batch ops: nothing writes the map now, so a
 * plain walk is safe.  @keep: read only (profiler_clear_generation empties it).
 */
static int drain_by_walk(struct profiler *p, int fd, bool keep, record_fn fn, void *ctx)
{
	struct sample_key key, next;
	uint64_t *values = calloc_logged(p->ops->schema.nraw, sizeof(*values));
	struct raw_record rec = { .key = &next, .values = values };
	void *prev = NULL;
	int err = values ? 0 : -ENOMEM;

	while (values && bpf_map_get_next_key(fd, prev, &next) == 0) {
		if (prev && !keep)
			bpf_map_delete_elem(fd, prev);
		if (bpf_map_lookup_elem(fd, &next, values) == 0 && !err) {
			p->drained_events += values[0];
			if (p->gc)
				stack_gc_note(p->gc, &next);
			err = fn(p, &rec, ctx);
		}
		key = next;
		prev = &key;
	}
	if (prev && !keep)
		bpf_map_delete_elem(fd, prev);
	free(values);
	return err;
}

static int drain(struct profiler *p, int fd, bool keep, record_fn fn, void *ctx)
{
	size_t value_size = p->ops->schema.nraw * sizeof(uint64_t);
	struct sample_key *keys = calloc_logged(DRAIN_BATCH, sizeof(*keys));
	uint64_t *values = calloc_logged(DRAIN_BATCH, value_size);
	struct sample_key batch_pos;
	void *in_batch = NULL;
	bool done = false;
	int err = 0;

	if (!keys || !values) {
		err = -ENOMEM;
		goto cleanup;
	}
	if (!feature_has(FEAT_BATCH_OPS)) {
		err = drain_by_walk(p, fd, keep, fn, ctx);
		goto cleanup;
	}
	while (!done && !err) {
		__u32 count = DRAIN_BATCH;
		int ret = keep ? bpf_map_lookup_batch(fd, in_batch, &batch_pos, keys, values, &count, NULL)
			       : bpf_map_lookup_and_delete_batch(fd, in_batch, &batch_pos, keys, values,
								 &count, NULL);

		if (ret && errno == ENOENT) {
			done = true;	/* last batch; count may still be > 0 */
		} else if (ret && (errno == EINVAL || errno == ENOTSUP || errno == ENOTSUPP)) {
			err = drain_by_walk(p, fd, keep, fn, ctx);
			goto cleanup;
		} else if (ret) {
			err = -errno;
			log_error("%s: draining counts: %s", p->ops->name, strerror(errno));
			goto cleanup;
		}
		for (__u32 i = 0; i < count && !err; i++) {
			struct raw_record rec = {
				.key = &keys[i],
				.values = values + i * p->ops->schema.nraw,
			};

			p->drained_events += rec.values[0];
			if (p->gc)
				stack_gc_note(p->gc, rec.key);
			err = fn(p, &rec, ctx);
		}
		in_batch = &batch_pos;
	}
cleanup:
	free(keys);
	free(values);
	return err;
}

/* The reader of the run's new-process notifications, or NULL. */
static struct ring_buffer *announcements(const struct profiler *p)
{
	return p->run ? p->run->events : NULL;
}

int profiler_flip(struct profiler *p)
{
	int idle = p->live, next = !p->live;
	struct ring_buffer *rb;
	__u32 zero = 0;

	/* Returns after synchronize_rcu(): no program still writes the idle map. */
	if (bpf_map_update_elem(p->fd[MAP_ACTIVE], &zero, &p->fd[MAP_COUNTS_0 + next], BPF_ANY)) {
		log_error("%s: cannot flip generation: %s", p->ops->name, strerror(errno));
		return -errno;
	}
	p->live = next;
	/*
	 * A program announces a process before it counts its first event: after
	 * the flip, every process counted in the idle generation is in the ring
	 * buffer.  Read them now, so that the drain names them with their own maps
	 * (a pid reused since would otherwise still have its old process's).
	 */
	rb = announcements(p);
	if (rb && !events_held())
		ring_buffer__consume(rb);
	if (p->opts.gc_stacks && !p->gc)
		p->gc = stack_gc_new();	/* NULL: no collection, said by calloc_logged */
	if (p->gc)
		stack_gc_flipped(p->gc);
	return idle;
}

int profiler_snapshot(struct profiler *p, record_fn fn, void *ctx)
{
	int idle = profiler_flip(p);

	if (idle < 0)
		return idle;
	return drain(p, p->fd[MAP_COUNTS_0 + idle], false, fn, ctx);
}

uint32_t profiler_generation_id(const struct profiler *p, int gen)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(p->fd[MAP_COUNTS_0 + gen], &info, &len))
		return 0;
	return info.id;
}

int profiler_clear_generation(struct profiler *p, int gen)
{
	int fd = p->fd[MAP_COUNTS_0 + gen];
	struct sample_key key;

	/* Idle: nothing adds keys, so deleting the first key until none is left ends. */
	while (bpf_map_get_next_key(fd, NULL, &key) == 0)
		if (bpf_map_delete_elem(fd, &key) && errno != ENOENT)
			return -errno;
	return 0;
}

int profiler_stack(struct profiler *p, uint64_t stack_id, uint64_t *ips, uint32_t max)
{
	const struct aperture_stack *deleted;
	struct aperture_stack st;
	uint32_t depth;

	if (!stack_id || stack_id == APERTURE_STACK_LOST)
		return 0;
	if (bpf_map_lookup_elem(p->fd[MAP_STACKS], &stack_id, &st)) {
		int err = -errno;

		/* Counted by a program that found it just before the collector deleted it. */
		deleted = p->gc ? stack_gc_tombstone(p->gc, stack_id) : NULL;
		if (!deleted)
			return err;
		memcpy(&st, deleted, sizeof(uint64_t) + deleted->depth * sizeof(st.ips[0]));
	}
	depth = st.depth < max ? st.depth : max;
	memcpy(ips, st.ips, depth * sizeof(*ips));
	return depth;
}

int profiler_collect_stacks(struct profiler *p)
{
	int err;

	if (!p->gc)
		return 0;
	err = stack_gc_pass(p->gc, p->fd[MAP_STACKS], p->fd[MAP_TOTALS]);
	if (err && !p->gc_failed)
		log_warn("%s: cannot collect unused stacks: %s (said once)", p->ops->name, strerror(-err));
	p->gc_failed |= err != 0;
	return err;
}

void profiler_gc_stats(const struct profiler *p, struct stack_gc_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (p->gc)
		stack_gc_stats(p->gc, out);
}

uint32_t map_max_entries(int fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	return fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len) ? 0 : info.max_entries;
}

bool map_use(int fd, uint64_t *used, uint64_t *cap)
{
	struct bpf_map_info info = {};
	__u32 info_len = sizeof(info);
	void *key, *next;
	bool first = true;

	*used = 0;
	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &info_len))
		return false;
	*cap = info.max_entries;
	key = calloc(2, info.key_size ? info.key_size : 1);
	if (!key)
		return false;
	next = (char *)key + info.key_size;
	while (bpf_map_get_next_key(fd, first ? NULL : key, next) == 0 && *used < *cap + 1) {
		memcpy(key, next, info.key_size);
		first = false;
		(*used)++;
	}
	free(key);
	return true;
}

int profiler_stats(struct profiler *p, uint64_t *out)
{
	int ncpus = libbpf_num_possible_cpus();
	uint64_t *percpu;

	if (ncpus <= 0)
		return -EINVAL;
	percpu = calloc_logged(ncpus, sizeof(*percpu));
	if (!percpu)
		return -ENOMEM;
	for (__u32 i = 0; i < STAT_MAX; i++) {
		out[i] = 0;
		if (bpf_map_lookup_elem(p->fd[MAP_STATS], &i, percpu))
			continue;
		for (int c = 0; c < ncpus; c++)
			out[i] += percpu[c];
	}
	free(percpu);
	return 0;
}

struct into_ctx {
	struct profile *prof;
	uint64_t lost_stacks;
};

/*
 * A drained record into ctx->prof.  A key the profile has already (the same
 * process, thread and stack ids: most of each drain in steady state) only
 * adds its values: its stacks are not read again, which cost two
 * bpf(MAP_LOOKUP_ELEM) calls a record, most of the loader's CPU in steady
 * state (a record -F 99 of a CPython process: ~0.9 ms a second).
 */
static int add_record(struct profiler *p, const struct raw_record *rec, void *arg)
{
	struct into_ctx *ctx = arg;
	const struct sample_key *k = rec->key;
	uint64_t user_ips[APERTURE_MAX_DEPTH], kernel_ips[APERTURE_MAX_DEPTH];
	uint64_t values[PROFILE_MAX_VALUES] = {0};
	struct profile_record r = {
		.tgid = k->tgid, .pid = k->pid, .comm = k->comm,
		.user_stack_id = k->user_stack_id, .user_ips = user_ips,
		.kernel_stack_id = k->kernel_stack_id, .kernel_ips = kernel_ips,
		.object = k->object, .raw = rec->values, .values = values,
	};
	int nuser, nkernel;

	p->ops->schema.to_values(p, rec->values, values);
	if (p->ops->on_record)
		p->ops->on_record(p, rec);
	if (profile_add_known(ctx->prof, &r))
		return 0;
	nuser = profiler_stack(p, k->user_stack_id, user_ips, APERTURE_MAX_DEPTH);
	nkernel = profiler_stack(p, k->kernel_stack_id, kernel_ips, APERTURE_MAX_DEPTH);
	/* A counted stack whose frames vanished: keep the counts, without frames. */
	if (nuser < 0 || nkernel < 0)
		ctx->lost_stacks++;
	if (nuser < 0)
		r.user_stack_id = APERTURE_STACK_LOST;
	if (nkernel < 0)
		r.kernel_stack_id = APERTURE_STACK_LOST;
	r.nuser = nuser > 0 ? nuser : 0;
	r.nkernel = nkernel > 0 ? nkernel : 0;
	return profile_add(ctx->prof, &r);
}

static void log_lost_stacks(const struct profiler *p, const struct into_ctx *ctx)
{
	if (ctx->lost_stacks)
		log_warn("%s: %lu records lost their stack", p->ops->name,
			 (unsigned long)ctx->lost_stacks);
}

int profiler_read_generation_into(struct profiler *p, int gen, struct profile *prof)
{
	struct into_ctx ctx = { .prof = prof };
	int err = drain(p, p->fd[MAP_COUNTS_0 + gen], true, add_record, &ctx);

	log_lost_stacks(p, &ctx);
	return err;
}

int profiler_snapshot_into(struct profiler *p, struct profile *prof)
{
	struct into_ctx ctx = { .prof = prof };
	int err = profiler_snapshot(p, add_record, &ctx);

	log_lost_stacks(p, &ctx);
	return err;
}

void profiler_profile_init(const struct profiler *p, struct profile *prof, struct symbolizer *sym)
{
	const struct profiler_ops *ops = p->ops;

	profile_init(prof, ops->name, ops->cli.title, sym);
	prof->skywalking_target = ops->skywalking_target;
	prof->object_name = ops->schema.object_name;
	prof->object_ctx = p;
	prof->nvalues = ops->schema.nvalues_of ? ops->schema.nvalues_of(p) : ops->schema.nvalues;
	memcpy(prof->value_types, ops->schema.value_types, sizeof(prof->value_types));
	prof->default_value = ops->schema.default_value;
	prof->top_by_user_leaf = ops->schema.top_by_user_leaf;
	prof->period_type = ops->schema.period_type;
	prof->period = ops->schema.period ? ops->schema.period(p) : 1;
}
