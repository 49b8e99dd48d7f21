/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The state one run of profilers shares: the maps every profiler of the run
 * reuses (one control map, one target set, one events ring buffer, the
 * unwinding tables), the reader of that ring buffer, the symbolizer and the
 * DWARF unwinder it feeds, and who takes the raw events.  record, the daemon
 * and the agent make one and hand it to every profiler they open (as the
 * OpenTelemetry profiler's processmanager owns the maps its tracers share);
 * the first profiler opened creates the shared maps, the others reuse them.
 */
#ifndef RUN_H
#define RUN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "profiler.h"

struct ring_buffer;
struct symbolizer;
struct unwinder;

struct run {
	int fd[MAP_SLOT_MAX];		/* shared slots only; -1 until the first profiler creates them */
	/* As the first profiler loaded (or took over) the shared maps: the unwinder follows them. */
	bool dwarf;			/* the rows map is sized for DWARF tables */
	bool python;			/* python_procs is sized for CPython walks */
	bool pinned;			/* taken over from pins: another loader's tables are in them */
	bool watched;			/* run_watch_events ran (even when it failed) */
	int lock_fd;			/* the pin directory, flock'ed around each control write; -1: not pinned */
	const char *first;		/* the kind that created the shared maps, for messages */
	struct ring_buffer *events;	/* the reader of MAP_EVENTS (run_watch_events), or NULL */
	struct symbolizer *sym;		/* the caller's: tracks each process announced; NULL: none */
	struct unwinder *unwinder;	/* builds the DWARF tables of the processes announced; NULL: off */
	raw_event_fn raw;		/* takes the raw events; NULL: dropped */
	void *raw_ctx;
	int wait_fd;			/* run_wait's epoll set (the ring's and util's wakeup); -1: not made yet, -2: cannot be */
};

/* An empty run: no maps yet (the first profiler opened with it creates them). */
void run_init(struct run *run);
/* What the DWARF unwinder holds and the largest table it built (unwinder_bytes); 0 without one. */
void run_unwind_bytes(const struct run *run, size_t *held, size_t *build_peak);
/*
 * Around each read-modify-write of the control map: aperture-ctl and other
 * loaders write it too, and take the same lock (flock on the pin directory),
 * so that no writer's fields or cache_gen bump are lost to another's.
 */
void run_control_lock(const struct run *run);
void run_control_unlock(const struct run *run);
/* Frees the reader, the unwinder and the shared fds; @run is empty again (run_init). */
void run_close(struct run *run);

/*
 * Called by the profiler that loaded or took over @run's shared maps first:
 * keeps a dup of each shared fd of @p and what @p's loading says of them.
 * Returns whether @p is that first one (it loads the run's exec, exit and
 * fork programs).
 */
bool run_take_shared(struct run *run, const struct profiler *p);

/*
 * Reads the run's new-process notifications (once; later calls return 0),
 * has @sym track each process announced, so that it is symbolized even
 * after it exits, and builds the DWARF tables of each; the raw events go to
 * @fn (set opts.raw_events for the BPF programs to send them).  Poll
 * run->events with ring_buffer__poll(), then ring_buffer__consume() (raw
 * events are submitted without a wakeup).  Each flip reads what it holds
 * (profiler_flip).  Without a reader (logged) aperture still works:
 * processes that exit early may stay unnamed.
 */
int run_watch_events(struct run *run, struct symbolizer *sym, raw_event_fn fn, void *ctx);

/*
 * After run_watch_events: reads the maps of these processes (tables,
 * symbols) now rather than at their first event, so that targets known from
 * the start have their tables before their first samples, or soon after.
 */
void run_track(struct run *run, const uint32_t *pids, int npids);

/*
 * The main loop's wait: up to @ms for a notification in run->events or a
 * signal (util's wakeup, which the handlers post, so that one that came
 * just before the wait ends it at once), then reads what the ring holds
 * (raw events come without a wakeup).  Without a ring, waits for the
 * signal or @ms.  The set is made at the first call, and again after
 * run_watch_events makes the ring.  0, or -errno when the ring cannot be
 * read.
 */
int run_wait(struct run *run, int ms);

/*
 * Whether a main loop must wake every ~100 ms rather than sleep until its
 * next deadline: one of @profs polls (the GPU profiler's late attaches), or
 * @sym has a process announced in the last second, whose maps are read
 * again.  Notifications and signals wake the wait anyway (run_wait); each
 * wakeup costs CPU.
 */
bool run_needs_tick(struct profiler *const *profs, int nprofs, const struct symbolizer *sym);

/* The DWARF unwinder's one-line report (nothing when it is off). */
void run_unwind_report(const struct run *run, FILE *out);

#endif /* RUN_H */
