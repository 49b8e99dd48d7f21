/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Opening a file a profiled process names (a path in its mount namespace, a
 * file it maps, its /tmp/perf-PID.map): aperture runs as root and the
 * process may be hostile, so every such open goes through here.  The path is
 * resolved inside the process's root (an absolute symlink in a container stays
 * in the container), no magic link is followed, the open never blocks (a
 * FIFO), and only a regular file of at most the size asked for is returned.
 */
#ifndef SAFE_OPEN_H
#define SAFE_OPEN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

/* target_open's flags. */
#define TARGET_NOFOLLOW	1u	/* the last component may not be a symlink (a file the process writes) */

/*
 * @path (absolute, as @pid sees it) opened read-only inside @pid's root, its
 * stat in @st (may be NULL).  The fd (O_NONBLOCK, O_CLOEXEC), or -errno:
 * -ELOOP a symlink refused, -EINVAL not a regular file, -EFBIG larger than
 * @max_size, -EXDEV a path that leaves the root (the fallback only).
 */
int target_open(uint32_t pid, const char *path, uint64_t max_size, unsigned int flags, struct stat *st);

/*
 * @pid's root directory (an O_PATH fd, or -errno): it stays usable after the
 * process exits, for files looked up later (debug files at symbolization).
 */
int target_root_open(uint32_t pid);
/* target_open in the root @rootfd (target_root_open's), which it does not take. */
int target_open_in(int rootfd, const char *path, uint64_t max_size, unsigned int flags, struct stat *st);

/*
 * The file @pid maps at [@start, @end), whose maps line names @path: through
 * /proc/PID/map_files (the mapped file itself, deleted or not), else
 * target_open(@path).  The same checks; the fd or -errno.
 */
int target_open_mapped(uint32_t pid, uint64_t start, uint64_t end, const char *path, uint64_t max_size,
		       struct stat *st);

/*
 * Whether openat2(RESOLVE_IN_ROOT) is used (probed on the first open: 5.6+).
 * Without it, a path is walked one component at a time with O_NOFOLLOW,
 * refusing every symlink and "..".  Tests force the fallback with false.
 */
bool target_open_has_openat2(void);
void target_open_force_fallback(bool fallback);

#endif /* SAFE_OPEN_H */
