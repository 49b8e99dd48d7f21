// SPDX-License-Identifier: GPL-2.0
/*
 * Hand-made profiles through sw_profile_messages, written varint-delimited
 * as aperture record writes .swdata (read back with swdecode), for
 * tests/agent/15-messages.t.
 *
 *   sw_messages halves FILE      a kernel-only and a user-only stack with the
 *                                same names, and the two together
 *   sw_messages many FILE N      N distinct stacks, kernel and user halves
 *   sw_messages unresolved FILE  unresolved frames at several addresses of
 *                                one module, and one outside any module
 *   sw_messages twice FILE       two calls appending to one upload
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "skywalking.h"
#include "util.h"

static const struct sym_mapping map_app = {
	.id = 1, .start = 0x400000, .end = 0x500000, .path = "/usr/bin/app", .name = "app",
	.build_id = "",
};
static const struct sym_mapping map_lib = {
	.id = 2, .start = 0x7f0000000000, .end = 0x7f0000100000, .path = "/opt/lib/libstripped.so",
	.name = "libstripped.so", .build_id = "",
};
static const struct sym_mapping map_kernel = {
	.id = 3, .start = 0xffffffff81000000, .end = UINT64_MAX, .path = "[kernel.kallsyms]",
	.name = "[kernel.kallsyms]", .build_id = "", .kernel = true,
};

#define NAMED(m, a, fn, k) { .sym = { .addr = (a), .function = (fn), .mapping = (m), .name = (fn) }, \
			     .kernel = (k) }
/* An address no symbol covers: the symbolizer names it module+0xOFF. */
#define BARE(m, a, label) { .sym = { .addr = (a), .mapping = (m), \
				     .module_offset = (a) - (m)->start, .name = (label) } }

static void profile_oncpu(struct profile *p, struct profile_sample *samples, size_t n)
{
	*p = (struct profile){
		.kind = "oncpu", .title = "On-CPU", .skywalking_target = "ON_CPU", .nvalues = 2,
		.value_types = { { "samples", "count" }, { "cpu", "nanoseconds" } },
		.time_ns = 1700000000000000000ll, .duration_ns = 5000000000ll,
		.samples = samples, .nsamples = n,
	};
}

static int write_msgs(const char *path, const struct sw_msgs *msgs)
{
	FILE *f = fopen(path, "wb");

	if (!f)
		return -errno;
	for (size_t i = 0; i < msgs->n; i++) {
		uint64_t len = msgs->v[i].len;

		while (len >= 0x80) {
			fputc((int)(len & 0x7f) | 0x80, f);
			len >>= 7;
		}
		fputc((int)len, f);
		fwrite(msgs->v[i].data, 1, msgs->v[i].len, f);
	}
	return fclose(f) ? -errno : 0;
}

static int encode_to(const char *path, struct profile_sample *samples, size_t n, int calls)
{
	struct sw_task_meta meta = { "t1", "p1", 1, 2 };
	struct sw_msgs msgs = { 0 };
	struct profile p;
	int err = 0;

	profile_oncpu(&p, samples, n);
	for (int i = 0; i < calls && err >= 0; i++)
		err = sw_profile_messages(&p, NULL, 0, &meta, &msgs, NULL);
	if (err >= 0)
		err = write_msgs(path, &msgs);
	sw_msgs_free(&msgs);
	return err < 0 ? err : 0;
}

static struct profile_frame same_names_kernel[] = {
	NAMED(&map_kernel, 0xffffffff81100000, "shared_a", true),
	NAMED(&map_kernel, 0xffffffff81100100, "shared_b", true),
};
static struct profile_frame same_names_user[] = {
	NAMED(&map_app, 0x401000, "shared_a", false),
	NAMED(&map_app, 0x401100, "shared_b", false),
};
static struct profile_frame same_names_both[] = {
	NAMED(&map_kernel, 0xffffffff81100000, "shared_a", true),
	NAMED(&map_kernel, 0xffffffff81100100, "shared_b", true),
	NAMED(&map_app, 0x401000, "shared_a", false),
	NAMED(&map_app, 0x401100, "shared_b", false),
};

