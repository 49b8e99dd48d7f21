/* SPDX-License-Identifier: GPL-2.0 */
/* Finding a shared library a process maps (or the host's), for uprobes on it. */
#ifndef PROCMAPS_H
#define PROCMAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* /proc/@pid/maps opened for reading, or NULL with errno set (ENOENT: the process is gone). */
FILE *proc_maps_open(uint32_t pid);

/*
 * The first file @pid maps for which @match(path) is true, as a path that
 * reaches it from here: through /proc/PID/root, so that a container's own
 * copy is the one used.  False when there is none (or @path is too small).
 */
bool proc_mapped_file(int pid, bool (*match)(const char *path), char *path, size_t len);

/*
 * Each file @pid maps for which @match(path) is true, as proc_mapped_file
 * gives it, to @fn(path, @ctx) (once per run of lines of the same file).
 * False when the maps cannot be read (the process is gone).
 */
bool proc_mapped_files(int pid, bool (*match)(const char *path), void (*fn)(const char *path, void *ctx),
		       void *ctx);

/* The first of @candidates (@n of them) that can be read, into @path. */
bool first_readable(const char *const *candidates, size_t n, char *path, size_t len);

/*
 * @pid's start time (/proc/PID/stat field 22, clock ticks since boot): with
 * the pid, it names one process, whatever reuses the pid later.  0 when the
 * process is gone or its stat unreadable.
 */
uint64_t proc_start_time(uint32_t pid);
/* @pid's parent (field 4), or 0 when it is gone. */
uint32_t proc_parent(uint32_t pid);

#endif /* PROCMAPS_H */
