// SPDX-License-Identifier: GPL-2.0
/*
 * Pinning under a bpffs directory: a new pinned set started as one transaction, a pinned set
 * taken over, and the pinned maps reset (pin.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/magic.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "kernel_features.h"
#include "iter.skel.h"
#include "pin.h"
#include "run.h"
#include "util.h"

#define BPFFS_ROOT "/sys/fs/bpf"

static bool is_bpffs(const char *path)
{
	struct statfs fs;

	return statfs(path, &fs) == 0 && fs.f_type == BPF_FS_MAGIC;
}

static int prepare_dir(const char *dir, bool *made_dir)
{
	if (!is_bpffs(BPFFS_ROOT) && strncmp(dir, BPFFS_ROOT "/", strlen(BPFFS_ROOT) + 1) == 0) {
		if (mount("bpf", BPFFS_ROOT, "bpf", 0, "mode=0700")) {
			log_error("cannot mount bpffs on %s: %s", BPFFS_ROOT, strerror(errno));
			return -errno;
		}
		log_warn("mounted bpffs on %s (it was not mounted)", BPFFS_ROOT);
	}
	*made_dir = mkdir(dir, 0700) == 0;
	if (!*made_dir && errno != EEXIST) {
		const char *base = strrchr(dir, '/');

		if (errno == EPERM && strchr(base ? base : dir, '.'))
			log_error("cannot create %s: bpffs does not allow '.' in names", dir);
		else
			log_error("cannot create %s: %s", dir, strerror(errno));
		return -errno;
	}
	if (!is_bpffs(dir)) {
		log_error("%s is not on a bpffs (mount -t bpf bpf DIR)", dir);
		return -ENOTDIR;
	}
	if (chmod(dir, 0700)) {
		log_error("cannot chmod %s: %s", dir, strerror(errno));
		return -errno;
	}
	return fault_inject(dir) ? -EIO : 0;
}

static int pin_path(char *buf, const char *dir, const char *prefix, const char *name)
{
	int n = snprintf(buf, PATH_MAX, "%s/%s%s%s", dir, prefix ? prefix : "", prefix ? "_" : "", name);

	return n < PATH_MAX ? 0 : -ENAMETOOLONG;
}

bool pin_present(const char *dir, const char *name)
{
	char path[PATH_MAX];

	return pin_path(path, dir, name, "active") == 0 && access(path, F_OK) == 0;
}

/*
 * What one start pinned, so that a failure undoes exactly that: pins made
 * before (a set being taken over) are left alone.
 */
struct pin_txn {
	const char *dir;
	struct run *run;		/* the caller's, shared by every profiler of the set */
	bool made_dir;
	char **paths;			/* pinned by this start, in order */
	int npaths;
	struct profiler **fresh;	/* loaded by this start, not taken over */
	int nfresh;
	pin_opened_fn opened;		/* the caller's, on each profiler before it counts for it */
	void *ctx;
	char missing[256];		/* optional pins not made, and why */
};

static int txn_add(void ***array, int *n, void *item)
{
	void **grown = realloc(*array, (*n + 1) * sizeof(*grown));

	if (!grown)
		return -ENOMEM;
	grown[(*n)++] = item;
	*array = grown;
	return 0;
}

static int txn_pinned(struct pin_txn *txn, const char *path)
{
	char *copy = strdup(path);

	if (!copy || txn_add((void ***)&txn->paths, &txn->npaths, copy)) {
		free(copy);
		unlink(path);	/* cannot be undone later: undo now */
		return -ENOMEM;
	}
	return 0;
}

static void txn_missing(struct pin_txn *txn, const char *pin, const char *why)
{
	size_t len = strlen(txn->missing);

	snprintf(txn->missing + len, sizeof(txn->missing) - len, "%s%s (%s)", len ? ", " : "", pin, why);
}

static int pin_fd(struct pin_txn *txn, int fd, const char *prefix, const char *name)
{
	char path[PATH_MAX];
	int err = pin_path(path, txn->dir, prefix, name);

	if (err)
		return err;
	/* Shared maps are pinned by the first profiler; the others find them there. */
	if (!prefix && access(path, F_OK) == 0)
		return 0;
	if (bpf_obj_pin(fd, path)) {
		err = -errno;
		log_error("cannot pin %s: %s", path, strerror(errno));
		return err;
	}
	err = txn_pinned(txn, path);
	return err ?: fault_inject(path) ? -EIO : 0;
}

