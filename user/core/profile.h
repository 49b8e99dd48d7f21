/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A symbolized profile: what every exporter reads.  Built by merging the raw
 * (key, value) records that profilers drain from their BPF maps.
 */
#ifndef PROFILE_H
#define PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "symbolize.h"

#define PROFILE_MAX_VALUES 4	/* = APERTURE_MAX_VALUES */

struct value_type {
	const char *type;	/* pprof sample type, e.g. "samples", "offcpu" */
	const char *unit;	/* e.g. "count", "nanoseconds" */
};

struct profile_frame {
	struct sym_frame sym;
	bool kernel;
};

struct profile_sample {
	uint32_t tgid;
	uint32_t pid;			/* thread id */
	char comm[16];
	uint64_t user_stack_id;		/* ids as the kernel side gave them (0: none) */
	uint64_t kernel_stack_id;
	/* Leaf first: kernel frames (leaf .. syscall entry), then user frames (leaf .. root). */
	struct profile_frame *frames;
	uint32_t nkernel;		/* frames[0 .. nkernel): the object frame, if any, then kernel */
	uint32_t nuser;
	uint64_t object;		/* sample_key.object: a lock address, ... (0: none) */
	char *object_name;		/* owned; the leaf frame's name when the kind names objects */
	uint64_t values[PROFILE_MAX_VALUES];
	uint64_t jit_tried_ns;		/* an unnamed frame in anonymous (JIT) memory, last tried then; 0: none */
};

struct profile;
/*
 * Names a sample's object (a lock) for its leaf frame: a malloc'ed string, or
 * NULL.  @raw: the kind's raw counts value as drained; @known: the name
 * another sample of the same object got, or NULL.
 */
typedef char *(*profile_object_namer)(const struct profile *p, const struct profile_sample *s,
				       const uint64_t *raw, const char *known);

/* One drained record, as profile_add() takes it. */
struct profile_record {
	uint32_t tgid;
	uint32_t pid;
	const char *comm;
	uint64_t user_stack_id;
	const uint64_t *user_ips;	/* leaf first, as the kernel walked them */
	uint32_t nuser;
	uint64_t kernel_stack_id;
	const uint64_t *kernel_ips;
	uint32_t nkernel;
	uint64_t object;
	const uint64_t *raw;		/* the raw counts value */
	const uint64_t *values;		/* profile values to add */
};

struct profile {
	const char *kind;		/* "oncpu", "offcpu" */
	const char *title;		/* "On-CPU", "Off-CPU" */
	const char *skywalking_target;	/* the SkyWalking TargetType it carries ("OFF_CPU"), or NULL */
	int nvalues;
	struct value_type value_types[PROFILE_MAX_VALUES];
	int default_value;		/* index folded/svg weigh by unless told otherwise */
	bool top_by_user_leaf;		/* top lists rank the innermost user frame (off-CPU) */
	struct value_type period_type;
	int64_t period;
	int64_t time_ns;		/* wall-clock start, ns since the epoch */
	int64_t duration_ns;
	struct symbolizer *sym;		/* not owned; for the mapping table */
	profile_object_namer object_name;	/* NULL: the kind has no objects to name */
	const void *object_ctx;		/* the namer's: the profiler whose samples these are, or NULL */
	struct profile_sample *samples;
	size_t nsamples;
	size_t cap;
	uint32_t *index;		/* raw key -> sample index + 1 (profile.c), index_slots of them */
	size_t index_slots;
	void *object_names;		/* tsearch root: (tgid, object) -> the first name it got */
	size_t bytes;			/* what all of the above takes on the heap (util.h heap_bytes) */
	size_t samples_bytes;		/* of it, the samples array */
};

void profile_init(struct profile *p, const char *kind, const char *title, struct symbolizer *sym);
void profile_free(struct profile *p);

/*
 * Adds @r's values to the sample of (tgid, pid, comm, stacks, object),
 * symbolizing the stacks (and naming the object, as the leaf frame) the
 * first time that key is seen.  Returns 0 or -ENOMEM.
 */
int profile_add(struct profile *p, const struct profile_record *r);
/*
 * Adds @r's values to its key's sample when @p has it already, and says so;
 * its frames are not looked at (a caller may leave the ips unread: a
 * stack's id names its frames for good).  false: profile_add makes it.
 */
bool profile_add_known(struct profile *p, const struct profile_record *r);

uint64_t profile_total(const struct profile *p, int value_index);

#endif /* PROFILE_H */
