// SPDX-License-Identifier: GPL-2.0
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "procmaps.h"

/* proc_mapped_file's search of @f, @pid's maps (or, for the fuzzer, any bytes). */
static bool mapped_file_in(FILE *f, int pid, bool (*match)(const char *path), char *path, size_t len)
{
	char line[PATH_MAX + 256];
	bool found = false;

	while (!found && fgets(line, sizeof(line), f)) {
		char *file = strchr(line, '/');

		if (!file)
			continue;
		file[strcspn(file, "\n")] = 0;
		found = match(file) && snprintf(path, len, "/proc/%d/root%s", pid, file) < (int)len;
	}
	return found;
}

bool proc_mapped_file(int pid, bool (*match)(const char *path), char *path, size_t len)
{
	char maps[64];
	bool found;
	FILE *f;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", pid);
	f = fopen(maps, "re");
	if (!f)
		return false;
	found = mapped_file_in(f, pid, match, path, len);
	fclose(f);
	return found;
}

bool first_readable(const char *const *candidates, size_t n, char *path, size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (access(candidates[i], R_OK) == 0)
			return snprintf(path, len, "%s", candidates[i]) < (int)len;
	return false;
}
