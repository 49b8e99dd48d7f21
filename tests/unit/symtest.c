// SPDX-License-Identifier: GPL-2.0
/*
 * Test driver for user/symbolize/symbolize.c.  Runs the operations on its command line
 * in order, one output line each:
 *   track PID            -> "track PID rc=N"
 *   user PID ADDR        -> "user ADDR name=.. func=.. foff=0x.. map=.. modoff=0x.."
 *   kernel ADDR          -> "kernel ADDR ..." (same fields)
 *   kernels FILE         -> the addresses of FILE (one hex a line) named as a stack is:
 *                           symbolizer_kernel_frames on all, then a "kernel" line each,
 *                           then "asked N runs N unnamed N from_kernel K"
 *   kill PID             -> SIGKILL, then waits until it is a zombie or gone
 *   untilz PID           -> waits until its stat says Z (or it is gone), without a signal
 *   mappings             -> one "mapping ID kernel=K name=.. build_id=.. path=.." line each
 *   limit BYTES          -> the cache limit (symbolizer_apply), no output
 *   trim                 -> symbolizer_trim, then "trim bytes=N procs=N files=N
 *                           procs_dropped=N files_dropped=N tables_unloaded=N"
 *   memory               -> "memory heap=N files=N procs=N names=N kernel=N": the
 *                           allocator's bytes in use (mallinfo2) and what the
 *                           symbolizer counts for each holder
 * Fields are tab-separated so names may hold spaces.  SYMTEST_KALLSYMS=1: kernel
 * names from the /proc/kallsyms table (symbolizer_settings.kallsyms_only).
 */
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "symbolize.h"
#include "../workloads/wl.h"	/* stat_state */

static void print_frame(const char *op, const struct sym_frame *f)
{
	printf("%s 0x%" PRIx64 "\tname=%s\tfunc=%s\tfoff=0x%" PRIx64 "\tmap=%s\tmodoff=0x%" PRIx64 "\n",
	       op, f->addr, f->name, f->function ? f->function : "-", f->function_offset,
	       f->mapping ? f->mapping->name : "-", f->module_offset);
}

/* Gone or a zombie: its maps are empty from now on. */
static int wait_dead(pid_t pid)
{
	char path[64], state;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	for (int i = 0; i < 500; i++) {
		state = stat_state(path);
		if (!state || state == 'Z')
			return 0;
		usleep(10000);
	}
	return -ETIMEDOUT;
}

static void print_mappings(struct symbolizer *sym)
{
	const struct sym_mapping *const *maps;
	size_t i, n;

	maps = symbolizer_mappings(sym, &n);
	for (i = 0; i < n; i++)
		printf("mapping %u\tkernel=%d\tname=%s\tbuild_id=%s\tpath=%s\n", maps[i]->id,
		       maps[i]->kernel, maps[i]->name, maps[i]->build_id[0] ? maps[i]->build_id : "-",
		       maps[i]->path);
}

static void print_trim(struct symbolizer *sym)
{
	struct sym_usage u;

	symbolizer_trim(sym);
	symbolizer_usage(sym, &u);
	printf("trim bytes=%zu procs=%zu files=%zu procs_dropped=%" PRIu64 " files_dropped=%" PRIu64
	       " tables_unloaded=%" PRIu64 "\n", u.bytes, u.procs, u.files, u.procs_dropped,
	       u.files_dropped, u.tables_unloaded);
}

static void print_memory(const struct symbolizer *sym)
{
	struct mallinfo2 mi = mallinfo2();
	struct sym_usage u;

	symbolizer_usage(sym, &u);
	printf("memory heap=%zu files=%zu procs=%zu names=%zu kernel=%zu\n", mi.uordblks + mi.hblkhd,
	       u.file_bytes, u.proc_bytes, u.name_bytes + u.mapping_bytes, u.kernel_bytes);
}

