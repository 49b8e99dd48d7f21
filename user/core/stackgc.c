// SPDX-License-Identifier: GPL-2.0
/* Stacks no count refers to, deleted (see stackgc.h for why it is safe). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "idset.h"
#include "stackgc.h"
#include "util.h"

struct stack_gc {
	struct idset referenced;	/* stack ids counted since the last pass */
	struct idset candidates;	/* unreferenced at the last pass: deleted at this one unless counted */
	struct idset next_candidates;	/* being built by this pass */
	struct idset tombstones;	/* id -> struct aperture_stack (depth-sized) deleted at the last pass */
	bool flipped;			/* since the last pass */
	struct stack_gc_stats stats;
};

struct stack_gc *stack_gc_new(void)
{
	return calloc_logged(1, sizeof(struct stack_gc));
}

void stack_gc_free(struct stack_gc *gc)
{
	if (!gc)
		return;
	idset_free(&gc->referenced, NULL);
	idset_free(&gc->candidates, NULL);
	idset_free(&gc->next_candidates, NULL);
	idset_free(&gc->tombstones, free);
	free(gc);
}

void stack_gc_flipped(struct stack_gc *gc)
{
	gc->flipped = true;
}

/* Ids that name no stored stack are not references. */
static void note_id(struct stack_gc *gc, uint64_t id)
{
	if (id && id != APERTURE_STACK_LOST && idset_add(&gc->referenced, id))
		gc->flipped = false;	/* a reference not kept: no pass until the next flip */
}

void stack_gc_note(struct stack_gc *gc, const struct sample_key *key)
{
	note_id(gc, key->user_stack_id);
	note_id(gc, key->kernel_stack_id);
}

const struct aperture_stack *stack_gc_tombstone(const struct stack_gc *gc, uint64_t id)
{
	return idset_get(&gc->tombstones, id);
}

/* Every key of the totals map is a reference (the map is never drained). */
static int note_totals(struct stack_gc *gc, int totals_fd)
{
	struct sample_key key, next;
	void *prev = NULL;

	if (totals_fd < 0)
		return 0;
	while (bpf_map_get_next_key(totals_fd, prev, &next) == 0) {
		stack_gc_note(gc, &next);
		key = next;
		prev = &key;
	}
	return errno == ENOENT ? 0 : -errno;
}

struct restore_ctx {
	struct stack_gc *gc;
	int stacks_fd;
};

/* A stack deleted last pass and counted since: back into the map. */
static void restore_one(uint64_t id, void *value, void *arg)
{
	struct restore_ctx *ctx = arg;
	struct aperture_stack st = { 0 };
	const struct aperture_stack *kept = value;

	if (!idset_has(&ctx->gc->referenced, id))
		return;
	memcpy(&st, kept, sizeof(uint64_t) + kept->depth * sizeof(kept->ips[0]));
	if (bpf_map_update_elem(ctx->stacks_fd, &id, &st, BPF_NOEXIST) == 0)
		ctx->gc->stats.restored++;
}

/* Ids of every stored stack, in *@out (malloc'ed); their number, or a negative errno. */
static ssize_t list_stacks(int stacks_fd, uint64_t **out)
{
	uint64_t *ids = NULL, key, *prev = NULL;
	size_t n = 0, cap = 0;

	while (bpf_map_get_next_key(stacks_fd, prev, &key) == 0) {
		if (array_reserve((void **)&ids, &cap, n, sizeof(*ids), 4096)) {
			free(ids);
			return -ENOMEM;
		}
		ids[n++] = key;
		prev = &ids[n - 1];
	}
	if (errno != ENOENT) {
		free(ids);
		return -errno;
	}
	*out = ids;
	return (ssize_t)n;
}

/* Deletes stack @id, keeping its frames as a tombstone until the next pass. */
static void delete_stack(struct stack_gc *gc, int stacks_fd, uint64_t id)
{
	struct aperture_stack st;
	struct aperture_stack *kept;
	size_t size;

	if (bpf_map_lookup_elem(stacks_fd, &id, &st))
		return;	/* gone already (--reset) */
	if (st.depth > APERTURE_MAX_DEPTH)
		st.depth = APERTURE_MAX_DEPTH;
	size = sizeof(uint64_t) + st.depth * sizeof(st.ips[0]);
	kept = malloc(size);
	if (!kept)
		return;	/* no tombstone, no deletion */
	memcpy(kept, &st, size);
	if (idset_put(&gc->tombstones, id, kept)) {
		free(kept);
		return;
	}
	if (bpf_map_delete_elem(stacks_fd, &id) == 0)
		gc->stats.deleted++;
}

/* Unreferenced twice: deleted; unreferenced once: a candidate for the next pass. */
static int sweep(struct stack_gc *gc, int stacks_fd)
{
	uint64_t *ids = NULL;
	ssize_t n = list_stacks(stacks_fd, &ids);
	struct idset swap;

	if (n < 0)
		return (int)n;
	idset_clear(&gc->next_candidates, NULL);
	for (ssize_t i = 0; i < n; i++) {
		if (idset_has(&gc->referenced, ids[i]))
			continue;
		if (idset_has(&gc->candidates, ids[i]))
			delete_stack(gc, stacks_fd, ids[i]);
		else
			idset_add(&gc->next_candidates, ids[i]);	/* not kept: only a later deletion */
	}
	free(ids);
	swap = gc->candidates;
	gc->candidates = gc->next_candidates;
	gc->next_candidates = swap;
	return 0;
}

int stack_gc_pass(struct stack_gc *gc, int stacks_fd, int totals_fd)
{
	struct restore_ctx restore = { gc, stacks_fd };
	int err;

	if (!gc->flipped)
		return 0;	/* a tombstone may still be needed by a count in flight */
	err = note_totals(gc, totals_fd);
	if (err)
		return err;	/* references unknown: delete nothing, the next pass tries again */
	/* The flip and drain since the last pass took every count that needed the tombstones. */
	idset_each(&gc->tombstones, restore_one, &restore);
	idset_clear(&gc->tombstones, free);
	err = sweep(gc, stacks_fd);
	idset_clear(&gc->referenced, NULL);
	gc->flipped = false;
	gc->stats.passes++;
	gc->stats.tombstones = gc->tombstones.n;
	return err;
}

void stack_gc_stats(const struct stack_gc *gc, struct stack_gc_stats *out)
{
	*out = gc->stats;
	out->tombstones = gc->tombstones.n;
}
