// SPDX-License-Identifier: GPL-2.0
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "procmaps.h"

/*
 * proc_mapped_file's search of @f, @pid's maps (or, for the fuzzer, any
 * bytes).  Lines by getline: a file name may be longer than any fixed
 * buffer, and the rest of a line cut in two would be read as a line of its
 * own, naming a file from the middle of another's name.
 */
static bool mapped_file_in(FILE *f, int pid, bool (*match)(const char *path), char *path, size_t len)
{
	bool found = false;
	char *line = NULL;
	size_t cap = 0;

	while (!found && getline(&line, &cap, f) > 0) {
		char *file = strchr(line, '/');

		if (!file)
			continue;
		file[strcspn(file, "\n")] = 0;
		found = match(file) && snprintf(path, len, "/proc/%d/root%s", pid, file) < (int)len;
	}
	free(line);
	return found;
}

FILE *proc_maps_open(uint32_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	return fopen(path, "re");
}

bool proc_mapped_file(int pid, bool (*match)(const char *path), char *path, size_t len)
{
	FILE *f = proc_maps_open((uint32_t)pid);
	bool found;

	if (!f)
		return false;
	found = mapped_file_in(f, pid, match, path, len);
	fclose(f);
	return found;
}

bool proc_mapped_files(int pid, bool (*match)(const char *path), void (*fn)(const char *path, void *ctx),
		       void *ctx)
{
	FILE *f = proc_maps_open((uint32_t)pid);
	char path[PATH_MAX + 32];
	char *line = NULL, *last = NULL;
	size_t cap = 0;

	if (!f)
		return false;
	/* getline, as mapped_file_in: a name longer than a buffer is not read as two lines. */
	while (getline(&line, &cap, f) > 0) {
		char *file = strchr(line, '/');

		if (!file)
			continue;
		file[strcspn(file, "\n")] = 0;
		/* A library is several lines in a row (its segments): one call. */
		if ((last && strcmp(file, last) == 0) || !match(file))
			continue;
		free(last);
		last = strdup(file);
		if (snprintf(path, sizeof(path), "/proc/%d/root%s", pid, file) < (int)sizeof(path))
			fn(path, ctx);
	}
	free(last);
	free(line);
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

/* Field @field (1-based, >= 3) of /proc/@pid/stat, or 0 when the process is gone or the field unreadable. */
static uint64_t proc_stat_field(uint32_t pid, int field)
{
	char path[64], buf[1024], *p;
	uint64_t value = 0;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* comm may hold spaces and parens: fields count from the last ')'. */
	p = strrchr(buf, ')');
	for (int at = 2; p && at < field; at++)
		p = strchr(p + 1, ' ');
	if (p && sscanf(p + 1, "%" SCNu64, &value) != 1)
		value = 0;
	return value;
}

uint64_t proc_start_time(uint32_t pid)
{
	return proc_stat_field(pid, 22);
}

uint32_t proc_parent(uint32_t pid)
{
	return (uint32_t)proc_stat_field(pid, 4);
}
