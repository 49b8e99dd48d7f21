// SPDX-License-Identifier: GPL-2.0
/*
 * The daemon's local outputs (run --output-dir DIR): the files written and rotated in DIR.
 * DIR may be shared with other users (or written by a
 * compromised workload's owner), so no name in it is trusted: files are
 * created with O_EXCL | O_NOFOLLOW through the directory's fd, renamed into
 * place without replacing anything (a name already taken, a planted symlink
 * included, gets the next "-N" name), and rotation deletes only regular files
 * of our own naming, owner and mode (0600, ours), found by fstatat without
 * following links.  A directory others can write to (or that is not ours) is
 * refused at the start: there another user could fill it, or replace a file
 * between our check and the delete.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "outdir.h"
#include "util.h"

#define TMP_PREFIX ".aperture-tmp-"
#define NAME_TRIES 10
#define FILE_MODE 0600	/* what create_temp makes; rotation deletes nothing else */

int outdir_open(struct outdir *d, const char *path, const struct exporter *exporter)
{
	struct stat st = { 0 };

	if (mkdir(path, 0700) && errno != EEXIST) {
		log_error("--output-dir %s: %s", path, strerror(errno));
		return -errno;
	}
	d->dirfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (d->dirfd < 0) {
		log_error("--output-dir %s: %s", path, errno == ENOTDIR || errno == ELOOP ?
			  "not a directory (a symlink is not followed)" : strerror(errno));
		return -errno;
	}
	if (fstat(d->dirfd, &st) || st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		log_error("--output-dir %s: %s: use a directory of your own that only you can write to "
			  "(mkdir -m 700 DIR)", path, st.st_uid != geteuid() ? "not owned by this user" :
			  "writable by group or others");
		close(d->dirfd);
		d->dirfd = -1;
		return -EPERM;
	}
	d->path = path;
	d->exporter = exporter;
	return 0;
}

void outdir_close(struct outdir *d)
{
	if (d->dirfd >= 0)
		close(d->dirfd);
	d->dirfd = -1;
}

static const char *suffix_of(const struct outdir *d)
{
	return d->exporter->suffixes && d->exporter->suffixes[0] ? d->exporter->suffixes[0] : "";
}

/* A fresh temporary file in DIR, 0600, its name in @name; the fd or a negative errno. */
static int create_temp(const struct outdir *d, char *name, size_t len)
{
	static unsigned int seq;

	for (int tries = 0; tries < NAME_TRIES; tries++) {
		int fd;

		snprintf(name, len, TMP_PREFIX "%d-%u", (int)getpid(), seq++);
		fd = openat(d->dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, FILE_MODE);
		if (fd >= 0 && fchmod(fd, FILE_MODE)) {	/* whatever the umask took: rotation knows ours by it */
			int err = -errno;

			close(fd);
			unlinkat(d->dirfd, name, 0);
			return err;
		}
		if (fd >= 0 || errno != EEXIST)
			return fd >= 0 ? fd : -errno;
	}
	return -EEXIST;
}

/*
 * Renames @tmp to @final, or to @final with "-2", "-3"... inserted before the
 * suffix when the name is taken; never replaces what is there.
 */
