/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Garbage collection of the stacks map, for the modes that drain the counts
 * every interval (run --output-dir, the SkyWalking agent): without it every
 * stack ever walked stays until the map is full, and then new stacks are
 * lost.  A stack is deleted once no count referred to it in two
 * consecutive passes (no drained record, no entry of the never-drained
 * totals map).
 *
 * Why two passes and tombstones: a BPF program stores (or finds) a stack
 * before it writes the count that refers to it, so a pass may see a stack
 * whose count is still in flight.  The flip before each drain waits for every
 * program that started before it (synchronize_rcu), so such a count is in
 * the next drain: two passes an interval apart see it.  A program that
 * found the stack just before the deletion still counts it after: the
 * deleted stacks' frames are kept (tombstones) until the next pass, which
 * comes after a flip and a drain; the drain reads them from there, and a
 * stack counted again by then (in the totals, say) is put back in the map.
 */
#ifndef STACKGC_H
#define STACKGC_H

#include <stdbool.h>
#include <stdint.h>
#include "aperture.h"

struct stack_gc;

struct stack_gc_stats {
	uint64_t passes;
	uint64_t deleted;	/* stacks deleted, in all */
	uint64_t restored;	/* deleted ones counted again by the next pass, put back */
	uint64_t tombstones;	/* deleted at the last pass, frames kept until the next */
};

struct stack_gc *stack_gc_new(void);
void stack_gc_free(struct stack_gc *gc);

/* The counts were flipped: a pass may now run (it needs a flip since the last one). */
void stack_gc_flipped(struct stack_gc *gc);
/* A drained record: its stacks are alive. */
void stack_gc_note(struct stack_gc *gc, const struct sample_key *key);
/* The frames of @id if the last pass deleted it, else NULL. */
const struct aperture_stack *stack_gc_tombstone(const struct stack_gc *gc, uint64_t id);

/*
 * One pass over the stacks map @stacks_fd, the references being the records
 * noted since the last pass and the keys of the totals map @totals_fd.  Call
 * it after a flip and its drain.  0, or a negative errno with nothing deleted.
 */
int stack_gc_pass(struct stack_gc *gc, int stacks_fd, int totals_fd);
void stack_gc_stats(const struct stack_gc *gc, struct stack_gc_stats *out);

#endif /* STACKGC_H */
