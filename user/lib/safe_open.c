// SPDX-License-Identifier: GPL-2.0
/*
 * target_open(): a file a profiled process names, opened inside its root without following
 * a link out of it (safe_open.h).  With openat2 (Linux 5.6+) the kernel does
 * the containment: RESOLVE_IN_ROOT resolves "/", ".." and absolute symlinks
 * against the process's root, RESOLVE_NO_MAGICLINKS refuses /proc/self/fd
 * style links out of it.  Without it the path is walked here, one component
 * at a time from the root, and any symlink or ".." is refused: stricter than
 * needed (a distribution's relative .build-id links are not followed), never
 * looser.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include "safe_open.h"

#define OPEN_FLAGS (O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)

/* 0: not probed yet, 1: openat2 resolves in a root, -1: it does not (or a test said so). */
static int openat2_state;

static long sys_openat2(int dirfd, const char *path, uint64_t flags, uint64_t resolve)
{
	struct open_how how = { .flags = flags, .resolve = resolve };

	return syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
}

bool target_open_has_openat2(void)
{
	if (!openat2_state) {
		long fd = sys_openat2(AT_FDCWD, "/", O_PATH | O_CLOEXEC, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);

		openat2_state = fd >= 0 ? 1 : -1;	/* ENOSYS; EPERM under an old seccomp profile */
		if (fd >= 0)
			close((int)fd);
	}
	return openat2_state > 0;
}

void target_open_force_fallback(bool fallback)
{
	openat2_state = fallback ? -1 : 0;
}

/* @path walked from @rootfd: directories by O_PATH | O_NOFOLLOW, no "..", the last with @last_flags. */
static int walk_in_root(int rootfd, const char *path, int last_flags)
{
	char buf[PATH_MAX], *save = NULL, *comp, *next;
	int dirfd = rootfd, fd;

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	comp = strtok_r(buf, "/", &save);
	while (comp) {
		next = strtok_r(NULL, "/", &save);
		if (strcmp(comp, "..") == 0) {
			fd = -EXDEV;
		} else if (next) {
			fd = openat(dirfd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			/* a symlink opened by O_PATH | O_NOFOLLOW is no directory: ENOTDIR, said as ELOOP */
			fd = fd >= 0 ? fd : errno == ENOTDIR ? -ELOOP : -errno;
		} else {
			fd = openat(dirfd, comp, last_flags);
			fd = fd >= 0 ? fd : -errno;
		}
		if (dirfd != rootfd)
			close(dirfd);
		if (fd < 0 || !next)
			return fd;
		dirfd = fd;
		comp = next;
	}
	return -EISDIR;	/* "/" or only slashes */
}

/* @fd kept when it is a regular file of at most @max_size; else closed and -errno. */
static int check_regular(int fd, uint64_t max_size, struct stat *st)
{
	struct stat own;

	if (fd < 0)
		return fd;
	st = st ? st : &own;
	if (fstat(fd, st)) {
		int err = -errno;

		close(fd);
		return err;
	}
	if (S_ISREG(st->st_mode) && (uint64_t)st->st_size <= max_size)
		return fd;
	close(fd);
	return S_ISREG(st->st_mode) ? -EFBIG : S_ISDIR(st->st_mode) ? -EISDIR : -EINVAL;
}

int target_root_open(uint32_t pid)
{
	char root[32];
	int rootfd;

	snprintf(root, sizeof(root), "/proc/%" PRIu32 "/root", pid);
	rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	return rootfd;
}

int target_open_in(int rootfd, const char *path, uint64_t max_size, unsigned int flags, struct stat *st)
{
	int last_flags = OPEN_FLAGS | ((flags & TARGET_NOFOLLOW) ? O_NOFOLLOW : 0);
	int fd;

	if (path[0] != '/')
		return -EINVAL;
	if (target_open_has_openat2()) {
		fd = (int)sys_openat2(rootfd, path, (uint64_t)last_flags, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
		fd = fd >= 0 ? fd : -errno;
	} else {
		fd = walk_in_root(rootfd, path, last_flags | O_NOFOLLOW);
	}
	return check_regular(fd, max_size, st);
}

int target_open(uint32_t pid, const char *path, uint64_t max_size, unsigned int flags, struct stat *st)
{
	int rootfd, fd;

	if (path[0] != '/')
		return -EINVAL;
	rootfd = target_root_open(pid);
	if (rootfd < 0)
		return rootfd;
	fd = target_open_in(rootfd, path, max_size, flags, st);
	close(rootfd);
	return fd;
}

int target_open_mapped(uint32_t pid, uint64_t start, uint64_t end, const char *path, uint64_t max_size,
		       struct stat *st)
{
	char link[96];
	int fd;

	snprintf(link, sizeof(link), "/proc/%" PRIu32 "/map_files/%" PRIx64 "-%" PRIx64, pid, start, end);
	fd = open(link, OPEN_FLAGS);	/* the link is the kernel's, to the very file mapped */
	if (fd >= 0)
		return check_regular(fd, max_size, st);
	return target_open(pid, path, max_size, 0, st);
}
