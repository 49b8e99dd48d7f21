/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every profiler implements this.  Adding one is adding bpf/X.bpf.c,
 * user/X.c with one `const struct profiler_ops profiler_X`, and a line in the
 * table in profiler.c.  Callers never touch a skeleton.
 */
#ifndef PROFILER_H
#define PROFILER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "aperture.h"
#include "profile.h"
#include "kernel_features.h"
#include "stackgc.h"
#include "symbolize.h"
#include "unwinder.h"

struct bpf_link;
struct bpf_object;

/*
 * The maps every profiler's object has under the same names (bpf/lib/), in
 * one list that open, reuse, takeover, pin and close all walk.
 */
enum map_slot {
	MAP_CONTROL,		/* shared by the profilers of a run */
	MAP_TARGET_PIDS,	/* shared */
	MAP_SEEN_TGIDS,		/* shared */
	MAP_EVENTS,		/* shared: the new-process ring buffer */
	MAP_UNWIND_ROWS,	/* shared: the DWARF unwinding tables (bpf/include/unwind_tables.h), */
	MAP_UNWIND_PROCS,	/* filled by the loader that watches processes (run_watch_events) */
	MAP_UNWIND_FILES,	/* shared: the files unwind_procs names, for the pinned iterator */
	MAP_PYTHON_PROCS,	/* shared: each CPython process's walk parameters (bpf/unwind/python.bpf.h) */
	MAP_PYTHON_CODES,	/* shared: code object generations, so a reused address is not misnamed */
	MAP_CONFIG,		/* this kind's settings */
	MAP_STACKS,
	MAP_STATS,
	MAP_TOTALS,
	MAP_COUNTS_0,
	MAP_COUNTS_1,
	MAP_ACTIVE,		/* pinned last: its presence says the set is complete */
	MAP_SLOT_MAX,
};

struct map_slot_desc {
	const char *map;	/* name in the BPF object */
	const char *pin;	/* pin name: shared ones as is, the others NAME_pin */
	bool shared;
};
extern const struct map_slot_desc map_slots[MAP_SLOT_MAX];

/* A kind's settings: its struct X_config, by ops->id in profiler_opts.config. */
#define PROFILER_CONFIG_MAX 128
/* Map sizes when profiler_opts leaves them 0. */
#define PROFILER_COUNTS_DEFAULT 16384
#define PROFILER_STACKS_DEFAULT 16384

struct profiler_opts {
	const uint32_t *pids;		/* target tgids, npids of them (0: all) */
	int npids;
	uint64_t cgroup_id;		/* 0: any */
	enum stack_mode stack_mode;
	uint32_t counts_entries;	/* aggregation map size (per generation) */
	uint32_t stacks_entries;	/* stacks map size */
	bool keep_totals;		/* also count into the never-drained totals map */
	bool targets_only;		/* filter by pid even with no pid: count nothing */
	bool no_children;		/* --no-children: the pids only, not what they start */
	bool disabled;			/* loaded and attached, but not counting */
	bool raw_events;		/* a reader takes raw events (control.raw_events) */
	bool gc_stacks;			/* the caller drains every interval: delete stacks no count
					 * refers to (profiler_collect_stacks); never with raw events,
					 * whose stack ids are read later */
	enum unwind_mode unwind;	/* --unwind */
	bool python_off;		/* --python off: no CPython frames in stacks */
	uint32_t unwind_rows;		/* rows map size (0: UNWIND_ROWS_DEFAULT) */
	uint32_t python_codes;		/* python_codes map size (0: PYTHON_CODES_DEFAULT) */
	uint32_t kinds;			/* (1 << ops->id) of each profiler named on the command line */
	struct symbolizer_settings symbols;	/* --symbol-cache-mb, --no-demangle: for symbolizer_new() */
	/* Each kind's struct X_config, written to its NAME_config map. */
	uint64_t config[PROFILER_MAX][PROFILER_CONFIG_MAX / 8];
};

/* One raw aggregated record, as drained from the kernel. */
struct raw_record {
	const struct sample_key *key;
	const uint64_t *values;		/* ops->schema.nraw u64s */
};

/*
 * One option of a profiler: commands merge the tables of every profiler into
 * their flags and --help.
 */
