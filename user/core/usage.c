// SPDX-License-Identifier: GPL-2.0
/*
 * The long-running modes' stats line: maps' entries against their max_entries, the symbol
 * cache, the process's RSS and open fds (usage.h).
 */
#include <dirent.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>
#include "profiler.h"
#include "symbolize.h"
#include "usage.h"

void usage_append(struct usage_line *line, const char *fmt, ...)
{
	size_t room = sizeof(line->text) - line->len;
	va_list ap;
	int n;

	if (room <= 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(line->text + line->len, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		line->len += (size_t)n < room ? (size_t)n : room - 1;
}

void usage_profiler(struct usage_line *line, struct profiler *p)
{
	/* The live generation of the counts: the idle one was just drained. */
	const struct { const char *name; int fd; } maps[] = {
		{ "stacks", p->fd[MAP_STACKS] }, { "totals", p->fd[MAP_TOTALS] },
		{ "counts", p->fd[MAP_COUNTS_0 + p->live] }, { "target_pids", p->fd[MAP_TARGET_PIDS] },
	};
	struct stack_gc_stats gc;
	uint64_t used, cap;

	usage_append(line, "%s:", p->ops->name);
	for (size_t m = 0; m < sizeof(maps) / sizeof(maps[0]); m++)
		if (map_use(maps[m].fd, &used, &cap))
			usage_append(line, " %s %" PRIu64 "/%" PRIu64, maps[m].name, used, cap);
	if (p->gc) {
		profiler_gc_stats(p, &gc);
		usage_append(line, " stacks_collected %" PRIu64, gc.deleted);
	}
}

void usage_symbols(struct usage_line *line, const struct symbolizer *sym)
{
	struct sym_usage u;

	if (!sym)
		return;
	symbolizer_usage(sym, &u);
	usage_append(line, "symbols %zu/%zu KiB, processes %zu/%zu, files %zu/%zu (forgotten: %" PRIu64
		     " processes, %" PRIu64 " files; %" PRIu64 " tables unloaded; %" PRIu64 " pids reused; %"
		     PRIu64 " minidebuginfo refused; refused: %" PRIu64 " files, %" PRIu64 " perf maps)",
		     u.bytes >> 10, u.limit >> 10, u.procs, u.procs_max, u.files, u.files_max,
		     u.procs_dropped, u.files_dropped, u.tables_unloaded, u.pids_reused, u.xz_refused,
		     u.files_refused, u.perf_maps_refused);
}

void usage_process(uint64_t *rss_kib, uint64_t *fds)
{
	FILE *f = fopen("/proc/self/statm", "re");
	unsigned long size, resident = 0;
	DIR *dir = opendir("/proc/self/fd");

	if (f && fscanf(f, "%lu %lu", &size, &resident) != 2)
		resident = 0;
	if (f)
		fclose(f);
	*rss_kib = resident * (uint64_t)(sysconf(_SC_PAGESIZE) / 1024);
	*fds = 0;
	while (dir && readdir(dir))
		(*fds)++;
	if (dir) {
		*fds -= 3;	/* ".", ".." and the directory's own fd */
		closedir(dir);
	}
}

void usage_heap(uint64_t *in_use_kib, uint64_t *free_kib, uint64_t *mmap_kib)
{
	struct mallinfo2 mi = mallinfo2();

	*in_use_kib = (mi.uordblks + mi.hblkhd) / 1024;
	*free_kib = mi.fordblks / 1024;
	*mmap_kib = mi.hblkhd / 1024;
}
