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
#include "profile.h"
#include "profiler.h"
#include "run.h"
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

size_t usage_symbol_parts(const struct symbolizer *sym, struct usage_part *parts)
{
	struct sym_usage u;

	if (!sym)
		return 0;
	symbolizer_usage(sym, &u);
	parts[0] = (struct usage_part){ "symbol files", u.file_bytes };
	parts[1] = (struct usage_part){ "symbol processes", u.proc_bytes };
	parts[2] = (struct usage_part){ "symbol names", u.name_bytes + u.mapping_bytes };
	parts[3] = (struct usage_part){ "kallsyms", u.kernel_bytes };
	parts[4] = (struct usage_part){ "python names", u.py_bytes };
	return USAGE_SYMBOL_PARTS;
}

void usage_memory(struct usage_line *line, const struct usage_part *parts, size_t nparts)
{
	struct mallinfo2 mi = mallinfo2();
	size_t in_use = mi.uordblks + mi.hblkhd, counted = 0;

	usage_append(line, "memory KiB:");
	for (size_t i = 0; i < nparts; i++) {
		usage_append(line, " %s %zu,", parts[i].name, parts[i].bytes >> 10);
		counted += parts[i].bytes;
	}
	usage_append(line, " other %s%zu of %zu in use", counted > in_use ? "-" : "",
		     (counted > in_use ? counted - in_use : in_use - counted) >> 10, in_use >> 10);
}

void usage_run_memory(struct usage_line *line, const struct symbolizer *sym, const struct run *run,
		      const struct profile *profiles, int nprofiles, size_t *build_peak)
{
	struct usage_part parts[USAGE_SYMBOL_PARTS + 2];
	size_t n = usage_symbol_parts(sym, parts);

	parts[n].name = "unwind";
	run_unwind_bytes(run, &parts[n++].bytes, build_peak);
	parts[n] = (struct usage_part){ "profiles", 0 };
	for (int i = 0; i < nprofiles; i++)
		parts[n].bytes += profiles[i].bytes;
	usage_memory(line, parts, n + 1);
}

void usage_heap(uint64_t *in_use_kib, uint64_t *free_kib, uint64_t *mmap_kib)
{
	struct mallinfo2 mi = mallinfo2();

	*in_use_kib = (mi.uordblks + mi.hblkhd) / 1024;
	*free_kib = mi.fordblks / 1024;
	*mmap_kib = mi.hblkhd / 1024;
}