struct profiler_option {
	const char *name;	/* long name, "freq" */
	int short_name;		/* 'F', or 0 */
	const char *arg;	/* "HZ"; NULL: a flag */
	const char *help;	/* one line, with the default */
	/* Parses @arg (NULL for a flag) into this kind's @config; false after one line. */
	bool (*parse)(const char *arg, void *config);
};

struct profiler;
struct changed_keys;
struct run;
struct raw_frames;
struct profile_event;

/* Called once per drained record; return non-zero to stop. */
typedef int (*record_fn)(struct profiler *p, const struct raw_record *rec, void *ctx);

/*
 * What a kind of profiler is, grouped by who reads it: how a person asks for
 * it (cli: the command line, the config file, --help, doctor), its settings
 * (config), what its counts mean (schema: raw BPF values -> profile values),
 * and its code (the hooks and the lifecycle).  Run-wide state (the shared
 * maps, the events reader, the unwinder) is the run's (run.h), not a kind's.
 */
struct profiler_ops {
	const char *name;		/* "oncpu": --NAME on the command line, map pin names */
	enum profiler_id id;		/* its bit in control.enabled, its slot in opts.config */
	uint64_t needs;			/* FEAT_BIT()s of the kernel features it cannot run without */
	/*
	 * Those of its build for older kernels (bpf/events/NAME_compat.bpf.c), loaded
	 * where the kernel lacks bpf_loop or one of @needs; 0: it has none.
	 */
	uint64_t compat_needs;
	uint64_t pin_needs;		/* those run --pin needs of it besides (the on-CPU kind's perf links) */
	const char *skywalking_target;	/* the SkyWalking TargetType it serves ("ON_CPU"), or NULL */

	struct {
		const char *title;		/* "On-CPU" */
		const char *help;		/* what --NAME profiles, one line */
		bool by_default;		/* record: chosen when no profiler is named */
		bool opt_in;			/* run: only when named (it costs on every syscall, say) */
		const struct profiler_option *options;	/* ends with { NULL } */
	} cli;

	struct {
		size_t size;			/* sizeof(struct X_config), <= PROFILER_CONFIG_MAX */
		void (*defaults)(void *config);
		bool (*check)(const void *config);	/* across options; false after one line */
		/*
		 * Optional: the options loaded programs cannot take live (they chose the
		 * programs, or the perf events' rate): names those @next changes from
		 * @now in @keys and gives @next @now's values (user/core/settings.h).
		 */
		void (*keep_fixed)(const void *now, void *next, struct changed_keys *keys);
	} config;

	/* What the profile carries per sample, and how raw values become those. */
	struct {
		int nraw;			/* u64s in the BPF counts value */
		int folded_raw;			/* the raw u64 that weighs NAME_folded and dump lines */
		int nvalues;
		int (*nvalues_of)(const struct profiler *p);	/* optional: this run's first N of them */
		struct value_type value_types[PROFILE_MAX_VALUES];
		int default_value;
		bool top_by_user_leaf;		/* see struct profile */
		struct value_type period_type;
		void (*to_values)(const struct profiler *p, const uint64_t *raw, uint64_t *values);
		profile_object_namer object_name;	/* names sample_key.object (the leaf frame), or NULL */
		int64_t (*period)(const struct profiler *p);	/* NULL: 1, every event counted */
	} schema;

	/* Optional: sees every drained record (a kind's own report keeps what the profile does not). */
	void (*on_record)(struct profiler *p, const struct raw_record *rec);
	/* Optional: a report of its own instead of the top functions (record --top N). */
	void (*report)(struct profiler *p, const struct profile *prof, unsigned int top, FILE *out);
	/* Optional: the loader's tick (record: every ~100 ms), for work that follows processes. */
	void (*poll)(struct profiler *p);
	/*
	 * The raw events it sends to `record --events` (enum aperture_event_type,
	 * 0: none), and the hook that makes one of them (@size bytes: struct
	 * aperture_raw_event or its own longer one) a ProfileEvent record in @e
	 * (user/core/profile_event.h), reading its stacks into @frames, whose comm
	 * is the event's; false: not a record (too short).
	 */
	uint32_t raw_type;
	bool (*raw_event)(struct profiler *p, const struct aperture_raw_event *ev, size_t size,
			  struct raw_frames *frames, struct profile_event *e);

	/* Opens and loads the skeleton: PROFILER_OPEN_SKEL(p, NAME). */
	int (*open)(struct profiler *p, const struct profiler_opts *opts);
	int (*attach)(struct profiler *p);	/* NULL: profiler_attach_tracing */
	void (*close)(struct profiler *p);
};

