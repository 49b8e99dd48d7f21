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
#include "aperture.h"
#include "profile.h"
#include "kernel_features.h"

struct bpf_link;

/*
 * Maps every profiler of one run shares, so that one control map steers them
 * all.  The first profiler opened creates them; the owner closes the fds
 * (profiler_shared_close).
 */
struct profiler_shared {
	int control_fd;		/* -1 until created */
	int target_pids_fd;
};

#define PROFILER_SHARED_INIT { .control_fd = -1, .target_pids_fd = -1 }
void profiler_shared_close(struct profiler_shared *shared);

struct profiler_opts {
	struct profiler_shared *shared;	/* NULL: this profiler's own control map */
	unsigned int freq_hz;		/* on-CPU sampling frequency */
	const uint32_t *pids;		/* target tgids, npids of them (0: all) */
	int npids;
	uint64_t cgroup_id;		/* 0: any */
	enum stack_mode stack_mode;
	bool include_idle;
	uint64_t min_block_ns;		/* off-CPU */
	uint64_t max_block_ns;		/* off-CPU; 0: no limit */
	uint32_t state_mask;		/* off-CPU: enum offcpu_state bits */
	uint32_t counts_entries;	/* aggregation map size (per generation) */
	uint32_t stacks_entries;	/* stacks map size */
	bool keep_totals;		/* also count into the never-drained totals map */
	bool targets_only;		/* filter by pid even with no pid: count nothing */
	bool disabled;			/* loaded and attached, but not counting */
};

/* One raw aggregated record, as drained from the kernel. */
struct raw_record {
	const struct sample_key *key;
	const uint64_t *values;		/* ops->nraw u64s */
};

struct profiler;

/* Called once per drained record; return non-zero to stop. */
typedef int (*record_fn)(struct profiler *p, const struct raw_record *rec, void *ctx);

struct profiler_ops {
	const char *name;		/* "oncpu": --NAME on the command line, map pin names */
	enum profiler_id id;		/* its bit in control.enabled */
	const char *title;		/* "On-CPU" */
	int nraw;			/* u64s in the BPF counts value */
	int folded_raw;			/* the raw u64 that weighs NAME_folded and dump lines */
	uint64_t needs;			/* FEAT_BIT()s of the kernel features it cannot run without */
	/* What the profile carries per sample, and how raw values become those. */
	int nvalues;
	struct value_type value_types[PROFILE_MAX_VALUES];
	int default_value;
	bool top_by_user_leaf;		/* see struct profile */
	struct value_type period_type;
	void (*to_values)(const struct profiler *p, const uint64_t *raw, uint64_t *values);
	int64_t (*period)(const struct profiler *p);

	/* open + configure + load; fills the common fds in @p. */
	int (*open)(struct profiler *p, const struct profiler_opts *opts);
	int (*attach)(struct profiler *p);
	void (*close)(struct profiler *p);
};

/* State common to every profiler; ops->open fills it, the core uses it. */
struct profiler {
	const struct profiler_ops *ops;
	struct profiler_opts opts;
	void *skel;			/* owned by the ops; NULL when taken over from pins */
	bool pinned;			/* fds come from bpffs pins: close them ourselves */
	void *priv;			/* ops-private (e.g. perf event fds) */
	struct bpf_link **links;	/* everything attach created, for pinning and close */
	int nlinks;
	bool links_pinned;		/* close must leave the links attached */
	int control_fd;
	int target_pids_fd;
	int stacks_fd;
	int stats_fd;
	int events_fd;			/* ring buffer of struct aperture_event */
	int seen_tgids_fd;		/* processes announced through events */
	int totals_fd;			/* never drained; filled while control.keep_totals */
	int active_fd;			/* ARRAY_OF_MAPS, slot 0 = live counts map */
	int counts_fd[2];		/* the two generations */
	int live;			/* index into counts_fd of the live one */
	uint64_t drained_events;	/* sum of raw value 0 over all drains */
};

extern const struct profiler_ops profiler_oncpu;
extern const struct profiler_ops profiler_offcpu;

