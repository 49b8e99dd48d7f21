/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The ProfileEvent records that raw events become (`record --events`): one
 * struct per variant, which bincode.c writes, and the frames a kind's
 * raw_event hook (struct profiler_ops) reads its event's stacks into.  A new
 * kind of raw event adds its variant here and its field table in bincode.c.
 */
#ifndef PROFILE_EVENT_H
#define PROFILE_EVENT_H

#include <stdbool.h>
#include <stdint.h>
#include "aperture.h"

/* The variant tags: declaration order of `enum ProfileEvent`. */
enum pe_kind {
	PE_CPU_SAMPLE = 0,
	PE_LOCK = 1,
	PE_SYSCALL = 2,
	PE_GPU_KERNEL = 3,
	PE_KINDS,
};

struct pe_u64s {		/* Vec<u64> (StackTrace) */
	uint64_t *v;
	uint64_t n;
};

struct pe_syms {		/* Vec<Option<String>>: v[i] NULL is None */
	char **v;
	uint64_t n;
};

/* The seed's structs, field for field, in declaration order. */
struct pe_cpu_sample {
	uint64_t timestamp;	/* ns since boot (CLOCK_MONOTONIC) */
	int32_t pid, tid;
	uint32_t cpu_id;
	struct pe_u64s user_stack, kernel_stack;	/* leaf first */
	char *comm;
	struct pe_syms user_stack_symbols, kernel_stack_symbols;
};

struct pe_lock {
	uint64_t timestamp;
	int32_t pid, tid;
	uint64_t lock_addr, hold_time_ns, wait_time_ns;
	struct pe_u64s stack_trace;
	char *comm;
	struct pe_syms stack_symbols;
};

struct pe_syscall {
	uint64_t timestamp;
	int32_t pid, tid;
	uint32_t syscall_id;
	uint64_t duration_ns;
	int64_t return_value;
	char *comm;
};

struct pe_gpu_kernel {
	uint64_t timestamp;
	int32_t pid;
	char *kernel_name;
	uint64_t duration_ns;
	uint32_t grid_size[3], block_size[3];
};

struct profile_event {
	uint32_t kind;		/* enum pe_kind */
	union {
		struct pe_cpu_sample cpu;
		struct pe_lock lock;
		struct pe_syscall sys;
		struct pe_gpu_kernel gpu;
	};
};

/*
 * The event stream's scratch for one record, which a raw_event hook fills:
 * two stacks' frames, their names when symbolizing, and the comm.
 */
struct raw_frames {
	uint64_t ips[2 * APERTURE_MAX_DEPTH];
	char *names[2 * APERTURE_MAX_DEPTH];
	int used;			/* frames added so far */
	struct symbolizer *sym;		/* NULL: frames without names */
	char comm[APERTURE_COMM_LEN + 1];	/* the event's, NUL-terminated */
	char *owned;			/* a string the record points to, freed once it is written */
};

struct profiler;
struct symbolizer;

/*
 * Appends the frames of @p's stack @stack_id of process @tgid (leaf first)
 * after those added before, named when @f->sym is set (the function, NULL
 * when no symbol covers it); returns where they start.  A stack that is not
 * there adds none.
 */
int raw_frames_add(struct raw_frames *f, struct profiler *p, uint32_t tgid, uint64_t stack_id, bool kernel);
/* The frames added from @from on, and their names (none when not symbolizing). */
struct pe_u64s raw_frames_ips(struct raw_frames *f, int from);
struct pe_syms raw_frames_names(struct raw_frames *f, int from);

#endif /* PROFILE_EVENT_H */