/*
 * Loads the iterator program @prog_name of iter.bpf.c against @p's maps and
 * pins it as DIR/@pin_name; @map_fd: the map it walks (-1 for a task iterator).
 */
static int pin_iterator(struct pin_txn *txn, struct profiler *p, const char *prog_name,
			const char *pin_name, int map_fd)
{
	union bpf_iter_link_info linfo = { .map.map_fd = map_fd };
	LIBBPF_OPTS(bpf_iter_attach_opts, opts);
	struct bpf_program *prog, *wanted = NULL;
	struct bpf_link *link = NULL;
	struct iter_bpf *skel;
	char path[PATH_MAX];
	int err;

	err = pin_path(path, txn->dir, NULL, pin_name);
	if (err)
		return err;
	if (access(path, F_OK) == 0)
		return 0;	/* shared (processes): the first profiler pinned it */
	skel = iter_bpf__open();
	if (!skel)
		return -errno;
	if (map_fd >= 0) {
		opts.link_info = &linfo;
		opts.link_info_len = sizeof(linfo);
	}
	bpf_object__for_each_program(prog, skel->obj) {
		bool mine = strcmp(bpf_program__name(prog), prog_name) == 0;

		bpf_program__set_autoload(prog, mine);
		if (mine)
			wanted = prog;
	}
	skel->rodata->weight_index = p->ops->schema.folded_raw;
	err = wanted ? 0 : -ENOENT;
	err = err ?: bpf_map__reuse_fd(skel->maps.stacks, p->fd[MAP_STACKS]);
	err = err ?: bpf_map__reuse_fd(skel->maps.seen_tgids, p->fd[MAP_SEEN_TGIDS]);
	err = err ?: bpf_map__reuse_fd(skel->maps.unwind_procs, p->fd[MAP_UNWIND_PROCS]);
	err = err ?: bpf_map__reuse_fd(skel->maps.unwind_files, p->fd[MAP_UNWIND_FILES]);
	err = err ?: iter_bpf__load(skel);
	if (err)
		goto cleanup;
	link = bpf_program__attach_iter(wanted, &opts);
	if (!link) {
		err = -errno;
		goto cleanup;
	}
	if (bpf_link__pin(link, path))
		err = -errno;
	else
		err = txn_pinned(txn, path);
cleanup:
	bpf_link__destroy(link);	/* the pin keeps it */
	iter_bpf__destroy(skel);
	return err;
}

/*
 * The iterators are a convenience: when the kernel refuses them (some refuse
 * every iter/bpf_map_elem program with EPERM), the set is pinned without
 * them and `aperture dump` prints the same lines from user space.
 */
static void pin_optional_iterator(struct pin_txn *txn, struct profiler *p, const char *prog,
				  const char *name, int map_fd, enum feature needs)
{
	char why[128];
	int err;

	if (!feature_has(needs)) {
		txn_missing(txn, name, feature_missing(needs, why, sizeof(why)));
		return;
	}
	err = pin_iterator(txn, p, prog, name, map_fd);
	if (err) {
		snprintf(why, sizeof(why), "%s", strerrorname_np(-err) ?: strerror(-err));
		txn_missing(txn, name, why);
	}
}

static void pin_iterators(struct pin_txn *txn, struct profiler *p)
{
	char name[64];

	snprintf(name, sizeof(name), "%s_folded", p->ops->name);
	pin_optional_iterator(txn, p, "folded", name, p->fd[MAP_TOTALS], FEAT_ITER_MAP_ELEM);
	pin_optional_iterator(txn, p, "processes", "processes", -1, FEAT_ITER_TASK);
}

/* A taken-over set: name the iterator its first daemon could not pin, and why. */
static void note_missing_iterators(struct pin_txn *txn, struct profiler *p)
{
	char name[64], path[PATH_MAX], why[128];

	snprintf(name, sizeof(name), "%s_folded", p->ops->name);
	if (pin_path(path, txn->dir, NULL, name) || access(path, F_OK) == 0)
		return;
	if (feature_has(FEAT_ITER_MAP_ELEM))
		snprintf(why, sizeof(why), "not pinned by the daemon that started this set");
	else
		feature_missing(FEAT_ITER_MAP_ELEM, why, sizeof(why));
	txn_missing(txn, name, why);
}

