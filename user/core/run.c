// SPDX-License-Identifier: GPL-2.0
/*
 * The run object (run.h): the maps the profilers of one run share, and the
 * reader of their events ring buffer that feeds the symbolizer, the DWARF
 * unwinder and the raw-event sink.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "python_tables.h"
#include "run.h"
#include "symbolize.h"
#include "unwinder.h"
#include "util.h"

void run_init(struct run *run)
{
	memset(run, 0, sizeof(*run));
	for (int i = 0; i < MAP_SLOT_MAX; i++)
		run->fd[i] = -1;
	run->lock_fd = -1;
	run->wait_fd = -1;
}

void run_control_lock(const struct run *run)
{
	if (run && run->lock_fd >= 0 && flock(run->lock_fd, LOCK_EX))
		log_warn("cannot lock the pin directory (%s): a concurrent control write may be lost",
			 strerror(errno));
}

void run_control_unlock(const struct run *run)
{
	if (run && run->lock_fd >= 0)
		flock(run->lock_fd, LOCK_UN);
}

void run_close(struct run *run)
{
	ring_buffer__free(run->events);
	unwinder_free(run->unwinder);
	for (int i = 0; i < MAP_SLOT_MAX; i++)
		if (run->fd[i] >= 0)
			close(run->fd[i]);
	if (run->lock_fd >= 0)
		close(run->lock_fd);
	if (run->wait_fd >= 0)
		close(run->wait_fd);
	run_init(run);	/* the symbolizer is the caller's */
}

bool run_take_shared(struct run *run, const struct profiler *p)
{
	if (run->fd[MAP_CONTROL] >= 0)
		return false;
	for (int i = 0; i < MAP_SLOT_MAX; i++)
		if (map_slots[i].shared)
			run->fd[i] = dup(p->fd[i]);
	run->dwarf = p->dwarf;
	run->python = p->python;
	run->pinned = p->pinned;
	run->first = p->ops->name;
	return true;
}

/* What the BPF walk last saw at a code object's address (python_codes), for the naming of Python frames. */
static bool python_code_seen(void *ctx, uint32_t tgid, uint64_t code, uint64_t *identity, uint32_t *generation)
{
	struct python_code_key key = { .tgid = tgid, .code = code };
	struct python_code_seen seen;

	if (bpf_map_lookup_elem((int)(intptr_t)ctx, &key, &seen))
		return false;
	*identity = seen.identity;
	*generation = seen.generation;
	return true;
}

static int on_process_event(void *arg, void *data, size_t size)
{
	const struct aperture_event *event = data;
	struct run *run = arg;

	if (size < sizeof(*event))
		return 0;
	if (event->type == EVENT_NEW_PROCESS) {
		/* The maps first (a read and a few opens): a short-lived process may not wait for the tables. */
		if (run->sym)
			symbolizer_track(run->sym, event->tgid);	/* gone already: nothing to keep */
		if (run->unwinder)
			unwinder_track(run->unwinder, event->tgid);
	} else if (event->type == EVENT_UNWIND_MISS) {
		if (run->unwinder)	/* a library loaded since: both need the new maps */
			unwinder_track(run->unwinder, event->tgid);
		if (run->sym)
			symbolizer_track(run->sym, event->tgid);
	} else if (event->type == EVENT_PY_STACK) {
		const struct aperture_py_event *py = data;

		if (run->sym && size >= sizeof(*py))
			symbolizer_python_prefetch(run->sym, py->hdr.tgid, (const uint64_t *)py->ips,
						   py->depth < APERTURE_MAX_DEPTH ? py->depth : APERTURE_MAX_DEPTH);
	} else if (run->raw && size >= sizeof(struct aperture_raw_event))
		run->raw(data, size, run->raw_ctx);
	return 0;
}

/*
 * Deletes the keys the hash map @fd (4-byte keys) holds now.  Collected
 * first: deleting the key a walk stands on starts it over, and programs keep
 * adding keys (a tgid added meanwhile is announced in the ring buffer anyway).
 */
static void map_forget_all(int fd)
{
	uint32_t cap = map_max_entries(fd), n = 0, *keys = cap ? calloc_logged(cap, sizeof(*keys)) : NULL;
	__u32 *prev = NULL;

	while (keys && n < cap && bpf_map_get_next_key(fd, prev, &keys[n]) == 0)
		prev = &keys[n++];
	for (uint32_t i = 0; i < n; i++)
		bpf_map_delete_elem(fd, &keys[i]);	/* ENOENT: the process exited meanwhile */
	free(keys);
}

/*
 * A taken-over set's tables were built by a loader that is gone, at places
 * in the rows array this one does not know and will write over: each
 * process's table entry goes (its samples are walked by frame pointers and
 * marked, as before its first tables), and so does the list of processes
 * announced, so that each is announced again on its next event and this
 * loader reads its maps from /proc and builds its tables anew.  The files
 * go too: this loader numbers them anew.
 */
