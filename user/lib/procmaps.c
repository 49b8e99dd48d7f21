// SPDX-License-Identifier: GPL-2.0
/*
 * Reading /proc/PID: maps lines, the files a process maps (for uprobes), its parent, start
 * time and status (procmaps.h).
 */
#include <ctype.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "procmaps.h"
#include "safe_open.h"

/* A library probed is mmapped by libbpf to find a symbol: bounded as the symbolizer's ELF files. */
#define MAPPED_FILE_MAX_SIZE (4ull << 30)

bool maps_line_parse(char *line, struct maps_line *m)
{
	char perms[5] = "";	/* a perms word shorter than 4 leaves the rest 0 */
	int pos = 0;

	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %x:%x %" SCNu64 " %n", &m->start, &m->end,
		   perms, &m->offset, &m->major, &m->minor, &m->ino, &pos) < 7 || !pos)
		return false;
	if (line[pos] && !isspace((unsigned char)line[pos - 1]))
		return false;	/* "123/x": no field of its own after the inode */
	memcpy(m->perms, perms, sizeof(m->perms));
	line[pos + strcspn(line + pos, "\n")] = '\0';
	m->path = line + pos;
	return true;
}

/*
 * Not inlined: LTO would copy the loop into each of its six callers (a
 * per-line indirect call costs nothing beside getline and sscanf).
 */
__attribute__((noinline)) int maps_each(FILE *f, int (*fn)(const struct maps_line *m, void *ctx), void *ctx)
{
	struct maps_line m;
	char *line = NULL;
	size_t cap = 0;
	int ret = 0;

	while (!ret && getline(&line, &cap, f) > 0)
		if (maps_line_parse(line, &m))
			ret = fn(&m, ctx);
	free(line);
	return ret;
}

bool maps_line_is_file(const struct maps_line *m)
{
	return m->ino != 0 && m->path[0] == '/';
}

/*
 * @m's file opened in @pid's root, when it is the file mapped: a regular file
 * whose inode is the maps line's.  That refuses an anonymous mapping's name
 * ("[anon:/x/libcuda.so.1]", inode 0), a memfd's ("/memfd:NAME (deleted)",
 * which no path reaches), a deleted file, and a path swapped since the map.
 */
static bool mapped_file_open(int pid, const struct maps_line *m, struct mapped_file *out)
{
	if (!maps_line_is_file(m) ||
	    snprintf(out->path, sizeof(out->path), "/proc/%d/root%s", pid, m->path) >= (int)sizeof(out->path))
		return false;
	out->fd = target_open((uint32_t)pid, m->path, MAPPED_FILE_MAX_SIZE, 0, &out->st);
	if (out->fd < 0)
		return false;
	if (out->st.st_ino != m->ino) {
		close(out->fd);
		out->fd = -1;
		return false;
	}
	snprintf(out->fd_path, sizeof(out->fd_path), "/proc/self/fd/%d", out->fd);
	return true;
}

/* What mapped_files_in() walks the lines with. */
struct mapped_files_walk {
	int pid;
	bool (*match)(const char *path);
	bool (*fn)(const struct mapped_file *file, void *ctx);
	void *ctx;
	unsigned int *refused;
	char *last;		/* the path of the last file handed out */
};

static int mapped_file_line(const struct maps_line *m, void *ctx)
{
	struct mapped_files_walk *w = ctx;
	struct mapped_file file;
	bool more;

	if ((w->last && strcmp(m->path, w->last) == 0) || !w->match(m->path))
		return 0;
	free(w->last);
	w->last = strdup(m->path);
	if (!mapped_file_open(w->pid, m, &file)) {
		(*w->refused)++;
		return 0;
	}
	more = w->fn(&file, w->ctx);
	close(file.fd);
	return !more;
}

/*
 * Each file of @f (@pid's maps, or for the fuzzer any bytes) whose name
 * @match()es, to @fn, until it returns false.  A library is several lines in
 * a row (its segments): one call.  What matches but is not the file mapped
 * counts in *@refused.
 */
static void mapped_files_in(FILE *f, int pid, bool (*match)(const char *path),
			    bool (*fn)(const struct mapped_file *file, void *ctx), void *ctx, unsigned int *refused)
{
	struct mapped_files_walk w = { .pid = pid, .match = match, .fn = fn, .ctx = ctx, .refused = refused };

	maps_each(f, mapped_file_line, &w);
	free(w.last);
}

FILE *proc_maps_open(uint32_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	return fopen(path, "re");
}

bool proc_mapped_files(int pid, bool (*match)(const char *path),
		       bool (*fn)(const struct mapped_file *file, void *ctx), void *ctx, unsigned int *refused)
{
	FILE *f = proc_maps_open((uint32_t)pid);

	if (!f)
		return false;
	mapped_files_in(f, pid, match, fn, ctx, refused);
	fclose(f);
	return true;
}