static int profiler_pin(struct pin_txn *txn, struct profiler *p)
{
	const char *name = p->ops->name;
	char link_name[32];
	int err = 0;

	for (int i = 0; i < MAP_SLOT_MAX && !err; i++)
		if (i != MAP_ACTIVE)
			err = pin_fd(txn, p->fd[i], map_slots[i].shared ? NULL : name, map_slots[i].pin);
	for (int i = 0; i < p->nlinks && !err; i++) {
		snprintf(link_name, sizeof(link_name), "link_%d", i);
		err = pin_fd(txn, bpf_link__fd(p->links[i]), name, link_name);
		p->links_pinned = true;	/* even after a failure: the rollback decides */
		p->nlinks_pinned = i + 1;
	}
	if (!err)
		pin_iterators(txn, p);
	return err;	/* NAME_active: pin_actives, once every profiler of the start wrote its control */
}

/*
 * Last of a fresh start: NAME_active's presence tells a restarted daemon that
 * the rest is there, and a script that the set is ready to steer: every
 * control write of the start is done (aperture-ctl's would be overwritten).
 */
static int pin_actives(struct pin_txn *txn)
{
	int err = 0;

	for (int i = 0; i < txn->nfresh && !err; i++)
		err = pin_fd(txn, txn->fresh[i]->fd[MAP_ACTIVE], txn->fresh[i]->ops->name,
			     map_slots[MAP_ACTIVE].pin);
	return err;
}

static int open_pin(const char *dir, const char *prefix, const char *name, int *fd)
{
	char path[PATH_MAX];
	int err = pin_path(path, dir, prefix, name);

	if (err)
		return err;
	*fd = bpf_obj_get(path);
	if (*fd < 0) {
		log_error("cannot open pinned %s: %s", path, strerror(errno));
		return -errno;
	}
	return 0;
}

/* Which of the two generations the pinned ARRAY_OF_MAPS holds now. */
static int live_generation(struct profiler *p)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), zero = 0, live_id;

	if (bpf_map_lookup_elem(p->fd[MAP_ACTIVE], &zero, &live_id))
		return -errno;
	if (bpf_obj_get_info_by_fd(p->fd[MAP_COUNTS_1], &info, &len))
		return -errno;
	return info.id == live_id ? 1 : 0;
}

static int check_layout(const char *dir, int control_fd)
{
	struct aperture_control ctl;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(control_fd, &zero, &ctl))
		return -errno;
	if (ctl.layout_version == APERTURE_LAYOUT_VERSION)
		return 0;
	log_error("pinned maps in %s have layout version %u, this aperture uses %u: "
		  "remove them with `aperture run --unpin --pin %s`",
		  dir, ctl.layout_version, APERTURE_LAYOUT_VERSION, dir);
	return -EPROTO;
}

/* The config the set runs with, so that e.g. the on-CPU period matches its perf events. */
static int read_pinned_config(struct profiler *p)
{
	__u32 zero = 0;

	if (!p->ops->config.size)
		return 0;
	return bpf_map_lookup_elem(p->fd[MAP_CONFIG], &zero, profiler_config(&p->opts, p->ops)) ? -errno : 0;
}

int profiler_open_pinned(struct profiler **out, struct run *run, const struct profiler_ops *ops,
			 const struct profiler_opts *opts, const char *dir)
{
	struct profiler *p = calloc_logged(1, sizeof(*p));
	const char *name = ops->name;
	int err, live;

	*out = NULL;
	if (!p)
		return -ENOMEM;
	p->ops = ops;
	p->run = run;
	p->opts = *opts;
	p->pinned = true;
	for (int i = 0; i < MAP_SLOT_MAX; i++)
		p->fd[i] = -1;
	err = open_pin(dir, NULL, "control", &p->fd[MAP_CONTROL]);
	err = err ?: check_layout(dir, p->fd[MAP_CONTROL]);
	for (int i = 0; i < MAP_SLOT_MAX && !err; i++)
		if (p->fd[i] < 0)
			err = open_pin(dir, map_slots[i].shared ? NULL : name, map_slots[i].pin, &p->fd[i]);
	if (err)
		goto fail;
	err = read_pinned_config(p);
	if (err)
		goto fail;
	/* Loaded with DWARF unwinding: its rows map was sized for it (one row when off). */
	p->dwarf = map_max_entries(p->fd[MAP_UNWIND_ROWS]) > 1;
	p->python = p->dwarf && map_max_entries(p->fd[MAP_PYTHON_PROCS]) > 1;
	if (run)	/* as profiler_take_maps for a loaded one: the first taken over gives the run its maps */
		run_take_shared(run, p);
	live = live_generation(p);
	if (live < 0) {
		err = live;
		goto fail;
	}
	p->live = live;
	*out = p;
	return 0;
fail:
	profiler_close(p);
	return err;
}

