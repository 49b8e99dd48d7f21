// SPDX-License-Identifier: GPL-2.0
/*
 * Writes a hand-made profile through the exporters, for tests/unit/exporters.t.
 *   export_test write PATH [VALUE_INDEX]   format chosen by PATH's ending
 *   export_test write-as FORMAT PATH
 *   export_test big PATH NSAMPLES          many distinct, thin stacks
 *   export_test for-path PATH              prints the format's name or "none"
 *   export_test names                      prints exporter_names()
 *
 * The profile (values: samples/count and cpu/nanoseconds, default samples):
 *   app   100/101  main binary hot_loop <- main <- __libc_start_main     30 + 5
 *   app   100/102  kernel copy_user_generic <- vfs_write <- entry_SYSCALL_64
 *                  <- libc write <- main <- __libc_start_main            10
 *   "my worker;x"  ns::weird;name<int, char&> <- app+0x1200 <- [unknown]  2
 *   swapper/0      default_idle <- do_idle, kernel frames with no mapping 3
 *   idle sample with zero values                                         0
 *   app   100/104  libfoo.so+0x1000 (a mapping with no symbols) <- main  1
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "exporter.h"
#include "util.h"

#define NS_PER_SAMPLE 10000000ull

static const struct sym_mapping map_app = {
	.id = 1, .start = 0x400000, .end = 0x500000, .file_offset = 0,
	.path = "/usr/bin/app", .name = "app", .build_id = "abcd1234",
};
static const struct sym_mapping map_libc = {
	.id = 2, .start = 0x7f0000000000, .end = 0x7f0000200000, .file_offset = 0x28000,
	.path = "/usr/lib/x86_64-linux-gnu/libc.so.6", .name = "libc.so.6", .build_id = "",
};
static const struct sym_mapping map_foo = {
	.id = 4, .start = 0x7f1000000000, .end = 0x7f1000010000, .file_offset = 0,
	.path = "/nonexistent/libfoo.so", .name = "libfoo.so", .build_id = "",
};
static const struct sym_mapping map_kernel = {
	.id = 3, .start = 0xffffffff81000000, .end = 0xffffffff82000000, .file_offset = 0,
	.path = "[kernel.kallsyms]", .name = "[kernel.kallsyms]", .build_id = "", .kernel = true,
};

#define USER(m, a, fn) { .sym = { .addr = (a), .function = (fn), .mapping = (m), \
			  .module_offset = (a) - (m)->start + (m)->file_offset, .name = (fn) } }
#define KERN(m, a, fn) { .sym = { .addr = (a), .function = (fn), .mapping = (m), .name = (fn) }, .kernel = true }

static struct profile_frame stack_hot[] = {
	USER(&map_app, 0x401100, "hot_loop"),
	USER(&map_app, 0x401050, "main"),
	USER(&map_libc, 0x7f0000029d90, "__libc_start_main"),
};
static struct profile_frame stack_write[] = {
	KERN(&map_kernel, 0xffffffff81100000, "copy_user_generic"),
	KERN(&map_kernel, 0xffffffff81200010, "vfs_write"),
	KERN(&map_kernel, 0xffffffff81300000, "entry_SYSCALL_64"),
	USER(&map_libc, 0x7f0000100010, "write"),
	USER(&map_app, 0x401060, "main"),
	USER(&map_libc, 0x7f0000029d90, "__libc_start_main"),
};
static struct profile_frame stack_nosym[] = {
	{ .sym = { .addr = 0x7f1000001000, .mapping = &map_foo, .module_offset = 0x1000, .name = "libfoo.so+0x1000" } },
	USER(&map_app, 0x401050, "main"),
	USER(&map_libc, 0x7f0000029d90, "__libc_start_main"),
};
static struct profile_frame stack_weird[] = {
	USER(&map_app, 0x401300, "ns::weird;name<int, char&>"),
	{ .sym = { .addr = 0x401200, .mapping = &map_app, .module_offset = 0x1200, .name = "app+0x1200" } },
	{ .sym = { .addr = 0xdead, .name = "[unknown]" } },
};
static struct profile_frame stack_idle[] = {
	KERN(NULL, 0xffffffff81500000, "default_idle"),
	KERN(NULL, 0xffffffff81500100, "do_idle"),
};

#define SAMPLE(tg, tid, c, st, nk, n, ...) { .tgid = (tg), .pid = (tid), .comm = c, .frames = (st), \
	.nkernel = (nk), .nuser = (sizeof(st) / sizeof((st)[0])) - (nk), \
	.values = { (n), (n) * NS_PER_SAMPLE } }

static struct profile_sample samples[] = {
	SAMPLE(100, 101, "app", stack_hot, 0, 30),
	SAMPLE(100, 102, "app", stack_write, 3, 10),
	SAMPLE(100, 102, "app", stack_hot, 0, 0),
	SAMPLE(200, 200, "my worker;x", stack_weird, 0, 2),
	SAMPLE(0, 0, "swapper/0", stack_idle, 2, 3),
	SAMPLE(100, 103, "app", stack_hot, 0, 5),
	SAMPLE(100, 104, "app", stack_nosym, 0, 1),
};

static void fill_profile(struct profile *p)
{
	*p = (struct profile){
		.kind = "oncpu",
		.title = "On-CPU",
		.nvalues = 2,
		.value_types = { { "samples", "count" }, { "cpu", "nanoseconds" } },
		.default_value = 0,
		.period_type = { "cpu", "nanoseconds" },
		.period = NS_PER_SAMPLE,
		.time_ns = 1700000000000000000ll,
		.duration_ns = 5000000000ll,
		.samples = samples,
		.nsamples = sizeof(samples) / sizeof(samples[0]),
	};
}

/* @n samples, each with its own leaf function under a shared root. */
static int fill_big(struct profile *p, size_t n, char **names, struct profile_frame *frames)
{
	size_t i;

	fill_profile(p);
	p->samples = calloc_logged(n, sizeof(*p->samples));
	if (!p->samples)
		return -ENOMEM;
	p->nsamples = n;
	for (i = 0; i < n; i++) {
		struct profile_sample *s = &p->samples[i];

		if (asprintf(&names[i], "leaf_%zu", i) < 0)
			return -ENOMEM;
		frames[2 * i] = (struct profile_frame)USER(&map_app, 0x410000 + i, names[i]);
		frames[2 * i + 1] = (struct profile_frame)USER(&map_app, 0x401050, "main");
		*s = (struct profile_sample){ .tgid = 1, .pid = 1, .comm = "big", .frames = &frames[2 * i],
					      .nuser = 2, .values = { 1, NS_PER_SAMPLE } };
	}
	return 0;
}

