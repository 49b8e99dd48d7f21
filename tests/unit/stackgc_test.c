// SPDX-License-Identifier: GPL-2.0
/*
 * The stacks' garbage collector (user/core/stackgc.c) on real BPF hash maps
 * shaped like a profiler's stacks and totals, driven by hand: prints one
 * "KEY VALUE" line per check for tests/unit/stackgc.t.  Needs root (it
 * creates maps).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "stackgc.h"

#define ID_A 0xa1	/* counted every interval */
#define ID_B 0xb2	/* counted in the first interval only */
#define ID_C 0xc3	/* in the totals */
#define ID_D 0xd4	/* never counted */

static int stacks_fd, totals_fd;

static void store(uint64_t id)
{
	struct aperture_stack st = { .depth = 2, .ips = { id << 8, id << 16 } };

	bpf_map_update_elem(stacks_fd, &id, &st, BPF_ANY);
}

static int stored(uint64_t id)
{
	struct aperture_stack st;

	return bpf_map_lookup_elem(stacks_fd, &id, &st) == 0;
}

static void total(uint64_t user_id)
{
	struct sample_key key = { .tgid = 1, .user_stack_id = user_id };
	uint64_t one = 1;

	bpf_map_update_elem(totals_fd, &key, &one, BPF_ANY);
}

/* A drained record of the interval. */
static void counted(struct stack_gc *gc, uint64_t user_id, uint64_t kernel_id)
{
	struct sample_key key = { .tgid = 2, .user_stack_id = user_id, .kernel_stack_id = kernel_id };

	stack_gc_note(gc, &key);
}

static void say(const char *what, uint64_t value)
{
	printf("%s %llu\n", what, (unsigned long long)value);
}

static void say_stored(const char *when)
{
	char what[64];
	const uint64_t ids[] = { ID_A, ID_B, ID_C, ID_D };
	const char names[] = "abcd";

	for (int i = 0; i < 4; i++) {
		snprintf(what, sizeof(what), "%s_stored_%c", when, names[i]);
		say(what, stored(ids[i]));
	}
}

int main(void)
{
	struct stack_gc *gc = stack_gc_new();
	const struct aperture_stack *kept;
	struct stack_gc_stats stats;

	stacks_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "gc_stacks", sizeof(uint64_t),
				   sizeof(struct aperture_stack), 64, NULL);
	totals_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "gc_totals", sizeof(struct sample_key),
				   sizeof(uint64_t), 64, NULL);
	if (!gc || stacks_fd < 0 || totals_fd < 0) {
		fprintf(stderr, "stackgc_test: cannot create the maps: %s\n", strerror(errno));
		return 1;
	}
	store(ID_A), store(ID_B), store(ID_C), store(ID_D);
	total(ID_C);

	/* Pass 1: D is unreferenced once: a candidate, kept. */
	stack_gc_flipped(gc);
	counted(gc, ID_A, ID_B);
	say("pass1_rc", stack_gc_pass(gc, stacks_fd, totals_fd));
	say_stored("pass1");

	/* Without a flip since, a pass does nothing. */
	say("noflip_rc", stack_gc_pass(gc, stacks_fd, totals_fd));
	stack_gc_stats(gc, &stats);
	say("noflip_passes", stats.passes);

	/* Pass 2: D unreferenced twice: deleted, its frames kept; B once: a candidate. */
	stack_gc_flipped(gc);
	counted(gc, ID_A, 0);
	say("pass2_rc", stack_gc_pass(gc, stacks_fd, totals_fd));
	say_stored("pass2");
	kept = stack_gc_tombstone(gc, ID_D);
	say("pass2_tombstone_d", kept && kept->depth == 2 && kept->ips[1] == (uint64_t)ID_D << 16);

	/*
	 * Pass 3: a program that found D just before the deletion counted it
	 * (drained) and put it in the totals: D is put back; B, unreferenced
	 * twice, goes.
	 */
	stack_gc_flipped(gc);
	counted(gc, ID_A, ID_D);
	total(ID_D);
	say("pass3_rc", stack_gc_pass(gc, stacks_fd, totals_fd));
	say_stored("pass3");
	say("pass3_tombstone_d", stack_gc_tombstone(gc, ID_D) != NULL);
	say("pass3_tombstone_b", stack_gc_tombstone(gc, ID_B) != NULL);
	stack_gc_stats(gc, &stats);
	say("deleted", stats.deleted);
	say("restored", stats.restored);
	say("passes", stats.passes);

	stack_gc_free(gc);
	close(stacks_fd);
	close(totals_fd);
	return 0;
}