/* max_entries of the map pinned as DIR/@prefix_@name, or 0. */
static uint32_t pinned_map_size(const char *dir, const char *prefix, const char *name)
{
	uint32_t size;
	int fd = -1;

	if (open_pin(dir, prefix, name, &fd))
		return 0;
	size = map_max_entries(fd);
	close(fd);
	return size;
}

int pin_read_fixed(const char *dir, struct profiler_opts *loaded)
{
	int control_fd = -1, err;

	loaded->kinds = 0;
	loaded->stacks_entries = loaded->counts_entries = 0;
	for (int i = 0; profilers[i]; i++)
		if (pin_present(dir, profilers[i]->name))
			loaded->kinds |= 1u << profilers[i]->id;
	if (!loaded->kinds)
		return -ENOENT;
	err = open_pin(dir, NULL, "control", &control_fd);
	err = err ?: check_layout(dir, control_fd);
	if (control_fd >= 0)
		close(control_fd);
	if (!err) {	/* rows > 1: loaded with DWARF unwinding (UNWIND_AUTO would say the same here) */
		uint32_t rows = pinned_map_size(dir, NULL, map_slots[MAP_UNWIND_ROWS].pin);

		loaded->unwind = rows > 1 ? UNWIND_DWARF : UNWIND_FP;
		loaded->unwind_rows = rows > 1 ? rows : 0;
		loaded->stack_mode = STACK_MODE_BOTH;	/* live; the rows say what was loaded */
	}
	for (int i = 0; profilers[i] && !err; i++) {
		const struct profiler_ops *ops = profilers[i];
		int config_fd = -1;
		__u32 zero = 0;

		if (!(loaded->kinds & (1u << ops->id)))
			continue;
		if (!loaded->stacks_entries) {	/* one size for every kind of a set */
			loaded->stacks_entries = pinned_map_size(dir, ops->name, map_slots[MAP_STACKS].pin);
			loaded->counts_entries = pinned_map_size(dir, ops->name, map_slots[MAP_TOTALS].pin);
		}
		if (!ops->config.size)
			continue;
		err = open_pin(dir, ops->name, map_slots[MAP_CONFIG].pin, &config_fd);
		if (!err && bpf_map_lookup_elem(config_fd, &zero, profiler_config(loaded, ops)))
			err = -errno;
		if (config_fd >= 0)
			close(config_fd);
	}
	return err;
}

/* Takes over @ops' pins under DIR when they are there, else loads, attaches and pins. */
static int start_one(struct pin_txn *txn, const struct profiler_ops *ops,
		     const struct profiler_opts *opts, struct profiler **out)
{
	int err;

	if (pin_present(txn->dir, ops->name)) {
		err = profiler_open_pinned(out, txn->run, ops, opts, txn->dir);
		if (err)
			return err;
		/* Not "took over": scripts wait for the caller's line, said once its own control writes are done. */
		log_warn("%s: taking over the pinned programs in %s (they kept counting)", ops->name, txn->dir);
		note_missing_iterators(txn, *out);
		if (txn->opened)
			txn->opened(*out, txn->ctx);
		return 0;
	}
	err = profiler_open(out, txn->run, ops, opts);
	if (err)
		return err;
	err = txn_add((void ***)&txn->fresh, &txn->nfresh, *out);
	if (err) {
		profiler_close(*out);
		*out = NULL;
		return err;
	}
	if (txn->opened)
		txn->opened(*out, txn->ctx);
	return profiler_attach(*out) ?: profiler_pin(txn, *out);
}

int pin_new_links(const char *dir, struct profiler *p)
{
	char name[32], path[PATH_MAX];
	int err = 0, number = p->nlinks_pinned;

	for (int i = p->nlinks_pinned; i < p->nlinks; i++) {
		/* The first free NAME_link_N: a taken-over set's are numbered by the daemon that made them. */
		do {
			snprintf(name, sizeof(name), "link_%d", number++);
			err = pin_path(path, dir, p->ops->name, name);
		} while (!err && access(path, F_OK) == 0);
		p->nlinks_pinned = i + 1;	/* tried once: a link not pinned lives as long as this loader */
		p->links_pinned = true;
		if (!err && bpf_obj_pin(bpf_link__fd(p->links[i]), path))
			err = -errno;
		if (err)
			log_warn("%s: cannot pin %s: %s (it stops when this daemon does)", p->ops->name, path,
				 strerror(-err));
	}
	return err;
}