static void forget_processes(struct run *run)
{
	struct aperture_control ctl;
	__u32 zero = 0;

	map_forget_all(run->fd[MAP_UNWIND_PROCS]);
	map_forget_all(run->fd[MAP_UNWIND_FILES]);
	map_forget_all(run->fd[MAP_SEEN_TGIDS]);
	/* After: each CPU's note of the last process announced (bpf/lib/last_seen.bpf.h) is stale now. */
	run_control_lock(run);
	if (run->fd[MAP_CONTROL] >= 0 && bpf_map_lookup_elem(run->fd[MAP_CONTROL], &zero, &ctl) == 0) {
		ctl.cache_gen++;
		if (bpf_map_update_elem(run->fd[MAP_CONTROL], &zero, &ctl, BPF_EXIST))
			log_warn("cannot write the control map (%s): processes seen before the takeover "
				 "may not be announced again", strerror(errno));
	}
	run_control_unlock(run);
}

int run_watch_events(struct run *run, struct symbolizer *sym, raw_event_fn fn, void *ctx)
{
	int err = 0;

	if (run->watched || run->fd[MAP_EVENTS] < 0)
		return 0;	/* one reader for the run; no profiler opened: nothing to read */
	run->watched = true;
	run->sym = sym;
	run->raw = fn;
	run->raw_ctx = ctx;
	if (run->pinned)
		forget_processes(run);
	if (run->dwarf)
		run->unwinder = unwinder_new(run->fd[MAP_UNWIND_ROWS], map_max_entries(run->fd[MAP_UNWIND_ROWS]),
					     run->fd[MAP_UNWIND_PROCS], run->fd[MAP_UNWIND_FILES],
					     map_max_entries(run->fd[MAP_UNWIND_FILES]));
	if (run->unwinder && run->python) {
		unwinder_set_python(run->unwinder, run->fd[MAP_PYTHON_PROCS]);
		if (sym)
			symbolizer_set_python_seen(sym, python_code_seen, (void *)(intptr_t)run->fd[MAP_PYTHON_CODES]);
	}
	run->events = ring_buffer__new(run->fd[MAP_EVENTS], on_process_event, run, NULL);
	if (run->events && run->wait_fd != -1) {
		/* A wait set made before the ring lacks it: the next run_wait makes it again. */
		if (run->wait_fd >= 0)
			close(run->wait_fd);
		run->wait_fd = -1;
	}
	if (!run->events) {
		err = -errno;
		log_warn("%s: no new-process notifications (%s): processes that exit early may stay "
			 "unnamed", run->first, strerror(-err));
	}
	return err;
}

void run_track(struct run *run, const uint32_t *pids, int npids)
{
	for (int i = 0; run->watched && i < npids; i++) {
		if (run->sym)
			symbolizer_track(run->sym, pids[i]);
		if (run->unwinder)
			unwinder_track(run->unwinder, pids[i]);
	}
}

void run_unwind_bytes(const struct run *run, size_t *held, size_t *build_peak)
{
	*held = *build_peak = 0;
	if (run->unwinder)
		unwinder_bytes(run->unwinder, held, build_peak);
}

void run_unwind_report(const struct run *run, FILE *out)
{
	if (run->unwinder)
		unwinder_report(run->unwinder, out);
}

/* run_wait's epoll set: the ring's own epoll fd (readable when a ring is) and the wakeup. */
static int run_wait_open(struct run *run)
{
	struct epoll_event ring = { .events = EPOLLIN }, wake = { .events = EPOLLIN, .data.u32 = 1 };
	int fd = epoll_create1(EPOLL_CLOEXEC);

	if (fd < 0)
		return -errno;
	if ((run->events && epoll_ctl(fd, EPOLL_CTL_ADD, ring_buffer__epoll_fd(run->events), &ring)) ||
	    (wakeup_fd() >= 0 && epoll_ctl(fd, EPOLL_CTL_ADD, wakeup_fd(), &wake))) {
		int err = -errno;

		close(fd);
		return err;
	}
	run->wait_fd = fd;
	return 0;
}

bool run_needs_tick(struct profiler *const *profs, int nprofs, const struct symbolizer *sym)
{
	for (int i = 0; i < nprofs; i++)
		if (profs[i]->ops->poll)
			return true;
	return sym && symbolizer_has_young(sym);
}

int run_wait(struct run *run, int ms)
{
	struct epoll_event got[2];
	int err, n;

	if (run->wait_fd == -1 && (err = run_wait_open(run)) != 0) {
		log_warn("cannot wait on the notifications and signals together (%s): polling the ring alone",
			 strerror(-err));
		run->wait_fd = -2;	/* once */
	}
	if (run->wait_fd >= 0) {
		n = epoll_wait(run->wait_fd, got, 2, ms);
		if (n < 0 && errno != EINTR)
			return -errno;
		for (int i = 0; i < n; i++)
			if (got[i].data.u32 == 1)
				wakeup_clear();	/* posted: read only then, not a syscall every turn */
	} else if (run->events) {
		err = ring_buffer__poll(run->events, ms);
		if (err < 0 && err != -EINTR)
			return err;
	} else {
		struct timespec tick = { ms / 1000, (ms % 1000) * 1000000L };

		nanosleep(&tick, NULL);	/* EINTR: a signal to look at */
	}
	if (!run->events)
		return 0;
	err = ring_buffer__consume(run->events);
	return err < 0 && err != -EINTR ? err : 0;
}