static int write_big(const char *path, size_t n)
{
	const struct exporter *e = exporter_for_path(path);
	struct export_opts opts = { .value_index = -1 };
	struct profile_frame *frames = calloc_logged(2 * n, sizeof(*frames));
	char **names = calloc_logged(n, sizeof(*names));
	struct profile p = { 0 };
	size_t i;
	int err = -ENOMEM;

	if (frames && names && !fill_big(&p, n, names, frames))
		err = e ? e->write(&p, path, &opts) : -EINVAL;
	for (i = 0; names && i < n; i++)
		free(names[i]);
	free(names);
	free(frames);
	if (p.samples != samples)
		free(p.samples);
	return err;
}

static int write_with(const struct exporter *e, const char *path, int value_index)
{
	struct export_opts opts = { .value_index = value_index };
	struct profile p;

	if (!e) {
		fprintf(stderr, "export_test: no format for %s\n", path);
		return -EINVAL;
	}
	fill_profile(&p);
	return e->write(&p, path, &opts);
}

int main(int argc, char **argv)
{
	const struct exporter *e;

	if (argc == 2 && strcmp(argv[1], "names") == 0) {
		printf("%s\n", exporter_names());
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "for-path") == 0) {
		e = exporter_for_path(argv[2]);
		printf("%s\n", e ? e->name : "none");
		return 0;
	}
	if ((argc == 3 || argc == 4) && strcmp(argv[1], "write") == 0)
		return write_with(exporter_for_path(argv[2]), argv[2], argc == 4 ? atoi(argv[3]) : -1) ? 1 : 0;
	if (argc == 4 && strcmp(argv[1], "write-as") == 0)
		return write_with(exporter_by_name(argv[2]), argv[3], -1) ? 1 : 0;
	if (argc == 4 && strcmp(argv[1], "big") == 0)
		return write_big(argv[2], strtoul(argv[3], NULL, 10)) ? 1 : 0;
	fprintf(stderr, "usage: export_test write PATH [VALUE_INDEX] | write-as FORMAT PATH | big PATH N | "
		"for-path PATH | names\n");
	return 2;
}