bool first_readable(const char *const *candidates, size_t n, char *path, size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (access(candidates[i], R_OK) == 0)
			return snprintf(path, len, "%s", candidates[i]) < (int)len;
	return false;
}

/*
 * /proc/@pid/stat read into @buf: the text from the comm's last ')' on (the
 * comm may hold spaces and parens; field N >= 3 follows the (N - 2)th space
 * after it), or NULL when the process is gone.
 */
static const char *proc_stat_tail(uint32_t pid, char *buf, size_t size)
{
	char path[64];
	size_t len;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return NULL;
	len = fread(buf, 1, size - 1, f);
	fclose(f);
	buf[len] = '\0';
	return strrchr(buf, ')');
}

/* Fields @fields (1-based, >= 3, ascending) of the stat @tail into @values; false (@values then 0) when one is unreadable. */
static bool stat_tail_fields(const char *tail, const int *fields, uint64_t *values, size_t n)
{
	const char *p = tail;
	int at = 2;

	for (size_t i = 0; i < n; i++) {
		for (; p && at < fields[i]; at++)
			p = strchr(p + 1, ' ');
		if (!p || sscanf(p + 1, "%" SCNu64, &values[i]) != 1) {
			memset(values, 0, n * sizeof(*values));
			return false;
		}
	}
	return true;
}

/*
 * Fields @fields (1-based, >= 3, ascending) of /proc/@pid/stat into @values; false when the process
 * is gone or a field is unreadable (@values then 0).
 */
static bool proc_stat_fields(uint32_t pid, const int *fields, uint64_t *values, size_t n)
{
	char buf[1024];
	const char *tail = proc_stat_tail(pid, buf, sizeof(buf));

	memset(values, 0, n * sizeof(*values));
	return tail && stat_tail_fields(tail, fields, values, n);
}

bool proc_running(uint32_t pid, uint64_t start_time)
{
	static const int fields[] = { 20, 22 };	/* num_threads, starttime: proc(5) */
	char buf[1024];
	const char *tail = proc_stat_tail(pid, buf, sizeof(buf));
	uint64_t v[2];

	if (!tail || tail[1] != ' ' || !stat_tail_fields(tail, fields, v, 2))
		return false;
	/*
	 * The state is the leader's: Z also when only the main thread ended
	 * (pthread_exit) and others run on.  num_threads tells them apart: a
	 * dead group's unreaped leader is still counted, alone (1).
	 */
	if ((tail[2] == 'Z' || tail[2] == 'X') && v[0] < 2)
		return false;
	return !start_time || v[1] == start_time;
}

/* Field @field (1-based, >= 3) of /proc/@pid/stat, or 0 when the process is gone or the field unreadable. */
static uint64_t proc_stat_field(uint32_t pid, int field)
{
	uint64_t value;

	proc_stat_fields(pid, &field, &value, 1);
	return value;
}

bool proc_cpu_read(uint32_t pid, struct proc_cpu *out)
{
	/* utime, stime (clock ticks), num_threads, starttime: proc(5) */
	static const int fields[] = { 14, 15, 20, 22 };
	uint64_t v[4];

	if (!proc_stat_fields(pid, fields, v, 4))
		return false;
	*out = (struct proc_cpu){ .cpu_ticks = v[0] + v[1], .threads = v[2], .start_time = v[3] };
	return true;
}

uint64_t proc_start_time(uint32_t pid)
{
	return proc_stat_field(pid, 22);
}

uint32_t proc_parent(uint32_t pid)
{
	return (uint32_t)proc_stat_field(pid, 4);
}

bool proc_status_read(uint32_t pid, struct proc_status *st)
{
	char path[64], *line = NULL, *last;
	unsigned int uid, euid;
	unsigned long long mask;
	size_t cap = 0;
	FILE *f;

	*st = (struct proc_status){ .ns_pid = pid };
	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (getline(&line, &cap, f) > 0) {
		if (sscanf(line, "Uid: %u %u", &uid, &euid) == 2) {
			st->uid = uid;
			st->euid = euid;
			st->uids_known = true;
		} else if (strncmp(line, "NSpid:", 6) == 0) {
			line[strcspn(line, "\n")] = '\0';
			last = strrchr(line, '\t');
			if (last && strtoul(last + 1, NULL, 10))
				st->ns_pid = (uint32_t)strtoul(last + 1, NULL, 10);
		} else if (sscanf(line, "SigCgt: %llx", &mask) == 1) {
			st->sig_caught = mask;
		}
	}
	free(line);
	fclose(f);
	return true;
}

uint32_t proc_ns_pid(uint32_t pid)
{
	struct proc_status st;

	proc_status_read(pid, &st);
	return st.ns_pid;
}