/* State common to every profiler; ops->open fills it, the core uses it. */
struct profiler {
	const struct profiler_ops *ops;
	struct run *run;		/* the maps and readers it shares with its run's others; NULL: its own */
	struct profiler_opts opts;
	void *skel;			/* owned by the ops; NULL when taken over from pins */
	struct bpf_object *obj;		/* the skeleton's object */
	bool pinned;			/* fds come from bpffs pins: close them ourselves */
	void *priv;			/* ops-private (e.g. perf event fds) */
	struct bpf_link **links;	/* everything attach created, for pinning and close */
	int nlinks;
	bool links_pinned;		/* close must leave the links attached */
	int nlinks_pinned;		/* links[0 .. nlinks_pinned) have a pin (pin_new_links) */
	int fd[MAP_SLOT_MAX];		/* see enum map_slot */
	bool follows_children;		/* loaded the run's fork program (bpf/lib/control.bpf.h) */
	int live;			/* MAP_COUNTS_0 + live is the live generation */
	uint64_t drained_events;	/* sum of raw value 0 over all drains */
	bool dwarf;			/* user stacks by DWARF CFI where tables exist (opts.unwind resolved) */
	bool fp_in_bpf;			/* frame-pointer walks by the BPF program, not bpf_get_stack() */
	bool compat;			/* loaded the object built for older kernels (bpf/lib/kernel.bpf.h) */
	bool python;			/* CPython frames in user stacks (needs dwarf; --python) */
	struct stack_gc *gc;		/* opts.gc_stacks: made at the first flip */
	bool gc_failed;			/* a pass failed: said once */
};

/* This kind's config in @opts. */
static inline void *profiler_config(const struct profiler_opts *opts, const struct profiler_ops *ops)
{
	return (void *)opts->config[ops->id];
}

extern const struct profiler_ops profiler_oncpu;
extern const struct profiler_ops profiler_offcpu;
extern const struct profiler_ops profiler_locks;
extern const struct profiler_ops profiler_syscalls;
extern const struct profiler_ops profiler_gpu;

/* NULL-terminated table of every profiler. */
extern const struct profiler_ops *const profilers[];
const struct profiler_ops *profiler_find(const char *name);

/*
 * Lifecycle, for callers: open (load), attach, snapshot..., close.  @run
 * (run.h): the first profiler opened with it creates the shared maps, the
 * others reuse them; NULL: maps of its own, read by nobody.
 */
int profiler_open(struct profiler **out, struct run *run, const struct profiler_ops *ops,
		  const struct profiler_opts *opts);
int profiler_attach(struct profiler *p);
void profiler_close(struct profiler *p);

/*
 * Flips the generation and drains the old counts map, calling @fn for every
 * record (values are deltas since the previous snapshot).  Race-free: see
 * the comment at struct counts_map in bpf/lib/counts.bpf.h.
 */
int profiler_snapshot(struct profiler *p, record_fn fn, void *ctx);

/*
 * The same in steps, for a caller that must keep what it drained safe before
 * the kernel forgets it (the agent's ledger): flip returns the generation
 * that went idle (0 or 1) or a negative errno; read_generation_into reads it
 * without deleting; clear_generation empties it.  A generation's map id
 * (0 when unknown) tells it apart across restarts of a pinned daemon.
 */
int profiler_flip(struct profiler *p);
int profiler_read_generation_into(struct profiler *p, int gen, struct profile *prof);
int profiler_clear_generation(struct profiler *p, int gen);
uint32_t profiler_generation_id(const struct profiler *p, int gen);

/* Reads a stack by id into @ips (leaf first); returns depth or a negative errno. */
int profiler_stack(struct profiler *p, uint64_t stack_id, uint64_t *ips, uint32_t max);

/*
 * With opts.gc_stacks, after a snapshot (or a flip and its read): deletes
 * the stacks no count has referred to in two passes (user/core/stackgc.h).
 * 0 or a negative errno (logged once; nothing deleted).
 */
int profiler_collect_stacks(struct profiler *p);
/* What the collector did so far (zeros when it is off). */
void profiler_gc_stats(const struct profiler *p, struct stack_gc_stats *out);