#define TXN_MAX_PROGS 64
#define TXN_UNLOAD_WAIT_MS 2000

/* The ids of the programs the fresh profilers loaded (at most @max), to see them go. */
static int txn_prog_ids(const struct pin_txn *txn, __u32 *ids, int max)
{
	struct bpf_program *prog;
	int n = 0;

	for (int i = 0; i < txn->nfresh; i++) {
		bpf_object__for_each_program(prog, txn->fresh[i]->obj) {
			struct bpf_prog_info info = {};
			__u32 len = sizeof(info);
			int fd = bpf_program__fd(prog);

			if (n < max && fd >= 0 && bpf_obj_get_info_by_fd(fd, &info, &len) == 0)
				ids[n++] = info.id;
		}
	}
	return n;
}

/* How many of @ids are still loaded. */
static int progs_loaded(const __u32 *ids, int n)
{
	int loaded = 0;

	for (int i = 0; i < n; i++) {
		int fd = bpf_prog_get_fd_by_id(ids[i]);

		if (fd >= 0) {
			close(fd);
			loaded++;
		}
	}
	return loaded;
}

/*
 * Closing a link only starts its release: since 6.9 the kernel puts a tracing or raw
 * tracepoint link's program after an RCU grace period (bpf_link_free's dealloc_deferred),
 * and a removed pin's link is freed from a work item.  A failed start waits for that, so
 * that when it returns nothing it loaded is left, not only nothing it pinned.
 */
static void txn_wait_unloaded(const __u32 *ids, int n)
{
	int left = progs_loaded(ids, n);

	for (int ms = 0; left && ms < TXN_UNLOAD_WAIT_MS; ms += 10) {
		usleep(10 * 1000);
		left = progs_loaded(ids, n);
	}
	if (left)
		log_warn("%d of the programs this start loaded are still loaded after %d ms "
			 "(the kernel frees them after its grace period)", left, TXN_UNLOAD_WAIT_MS);
}

/* Undoes a failed start: its pins go, its programs are detached and unloaded. */
static void txn_abort(struct pin_txn *txn, struct profiler **profs, int n)
{
	__u32 ids[TXN_MAX_PROGS];
	int nids = txn_prog_ids(txn, ids, TXN_MAX_PROGS);

	for (int i = txn->npaths - 1; i >= 0; i--)
		if (unlink(txn->paths[i]) && errno != ENOENT)
			log_error("cannot remove %s: %s", txn->paths[i], strerror(errno));
	if (txn->made_dir && rmdir(txn->dir))
		log_error("cannot remove %s: %s", txn->dir, strerror(errno));
	for (int i = 0; i < txn->nfresh; i++)
		txn->fresh[i]->links_pinned = false;	/* close detaches them now */
	for (int i = 0; i < n; i++) {
		profiler_close(profs[i]);
		profs[i] = NULL;
	}
	txn_wait_unloaded(ids, nids);
}

static void txn_free(struct pin_txn *txn)
{
	for (int i = 0; i < txn->npaths; i++)
		free(txn->paths[i]);
	free(txn->paths);
	free(txn->fresh);
}

int pin_start(const char *dir, struct run *run, const struct profiler_ops *const *ops, int n,
	      const struct profiler_opts *opts, struct profiler **profs, pin_opened_fn opened, void *ctx)
{
	struct pin_txn txn = { .dir = dir, .run = run, .opened = opened, .ctx = ctx };
	int err = prepare_dir(dir, &txn.made_dir);

	for (int i = 0; i < n; i++)
		profs[i] = NULL;
	if (!err && run && run->lock_fd < 0)
		err = pin_lock_open(dir, &run->lock_fd);
	for (int i = 0; i < n && !err; i++)
		if (!features_require("run --pin", ops[i]->pin_needs))
			err = -EOPNOTSUPP;
	heap_keep_begin();	/* one profiler's load reuses the last one's pages */
	for (int i = 0; i < n && !err; i++) {
		err = start_one(&txn, ops[i], opts, &profs[i]);
		if (err)
			log_error("%s: cannot start pinned under %s (%s)", ops[i]->name, dir, strerror(-err));
	}
	heap_keep_end();
	err = err ?: pin_actives(&txn);
	if (err) {
		txn_abort(&txn, profs, n);
		log_error("nothing this start pinned is left in %s", dir);
	} else if (txn.missing[0]) {
		log_warn("pinned without %s; `aperture dump --pin %s` prints the same folded lines",
			 txn.missing, dir);
	}
	txn_free(&txn);
	return err;
}