/* NULL-terminated table of every profiler. */
extern const struct profiler_ops *const profilers[];
const struct profiler_ops *profiler_find(const char *name);

/* Lifecycle, for callers: open (load), attach, snapshot..., close. */
int profiler_open(struct profiler **out, const struct profiler_ops *ops, const struct profiler_opts *opts);
int profiler_attach(struct profiler *p);
void profiler_close(struct profiler *p);

/*
 * Flips the generation and drains the old counts map, calling @fn for every
 * record (values are deltas since the previous snapshot).  Race-free: see
 * the comment at APERTURE_COUNTS in bpf/common.bpf.h.
 */
int profiler_snapshot(struct profiler *p, record_fn fn, void *ctx);

/* Reads a stack by id into @ips (leaf first); returns depth or a negative errno. */
int profiler_stack(struct profiler *p, uint64_t stack_id, uint64_t *ips, uint32_t max);

/* Sums the per-CPU loss/activity counters into @out[STAT_MAX]. */
int profiler_stats(struct profiler *p, uint64_t *out);

/*
 * Reads @p's new-process notifications into *@rb (created when NULL, else
 * added to) and has @sym track each process announced, so that it is
 * symbolized even after it exits.  Poll *@rb with ring_buffer__poll().
 */
struct ring_buffer;
int profiler_watch_processes(struct profiler *p, struct ring_buffer **rb, struct symbolizer *sym);

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

/* Shared by the ops: write the control struct from opts, fill target_pids. */
int profiler_configure(struct profiler *p);

extern const char *const stat_names[STAT_MAX];


/*
 * Every skeleton has the maps of bpf/common.bpf.h under the same names:
 * these two macros size them before load and take their fds after.
 */
#define PROFILER_PREPARE_MAPS(p, skel)					\
	profiler_prepare_maps(p, (skel)->maps.counts_0, (skel)->maps.counts_1,	\
			      (skel)->maps.totals, (skel)->maps.stacks,		\
			      (skel)->maps.control, (skel)->maps.target_pids)

#define PROFILER_TAKE_MAPS(p, skel) do {					\
	(p)->control_fd = bpf_map__fd((skel)->maps.control);			\
	(p)->target_pids_fd = bpf_map__fd((skel)->maps.target_pids);		\
	(p)->stacks_fd = bpf_map__fd((skel)->maps.stacks);			\
	(p)->stats_fd = bpf_map__fd((skel)->maps.stats);			\
	(p)->events_fd = bpf_map__fd((skel)->maps.events);			\
	(p)->seen_tgids_fd = bpf_map__fd((skel)->maps.seen_tgids);		\
	(p)->active_fd = bpf_map__fd((skel)->maps.active_counts);		\
	(p)->totals_fd = bpf_map__fd((skel)->maps.totals);			\
	(p)->counts_fd[0] = bpf_map__fd((skel)->maps.counts_0);			\
	(p)->counts_fd[1] = bpf_map__fd((skel)->maps.counts_1);			\
	(p)->live = 0;								\
	profiler_share_maps(p);							\
} while (0)

/*
 * The whole of a profiler's open: open the skeleton NAME_bpf, size and share
 * its maps, load it, take its fds.  Evaluates to 0 or a negative errno.
 */
#define PROFILER_OPEN_SKEL(p, name) ({						\
	struct name##_bpf *__skel = name##_bpf__open();				\
	int __err = __skel ? 0 : -errno;					\
	if (__skel) {								\
		(p)->skel = __skel;						\
		__err = PROFILER_PREPARE_MAPS(p, __skel) ?: name##_bpf__load(__skel); \
		if (!__err)							\
			PROFILER_TAKE_MAPS(p, __skel);				\
	}									\
	__err; })

struct bpf_map;
int profiler_prepare_maps(struct profiler *p, struct bpf_map *counts_0, struct bpf_map *counts_1,
			  struct bpf_map *totals, struct bpf_map *stacks,
			  struct bpf_map *control, struct bpf_map *target_pids);
void profiler_share_maps(struct profiler *p);

#endif /* PROFILER_H */