static int halves(const char *path, int calls)
{
	struct profile_sample samples[] = {
		{ .tgid = 1, .frames = same_names_kernel, .nkernel = 2, .values = { 3 } },
		{ .tgid = 1, .frames = same_names_user, .nuser = 2, .values = { 5 } },
		{ .tgid = 1, .frames = same_names_both, .nkernel = 2, .nuser = 2, .values = { 7 } },
	};

	return encode_to(path, samples, 3, calls);
}

/* @n stacks: a distinct kernel leaf and a distinct user leaf each, same callers. */
static int many(const char *path, size_t n)
{
	struct profile_sample *samples = calloc(n, sizeof(*samples));
	struct profile_frame *frames = calloc(4 * n, sizeof(*frames));
	char **names = calloc(2 * n, sizeof(*names));
	int err = -ENOMEM;
	size_t i;

	if (!samples || !frames || !names)
		goto out;
	for (i = 0; i < n; i++) {
		struct profile_frame *f = &frames[4 * i];

		if (asprintf(&names[2 * i], "k_leaf_%zu", i) < 0 || asprintf(&names[2 * i + 1], "u_leaf_%zu", i) < 0)
			goto out;
		f[0] = (struct profile_frame)NAMED(&map_kernel, 0xffffffff81200000 + i, names[2 * i], true);
		f[1] = (struct profile_frame)NAMED(&map_kernel, 0xffffffff81300000, "entry_SYSCALL_64", true);
		f[2] = (struct profile_frame)NAMED(&map_app, 0x410000 + i, names[2 * i + 1], false);
		f[3] = (struct profile_frame)NAMED(&map_app, 0x401050, "main", false);
		samples[i] = (struct profile_sample){ .tgid = 1, .frames = f, .nkernel = 2, .nuser = 2,
						      .values = { 1 } };
	}
	err = encode_to(path, samples, n, 1);
out:
	for (i = 0; names && i < 2 * n; i++)
		free(names[i]);
	free(names);
	free(frames);
	free(samples);
	return err;
}

/*
 * Two stacks whose leaves are unresolved addresses of one stripped library
 * (one node for the module: a single message with both counts), a third
 * under a different caller, and an address outside every module.
 */
static struct profile_frame bare_1[] = {
	BARE(&map_lib, 0x7f0000001010, "libstripped.so+0x1010"),
	BARE(&map_lib, 0x7f0000002020, "libstripped.so+0x2020"),
	NAMED(&map_app, 0x401050, "main", false),
};
static struct profile_frame bare_2[] = {
	BARE(&map_lib, 0x7f0000001234, "libstripped.so+0x1234"),
	BARE(&map_lib, 0x7f0000002468, "libstripped.so+0x2468"),
	NAMED(&map_app, 0x401050, "main", false),
};
static struct profile_frame bare_3[] = {
	BARE(&map_lib, 0x7f0000003000, "libstripped.so+0x3000"),
	NAMED(&map_app, 0x401060, "other_caller", false),
};
static struct profile_frame nowhere[] = {
	{ .sym = { .addr = 0xdead, .name = "[unknown]" } },
	NAMED(&map_app, 0x401050, "main", false),
};

static int unresolved(const char *path)
{
	struct profile_sample samples[] = {
		{ .tgid = 1, .frames = bare_1, .nuser = 3, .values = { 2 } },
		{ .tgid = 1, .frames = bare_2, .nuser = 3, .values = { 3 } },
		{ .tgid = 1, .frames = bare_3, .nuser = 2, .values = { 4 } },
		{ .tgid = 1, .frames = nowhere, .nuser = 2, .values = { 1 } },
	};

	return encode_to(path, samples, 4, 1);
}

int main(int argc, char **argv)
{
	int err = -EINVAL;

	if (argc == 3 && !strcmp(argv[1], "halves"))
		err = halves(argv[2], 1);
	else if (argc == 3 && !strcmp(argv[1], "twice"))
		err = halves(argv[2], 2);
	else if (argc == 4 && !strcmp(argv[1], "many"))
		err = many(argv[2], strtoul(argv[3], NULL, 10));
	else if (argc == 3 && !strcmp(argv[1], "unresolved"))
		err = unresolved(argv[2]);
	else
		fprintf(stderr, "usage: sw_messages halves|twice|unresolved FILE | many FILE N\n");
	if (err)
		fprintf(stderr, "sw_messages: %s\n", strerror(-err));
	return err ? 1 : 0;
}
