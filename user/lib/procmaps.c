// SPDX-License-Identifier: GPL-2.0
#include <inttypes.h>
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

bool first_readable(const char *const *candidates, size_t n, char *path, size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (access(candidates[i], R_OK) == 0)
			return snprintf(path, len, "%s", candidates[i]) < (int)len;
	return false;
}

uint64_t proc_start_time(uint32_t pid)
{
	char path[64], buf[1024], *p;
	uint64_t start = 0;
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
	for (int field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	if (p && sscanf(p + 1, "%" SCNu64, &start) != 1)
		start = 0;
	return start;
}