/* max_entries of the map behind @fd; 0 when it cannot be read. */
uint32_t map_max_entries(int fd);
/* Entries in the map behind @fd, and its max_entries; false when it cannot be read. */
bool map_use(int fd, uint64_t *used, uint64_t *cap);

/* Sums the per-CPU loss/activity counters into @out[STAT_MAX]. */
int profiler_stats(struct profiler *p, uint64_t *out);

/* Receives the raw events (struct aperture_raw_event or a kind's longer one, @size bytes) of the ring buffer. */
typedef void (*raw_event_fn)(const struct aperture_raw_event *ev, size_t size, void *ctx);
/* Tests only: APERTURE_TEST_EVENTS_HOLD names a file that, while it exists, stops every read of the events ring. */
bool events_held(void);

/* Snapshot straight into a profile (symbolizing new stacks). */
int profiler_snapshot_into(struct profiler *p, struct profile *prof);

/*
 * Replaces this profiler's target set (0 pids: every process, unless
 * opts.targets_only) and applies opts.disabled; @pids must outlive @p or the
 * next call.  Other profilers sharing the set keep their targets.
 */
int profiler_set_pids(struct profiler *p, const uint32_t *pids, int npids);

/* A profile whose value types and period are this profiler's. */
void profiler_profile_init(const struct profiler *p, struct profile *prof, struct symbolizer *sym);

/* Keeps @link for pinning and destroys it at close; NULL link: -errno of the failed attach. */
int profiler_add_link(struct profiler *p, struct bpf_link *link);

/* Shared by the ops: write the control struct and the config from opts, fill target_pids. */
int profiler_configure(struct profiler *p);

extern const char *const stat_names[STAT_MAX];
/* Of @stats[STAT_MAX], the events dropped (stats that are losses). */
uint64_t profiler_lost(const uint64_t *stats);


/*
 * The whole of a profiler's open: open the skeleton NAME_bpf, size and share
 * its maps (profiler_prepare), load it, take its fds (profiler_take_maps).
 * Evaluates to 0 or a negative errno.
 */
#define PROFILER_OPEN_SKEL(p, name) PROFILER_OPEN_SKEL_PREPARED(p, name, (void)0)
/* The same, running @before_load (which may use __skel) between prepare and load. */
#define PROFILER_OPEN_SKEL_PREPARED(p, name, before_load) ({			\
	struct name##_bpf *__skel = name##_bpf__open();				\
	int __err = __skel ? 0 : -errno;					\
	if (__skel) {								\
		(p)->skel = __skel;						\
		__skel->rodata->unwind_dwarf = (p)->dwarf;			\
		__skel->rodata->unwind_fp_in_bpf = (p)->fp_in_bpf;		\
		__skel->rodata->python_enabled = (p)->python;			\
		/* only the older build reads the task so: no probe for the other */ \
		__skel->rodata->kernel_reads = (p)->compat && feature_has(FEAT_PROBE_READ_KERNEL); \
		(p)->obj = __skel->obj;						\
		__err = profiler_prepare(p);					\
		if (!__err) {							\
			before_load;						\
			__err = name##_bpf__load(__skel);			\
		}								\
		if (!__err)							\
			__err = profiler_take_maps(p);				\
	}									\
	__err; })

/*
 * PROFILER_OPEN_SKEL_PREPARED of NAME's object for this kernel: NAME_compat's
 * (bpf/events/NAME_compat.bpf.c) where profiler_open chose the build for
 * older kernels (p->compat: profiler_needs), else NAME's.
 */
#define PROFILER_OPEN_SKEL_BUILDS(p, name, before_load)				\
	((p)->compat ?								\
	 PROFILER_OPEN_SKEL_PREPARED(p, name##_compat, before_load) :		\
	 PROFILER_OPEN_SKEL_PREPARED(p, name, before_load))

/*
 * The kernel features @ops needs here: those of its build for older kernels
 * where the kernel lacks one of the 6.1+ build's (bpf_loop or ops->needs) and
 * it has such a build (*@compat then true), else ops->needs and bpf_loop.  What
 * profiler_open loads and what doctor reports.
 */
uint64_t profiler_needs(const struct profiler_ops *ops, bool *compat);

int profiler_prepare(struct profiler *p);
int profiler_take_maps(struct profiler *p);
/* Attaches every tracing program of @p's object (tp_btf, fentry, ...). */
int profiler_attach_tracing(struct profiler *p);

#endif /* PROFILER_H */