static int publish(const struct outdir *d, const char *tmp, const char *stem, char *final, size_t len)
{
	for (int n = 1; n <= NAME_TRIES; n++) {
		if (n == 1)
			snprintf(final, len, "%s%s", stem, suffix_of(d));
		else
			snprintf(final, len, "%s-%d%s", stem, n, suffix_of(d));
		if (renameat2(d->dirfd, tmp, d->dirfd, final, RENAME_NOREPLACE) == 0)
			return 0;
		if (errno == EINVAL) {	/* a file system without RENAME_NOREPLACE: link does not replace either */
			if (linkat(d->dirfd, tmp, d->dirfd, final, 0) == 0)
				return unlinkat(d->dirfd, tmp, 0), 0;
		}
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

/* Writes through /proc/self/fd/N: the exporters take a path, and that path is the file we created, not a name. */
static int export_to_fd(const struct outdir *d, const struct profile *prof, int fd, const char *tmp)
{
	struct export_opts opts = { .value_index = -1 };
	char path[64];
	int err;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	err = d->exporter->write(prof, path, &opts);
	if (!err && fsync(fd))
		err = -errno;
	if (err)
		log_error("--output-dir %s: cannot write %s: %s", d->path, tmp, strerror(-err));
	return err;
}

struct out_file {
	char name[256];
	struct timespec mtime;
	uint64_t bytes;
};

static int by_age(const void *a, const void *b)
{
	const struct out_file *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return strcmp(x->name, y->name);
}

static bool ours(const struct outdir *d, const char *name, const char *kind)
{
	size_t len = strlen(kind);

	return strncmp(name, kind, len) == 0 && name[len] == '-' && str_ends_with(name, suffix_of(d));
}

/* @kind's regular files in DIR (a malloc'ed array, oldest first); the count or a negative errno. */
static int list_files(const struct outdir *d, const char *kind, struct out_file **out)
{
	int fd = dup(d->dirfd), n = 0, room = 0;
	struct out_file *files = NULL;
	DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;

	if (!dir) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	rewinddir(dir);	/* the dup shares the directory's offset, at its end since the last listing */
	while ((de = readdir(dir))) {
		struct stat st;

		if (!ours(d, de->d_name, kind) || strlen(de->d_name) >= sizeof(files->name) ||
		    fstatat(d->dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode) ||
		    st.st_uid != geteuid() || (st.st_mode & 07777) != FILE_MODE)
			continue;	/* not a file we wrote */
		if (n == room) {
			struct out_file *more = realloc(files, (room = room ? 2 * room : 64) * sizeof(*files));

			if (!more) {
				n = -ENOMEM;
				break;
			}
			files = more;
		}
		snprintf(files[n].name, sizeof(files[n].name), "%s", de->d_name);
		files[n].mtime = st.st_mtim;
		files[n++].bytes = (uint64_t)st.st_size;
	}
	closedir(dir);
	if (n < 0) {
		free(files);
		return n;
	}
	if (n > 1)	/* files is NULL when the kind has no file (all deleted by hand) */
		qsort(files, n, sizeof(*files), by_age);
	*out = files;
	return n;
}

void outdir_usage(const struct outdir *d, const char *kind, uint64_t *nfiles, uint64_t *bytes)
{
	struct out_file *files = NULL;
	int n = list_files(d, kind, &files);

	*nfiles = n > 0 ? n : 0;
	*bytes = 0;
	for (int i = 0; i < n; i++)
		*bytes += files[i].bytes;
	free(files);
}

/* Deletes @kind's oldest files until at most keep_files of them and keep_bytes are left. */
static void rotate(const struct outdir *d, const char *kind)
{
	struct out_file *files = NULL;
	uint64_t bytes = 0;
	int n = list_files(d, kind, &files), first = 0;

	for (int i = 0; i < n; i++)
		bytes += files[i].bytes;
	while (first < n && ((d->keep_files && (uint64_t)(n - first) > d->keep_files) ||
			     (d->keep_bytes && bytes > d->keep_bytes))) {
		if (unlinkat(d->dirfd, files[first].name, 0) && errno != ENOENT)
			log_warn("--output-dir %s: cannot delete %s: %s", d->path, files[first].name, strerror(errno));
		bytes -= files[first++].bytes;
	}
	free(files);
}

int outdir_write(struct outdir *d, const struct profile *prof, time_t when)
{
	char tmp[64], stem[96], final[128];
	struct tm tm;
	int fd, err;

	gmtime_r(&when, &tm);
	snprintf(stem, sizeof(stem), "%s-", prof->kind);
	strftime(stem + strlen(stem), sizeof(stem) - strlen(stem), "%Y%m%dT%H%M%SZ", &tm);
	fd = create_temp(d, tmp, sizeof(tmp));
	if (fd < 0) {
		log_error("--output-dir %s: cannot create a file: %s", d->path, strerror(-fd));
		return fd;
	}
	err = export_to_fd(d, prof, fd, tmp);
	close(fd);
	if (!err) {
		err = publish(d, tmp, stem, final, sizeof(final));
		if (err)
			log_error("--output-dir %s: cannot name %s%s: %s", d->path, stem, suffix_of(d), strerror(-err));
	}
	if (err) {
		unlinkat(d->dirfd, tmp, 0);
		return err;
	}
	rotate(d, prof->kind);
	return 0;
}

static int output_write(void *state, const struct profile *prof)
{
	struct outdir *d = state;
	int err = outdir_write(d, prof, (time_t)((prof->time_ns + prof->duration_ns) / 1000000000ull));

	if (err)
		d->write_errors++;
	else
		d->files_written++;
	return err;
}

static void output_health(void *state, struct usage_line *line)
{
	const struct outdir *d = state;

	usage_append(line, "files: %" PRIu64 " written, %" PRIu64 " failed; ", d->files_written, d->write_errors);
}

static void output_close(void *state)
{
	outdir_close(state);
}

const struct output_ops outdir_output = {
	.name = "output-dir",
	.write = output_write,
	.health = output_health,
	.close = output_close,
};