/* "kernels FILE": every address of FILE, named as one stack. */
static int kernels(struct symbolizer *sym, const char *path)
{
	struct sym_frame *frames;
	FILE *in = fopen(path, "r");
	uint64_t *addrs = NULL;
	size_t n = 0, cap = 0;
	unsigned long long v;
	struct sym_usage u;

	if (!in)
		return -1;
	while (fscanf(in, "%llx", &v) == 1) {
		if (n == cap) {
			cap = cap ? cap * 2 : 1024;
			addrs = realloc(addrs, cap * sizeof(*addrs));
			if (!addrs)
				return -1;
		}
		addrs[n++] = v;
	}
	fclose(in);
	frames = calloc(n ? n : 1, sizeof(*frames));
	if (!frames) {
		free(addrs);
		return -1;
	}
	symbolizer_kernel_frames(sym, addrs, n, frames);
	for (size_t i = 0; i < n; i++)
		print_frame("kernel", &frames[i]);
	free(frames);
	symbolizer_usage(sym, &u);
	printf("asked %" PRIu64 " runs %" PRIu64 " unnamed %" PRIu64 " from_kernel %d\n", u.kernel_asked,
	       u.kernel_runs, u.kernel_unnamed, u.kernel_from_kernel);
	free(addrs);
	return 0;
}

static int need(int i, int n, int argc, const char *op)
{
	if (i + n < argc)
		return 0;
	fprintf(stderr, "symtest: %s needs %d argument(s)\n", op, n);
	return -1;
}

/* Runs argv[i]; returns how many arguments it used, or -1. */
static int run_op(struct symbolizer *sym, int argc, char **argv, int i)
{
	const char *op = argv[i];
	struct sym_frame f;

	if (!strcmp(op, "mappings")) {
		print_mappings(sym);
		return 0;
	}
	if (!strcmp(op, "memory")) {
		print_memory(sym);
		return 0;
	}
	if (!strcmp(op, "trim")) {
		print_trim(sym);
		return 0;
	}
	if (!strcmp(op, "limit")) {
		if (need(i, 1, argc, op))
			return -1;
		symbolizer_apply(sym, &(struct symbolizer_settings){
					.cache_limit = (size_t)strtoull(argv[i + 1], NULL, 0) });
		return 1;
	}
	if (!strcmp(op, "track") || !strcmp(op, "kill") || !strcmp(op, "untilz") || !strcmp(op, "kernel")) {
		unsigned long long v;

		if (need(i, 1, argc, op))
			return -1;
		v = strtoull(argv[i + 1], NULL, 0);
		if (op[0] == 't')
			printf("track %llu rc=%d\n", v, symbolizer_track(sym, (uint32_t)v));
		else if (op[0] == 'k' && op[1] == 'i')
			printf("kill %llu rc=%d\n", v, kill((pid_t)v, SIGKILL) ? -errno : wait_dead((pid_t)v));
		else if (op[0] == 'u')
			printf("untilz %llu rc=%d\n", v, wait_dead((pid_t)v));
		else {
			uint64_t addr = v;

			symbolizer_kernel_frames(sym, &addr, 1, &f);
			print_frame("kernel", &f);
		}
		return 1;
	}
	if (!strcmp(op, "kernels")) {
		if (need(i, 1, argc, op) || kernels(sym, argv[i + 1]))
			return -1;
		return 1;
	}
	if (!strcmp(op, "user")) {
		if (need(i, 2, argc, op))
			return -1;
		symbolizer_user(sym, (uint32_t)strtoul(argv[i + 1], NULL, 0),
				strtoull(argv[i + 2], NULL, 0), &f);
		print_frame("user", &f);
		return 2;
	}
	fprintf(stderr, "symtest: unknown operation %s\n", op);
	return -1;
}

int main(int argc, char **argv)
{
	const char *kallsyms = getenv("SYMTEST_KALLSYMS");
	struct symbolizer *sym = symbolizer_new(&(struct symbolizer_settings){
		.kallsyms_only = kallsyms && !strcmp(kallsyms, "1") });
	int i, used, rc = 0;

	if (!sym)
		return 1;
	for (i = 1; i < argc; i += used + 1) {
		used = run_op(sym, argc, argv, i);
		if (used < 0) {
			rc = 2;
			break;
		}
		fflush(stdout);
	}
	symbolizer_free(sym);
	return rc;
}
