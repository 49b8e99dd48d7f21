// SPDX-License-Identifier: GPL-2.0
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "procmaps.h"

bool proc_mapped_file(int pid, bool (*match)(const char *path), char *path, size_t len)
{
	char maps[64], line[PATH_MAX + 256];
	bool found = false;
	FILE *f;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", pid);
	f = fopen(maps, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char *file = strchr(line, '/');

		if (!file)
			continue;
		file[strcspn(file, "\n")] = 0;
		found = match(file) && snprintf(path, len, "/proc/%d/root%s", pid, file) < (int)len;
	}
	fclose(f);
	return found;
}

bool proc_mapped_files(int pid, bool (*match)(const char *path), void (*fn)(const char *path, void *ctx),
		       void *ctx)
{
	char maps[64], line[PATH_MAX + 256], last[PATH_MAX] = "", path[PATH_MAX + 32];
	FILE *f;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", pid);
	f = fopen(maps, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		char *file = strchr(line, '/');

		if (!file)
			continue;
		file[strcspn(file, "\n")] = 0;
		/* A library is several lines in a row (its segments): one call. */
		if (strcmp(file, last) == 0 || !match(file))
			continue;
		snprintf(last, sizeof(last), "%s", file);
		if (snprintf(path, sizeof(path), "/proc/%d/root%s", pid, file) < (int)sizeof(path))
			fn(path, ctx);
	}
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
