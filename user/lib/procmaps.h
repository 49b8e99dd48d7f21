/* SPDX-License-Identifier: GPL-2.0 */
/* Finding a shared library a process maps (or the host's), for uprobes on it. */
#ifndef PROCMAPS_H
#define PROCMAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <limits.h>
#include <stdio.h>

#include <sys/stat.h>

/* /proc/@pid/maps opened for reading, or NULL with errno set (ENOENT: the process is gone). */
FILE *proc_maps_open(uint32_t pid);

/* One line of /proc/PID/maps. */
struct maps_line {
	uint64_t start, end, offset, ino;
	unsigned int major, minor;
	char perms[5];		/* "r-xp" */
	const char *path;	/* the 6th field, in the line: "" (anonymous), "[heap]", "[anon:NAME]", "/usr/lib/..." */
};

/*
 * Parses @line (its newline cut) into @m; false for a line that is not one.
 * The path is the field after the inode, never the first '/' of the line: an
 * anonymous mapping's name ("[anon:/x/lib.so]", prctl PR_SET_VMA_ANON_NAME) is
 * the process's to choose.
 */
bool maps_line_parse(char *line, struct maps_line *m);

/*
 * Each line of @f (a /proc/PID/maps, or for the fuzzers any bytes) that
 * maps_line_parse() takes, to @fn(@m, @ctx), until @fn returns non-zero: that
 * value, or 0 at the end.  The one reader of maps lines: by getline, since a
 * file name may be longer than any fixed buffer, and the rest of a line cut in
 * two would be read as a line of its own.  @m->path lives until @fn returns.
 */
int maps_each(FILE *f, int (*fn)(const struct maps_line *m, void *ctx), void *ctx);

/* Whether @m maps a file by a path (inode not 0, an absolute path); memfds are such too. */
bool maps_line_is_file(const struct maps_line *m);

/* A file a process maps, opened as target_open does, checked to be the one mapped (its inode). */
struct mapped_file {
	char path[PATH_MAX + 32];	/* "/proc/PID/root/usr/lib/libc.so.6": for messages */
	char fd_path[32];		/* "/proc/self/fd/N": what to hand libbpf and the kernel */
	int fd;
	struct stat st;
};

/*
 * Each file @pid maps for which @match(path) is true (path as the maps line
 * names it), to @fn(file, @ctx) until it returns false; the fd is closed
 * after.  A name that matches but is not the file mapped (an anonymous
 * mapping's or a memfd's name, a deleted or swapped file, not a regular one)
 * adds one to *@refused.  False when the maps cannot be read (the process is gone).
 */
bool proc_mapped_files(int pid, bool (*match)(const char *path),
		       bool (*fn)(const struct mapped_file *file, void *ctx), void *ctx, unsigned int *refused);

/* The first of @candidates (@n of them) that can be read, into @path. */
bool first_readable(const char *const *candidates, size_t n, char *path, size_t len);

/*
 * @pid's start time (/proc/PID/stat field 22, clock ticks since boot): with
 * the pid, it names one process, whatever reuses the pid later.  0 when the
 * process is gone or its stat unreadable.
 */
uint64_t proc_start_time(uint32_t pid);

/* What /proc/PID/stat says of a process's CPU use: one read. */
struct proc_cpu {
	uint64_t cpu_ticks;	/* utime + stime, in sysconf(_SC_CLK_TCK) ticks */
	uint64_t threads;
	uint64_t start_time;	/* tells a reused pid apart */
};

/* false when the process is gone. */
bool proc_cpu_read(uint32_t pid, struct proc_cpu *out);
/*
 * Whether @pid runs: not gone, not a zombie (exited, its maps already empty,
 * waiting for its parent to reap it; a process whose main thread alone ended
 * runs on) and, unless @start_time is 0, the process that started then and
 * not another under a reused pid.  One read of /proc/@pid/stat.
 */
bool proc_running(uint32_t pid, uint64_t start_time);
/* @pid's parent (field 4), or 0 when it is gone. */
uint32_t proc_parent(uint32_t pid);

/* What /proc/PID/status says of a process's ids and signals. */
struct proc_status {
	uint32_t ns_pid;	/* the pid in its own namespace (last NSpid field): its /tmp files are named so */
	uint32_t uid, euid;	/* real and effective, as seen from here */
	uint64_t sig_caught;	/* SigCgt */
	bool uids_known;
};

/* @pid's status into @st; ns_pid is @pid and the rest 0 when it cannot be read (false). */
bool proc_status_read(uint32_t pid, struct proc_status *st);
/* The pid @pid has in its own namespace (the last NSpid field), or @pid: its /tmp/perf-PID.map's. */
uint32_t proc_ns_pid(uint32_t pid);

#endif /* PROCMAPS_H */
