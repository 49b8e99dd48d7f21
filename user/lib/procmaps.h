/* SPDX-License-Identifier: GPL-2.0 */
/* Finding a shared library a process maps (or the host's), for uprobes on it. */
#ifndef PROCMAPS_H
#define PROCMAPS_H

#include <stdbool.h>
#include <stddef.h>

/*
 * The first file @pid maps for which @match(path) is true, as a path that
 * reaches it from here: through /proc/PID/root, so that a container's own
 * copy is the one used.  False when there is none (or @path is too small).
 */
bool proc_mapped_file(int pid, bool (*match)(const char *path), char *path, size_t len);

/* The first of @candidates (@n of them) that can be read, into @path. */
bool first_readable(const char *const *candidates, size_t n, char *path, size_t len);

#endif /* PROCMAPS_H */