/* Deletes every entry of the hash map @fd; nothing else writes it meanwhile. */
static int map_clear(int fd, size_t key_size)
{
	char key[64], next[64];
	void *prev = NULL;

	if (key_size > sizeof(key))
		return -EINVAL;
	while (bpf_map_get_next_key(fd, prev, next) == 0) {
		if (prev && bpf_map_delete_elem(fd, prev))
			return -errno;
		memcpy(key, next, key_size);
		prev = key;
	}
	if (prev && bpf_map_delete_elem(fd, prev))
		return -errno;
	return 0;
}

int pin_lock_open(const char *dir, int *fd)
{
	*fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (*fd < 0) {
		log_error("cannot open %s: %s", dir, strerror(errno));
		return -errno;
	}
	return 0;
}

static int set_enabled(int control_fd, __u32 enabled, __u32 *was)
{
	struct aperture_control ctl;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(control_fd, &zero, &ctl))
		return -errno;
	if (was)
		*was = ctl.enabled;
	ctl.enabled = enabled;
	return bpf_map_update_elem(control_fd, &zero, &ctl, BPF_ANY) ? -errno : 0;
}

int pin_reset(const char *dir)
{
	__u32 enabled = 0;
	int control_fd = -1, lock_fd = -1, err;

	err = open_pin(dir, NULL, "control", &control_fd);
	err = err ?: check_layout(dir, control_fd);
	err = err ?: pin_lock_open(dir, &lock_fd);
	/* Held from the pause to the resume: a steering write between them would be undone. */
	if (!err && flock(lock_fd, LOCK_EX))
		err = -errno;
	err = err ?: set_enabled(control_fd, 0, &enabled);
	if (err)
		goto out;
	/*
	 * A program that read the old control value may still be running: the
	 * worst it does is add one event that refers to a stack deleted here,
	 * which the iterators then print without that half of the stack.
	 */
	for (int i = 0; profilers[i] && !err; i++) {
		int totals_fd = -1, stacks_fd = -1;

		if (!pin_present(dir, profilers[i]->name))
			continue;
		err = open_pin(dir, profilers[i]->name, map_slots[MAP_TOTALS].pin, &totals_fd);
		err = err ?: open_pin(dir, profilers[i]->name, map_slots[MAP_STACKS].pin, &stacks_fd);
		err = err ?: map_clear(totals_fd, sizeof(struct sample_key));
		err = err ?: map_clear(stacks_fd, sizeof(__u64));
		if (totals_fd >= 0)
			close(totals_fd);
		if (stacks_fd >= 0)
			close(stacks_fd);
	}
	if (set_enabled(control_fd, enabled, NULL) && !err)
		err = -EIO;
	if (err)
		log_error("cannot reset the maps pinned in %s: %s", dir, strerror(-err));
out:
	if (lock_fd >= 0)
		close(lock_fd);	/* and the lock with it */
	if (control_fd >= 0)
		close(control_fd);
	return err;
}

int pin_remove_all(const char *dir)
{
	char path[PATH_MAX];
	struct dirent *entry;
	DIR *d;
	int err = 0;

	if (access(dir, F_OK))
		return 0;	/* nothing pinned */
	if (!is_bpffs(dir)) {
		log_error("%s is not a bpffs directory: refusing to remove anything", dir);
		return -ENOTDIR;
	}
	d = opendir(dir);
	if (!d)
		return -errno;
	while ((entry = readdir(d))) {
		if (entry->d_name[0] == '.')
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, entry->d_name) >= (int)sizeof(path) ||
		    unlink(path)) {
			log_error("cannot remove %s: %s", path, strerror(errno));
			err = -EIO;
		}
	}
	closedir(d);
	if (!err && rmdir(dir)) {
		log_error("cannot remove %s: %s", dir, strerror(errno));
		err = -errno;
	}
	return err;
}
