// SPDX-License-Identifier: GPL-2.0
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/magic.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "iter.skel.h"
#include "pin.h"
#include "util.h"

#define BPFFS_ROOT "/sys/fs/bpf"

static bool is_bpffs(const char *path)
{
	struct statfs fs;

	return statfs(path, &fs) == 0 && fs.f_type == BPF_FS_MAGIC;
}

int pin_prepare_dir(const char *dir)
{
	if (!is_bpffs(BPFFS_ROOT) && strncmp(dir, BPFFS_ROOT "/", strlen(BPFFS_ROOT) + 1) == 0) {
		if (mount("bpf", BPFFS_ROOT, "bpf", 0, "mode=0700")) {
			log_error("cannot mount bpffs on %s: %s", BPFFS_ROOT, strerror(errno));
			return -errno;
		}
		log_warn("mounted bpffs on %s (it was not mounted)", BPFFS_ROOT);
	}
	if (mkdir(dir, 0700) && errno != EEXIST) {
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
	return 0;
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

static int pin_fd(int fd, const char *dir, const char *prefix, const char *name)
{
	char path[PATH_MAX];
	int err = pin_path(path, dir, prefix, name);

	if (err)
		return err;
	/* Shared maps are pinned by the first profiler; the others find them there. */
	if (!prefix && access(path, F_OK) == 0)
		return 0;
	if (bpf_obj_pin(fd, path)) {
		log_error("cannot pin %s: %s", path, strerror(errno));
		return -errno;
	}
	return 0;
}

/*
 * Loads the iterator program @prog_name of iter.bpf.c against @p's maps and
 * pins it as DIR/@pin_name; @map_fd: the map it walks (-1 for a task iterator).
 */
static int pin_iterator(struct profiler *p, const char *dir, const char *prog_name,
			const char *pin_name, int map_fd)
{
	union bpf_iter_link_info linfo = { .map.map_fd = map_fd };
	LIBBPF_OPTS(bpf_iter_attach_opts, opts);
	struct bpf_program *prog, *wanted = NULL;
	struct bpf_link *link = NULL;
	struct iter_bpf *skel;
	char path[PATH_MAX];
	int err;

	err = pin_path(path, dir, NULL, pin_name);
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
	err = wanted ? 0 : -ENOENT;	/* a profiler without an iterator: nothing to pin */
	err = err ?: bpf_map__reuse_fd(skel->maps.stacks, p->stacks_fd);
	err = err ?: bpf_map__reuse_fd(skel->maps.seen_tgids, p->seen_tgids_fd);
	err = err ?: iter_bpf__load(skel);
	if (err)
		goto cleanup;
	link = bpf_program__attach_iter(wanted, &opts);
	if (!link) {
		err = -errno;
		goto cleanup;
	}
	if (bpf_link__pin(link, path)) {
		err = -errno;
		log_error("cannot pin %s: %s", path, strerror(errno));
	}
cleanup:
	bpf_link__destroy(link);	/* the pin keeps it */
	iter_bpf__destroy(skel);
	return err == -ENOENT ? 0 : err;
}

static int pin_iterators(struct profiler *p, const char *dir)
{
	char name[64];
	int err;

	snprintf(name, sizeof(name), "%s_folded", p->ops->name);
	err = pin_iterator(p, dir, name, name, p->totals_fd);
	return err ?: pin_iterator(p, dir, "processes", "processes", -1);
}

int profiler_pin(struct profiler *p, const char *dir)
{
	const char *name = p->ops->name;
	char link_name[32];
	int err;

	err = pin_fd(p->control_fd, dir, NULL, "control");
	err = err ?: pin_fd(p->target_pids_fd, dir, NULL, "target_pids");
	err = err ?: pin_fd(p->counts_fd[0], dir, name, "counts_0");
	err = err ?: pin_fd(p->counts_fd[1], dir, name, "counts_1");
	err = err ?: pin_fd(p->totals_fd, dir, name, "totals");
	err = err ?: pin_fd(p->stacks_fd, dir, name, "stacks");
	err = err ?: pin_fd(p->stats_fd, dir, name, "stats");
	err = err ?: pin_fd(p->events_fd, dir, name, "events");
	for (int i = 0; i < p->nlinks && !err; i++) {
		snprintf(link_name, sizeof(link_name), "link_%d", i);
		err = pin_fd(bpf_link__fd(p->links[i]), dir, name, link_name);
		p->links_pinned |= !err;
	}
	err = err ?: pin_iterators(p, dir);
	/* Last: its presence tells a restarted daemon that the rest is there. */
	err = err ?: pin_fd(p->active_fd, dir, name, "active");
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

	if (bpf_map_lookup_elem(p->active_fd, &zero, &live_id))
		return -errno;
	if (bpf_obj_get_info_by_fd(p->counts_fd[1], &info, &len))
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

int profiler_open_pinned(struct profiler **out, const struct profiler_ops *ops,
			 const struct profiler_opts *opts, const char *dir)
{
	struct profiler *p = xcalloc(1, sizeof(*p));
	const char *name = ops->name;
	int err, live;

	*out = NULL;
	if (!p)
		return -ENOMEM;
	p->ops = ops;
	p->opts = *opts;
	p->pinned = true;
	p->control_fd = p->target_pids_fd = p->stacks_fd = p->stats_fd = -1;
	p->active_fd = p->counts_fd[0] = p->counts_fd[1] = p->totals_fd = p->events_fd = -1;
	p->seen_tgids_fd = -1;
	err = open_pin(dir, NULL, "control", &p->control_fd);
	err = err ?: check_layout(dir, p->control_fd);
	err = err ?: open_pin(dir, NULL, "target_pids", &p->target_pids_fd);
	err = err ?: open_pin(dir, name, "counts_0", &p->counts_fd[0]);
	err = err ?: open_pin(dir, name, "counts_1", &p->counts_fd[1]);
	err = err ?: open_pin(dir, name, "totals", &p->totals_fd);
	err = err ?: open_pin(dir, name, "stacks", &p->stacks_fd);
	err = err ?: open_pin(dir, name, "stats", &p->stats_fd);
	err = err ?: open_pin(dir, name, "events", &p->events_fd);
	err = err ?: open_pin(dir, name, "active", &p->active_fd);
	if (err)
		goto fail;
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

int profiler_open_pinned_or_new(struct profiler **out, const struct profiler_ops *ops,
				const struct profiler_opts *opts, const char *dir)
{
	int err;

	if (pin_present(dir, ops->name)) {
		err = profiler_open_pinned(out, ops, opts, dir);
		if (!err)
			log_warn("%s: took over the pinned programs in %s (they kept counting)",
				 ops->name, dir);
		return err;
	}
	err = profiler_open(out, ops, opts);
	err = err ?: profiler_attach(*out);
	err = err ?: profiler_pin(*out, dir);
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
	int control_fd = -1, err;

	err = open_pin(dir, NULL, "control", &control_fd);
	err = err ?: check_layout(dir, control_fd);
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
		err = open_pin(dir, profilers[i]->name, "totals", &totals_fd);
		err = err ?: open_pin(dir, profilers[i]->name, "stacks", &stacks_fd);
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
