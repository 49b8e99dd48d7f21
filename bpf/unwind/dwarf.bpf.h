/* SPDX-License-Identifier: GPL-2.0 */
/*
 * User stacks from DWARF CFI, for code built without frame pointers.  The
 * loader (user/unwind/) turns each mapped file's .eh_frame into rows and
 * lists each process's executable mappings; per frame this walk finds the
 * mapping (binary search), the row (binary search), computes the CFA, reads
 * the return address at CFA - 8 and the saved rbp, and goes on, in a
 * bpf_loop (5.17+) so that the verifier checks one step, not 127.
 * Mappings without a table (JIT code) are walked with frame pointers; where
 * neither works the stack ends in an APERTURE_IP_TRUNCATED frame.
 */
#ifndef UNWIND_DWARF_BPF_H
#define UNWIND_DWARF_BPF_H

#include "unwind_tables.h"
#include "unwind/mappings.bpf.h"
#include "lib/notify.bpf.h"
#include "unwind/python.bpf.h"

/* Set by the loader before load (--unwind): 0 leaves only the frame-pointer walk, verified away. */
const volatile __u32 unwind_dwarf = 0;
/*
 * Set where bpf_loop and bpf_probe_read_user work (the dwarf_unwind probe):
 * frame-pointer walks are done here rather than by bpf_get_stack(), whose
 * kernel walk goes on through a garbage rbp past the last real frame (glibc's
 * start_thread has none) until a read faults: 5.5 us of a 9.2 us sample
 * against 1.8 us here (bench/unwind.sh, U4).
 */
const volatile __u32 unwind_fp_in_bpf = 0;

/* Sized by the loader (1 entry when dwarf unwinding is off). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct unwind_row);
} unwind_rows SEC(".maps");

/* The walk's state, on the caller's stack for the bpf_loop callback. */
struct unwind_walk {
	struct unwind_proc *proc;
	struct aperture_stack *st;
	__u64 pc;
	__u64 sp;
	__u64 bp;
	__u32 tgid;
	bool precise;		/* pc is an exact pc (first frame, after a signal), not a return address */
	bool truncated;
	struct python_walk py;	/* CPython frames, in a process marked CPython */
};

/* ceil(log2(n + 1)) steps of the search below. */
#define UNWIND_ROW_STEPS 24		/* 16M rows per file */

/*
 * A global function, as unwind_mapping_index (mappings.bpf.h): inlined, the
 * two searches took the walk past a million instructions.
 */

/* Index in unwind_rows of the last row of [first, first + nrows) whose pc <= @rel, or -1. */
__noinline int unwind_row_index(__u32 first, __u32 nrows, __u64 rel)
{
	__u32 lo = 0, hi = nrows, idx;

	for (int i = 0; i < UNWIND_ROW_STEPS && lo < hi; i++) {
		__u32 mid = (lo + hi) / 2;
		struct unwind_row *row;

		idx = first + mid;
		row = bpf_map_lookup_elem(&unwind_rows, &idx);
		if (!row)
			return -1;
		if (row->pc <= rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? (int)(first + lo - 1) : -1;
}

/*
 * The last row this CPU's walk found, for the pcs [lo, hi) it covers
 * (absolute, within its mapping): a recursion's frames share a return
 * address and skip both searches.  Emptied at the start of every walk, so
 * that tables the loader rewrites between samples are never read through a
 * stale index; a walk that interrupts another (a sample in a tracepoint's
 * walk) empties it too, and the tgid keeps one process's row from another's.
 */
struct unwind_last_row {
	__u64 lo;
	__u64 hi;
	__u32 tgid;
	__u32 row;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct unwind_last_row);
} unwind_last_row SEC(".maps");

/*
 * Global functions, as unwind_row_index: the verifier checks each once, and
 * the walk's step sees one unknown index, as from the search.
 */

/* The row of @lookup in @tgid's tables when it is this CPU's last one found, or -1. */
__noinline int unwind_last_row_get(__u32 tgid, __u64 lookup)
{
	__u32 zero = 0;
	struct unwind_last_row *last = bpf_map_lookup_elem(&unwind_last_row, &zero);

	if (!last || last->tgid != tgid || lookup < last->lo || lookup >= last->hi)
		return -1;
	return last->row;
}

/*
 * Row @idx of @m was found for @tgid: the pcs it covers run to the next
 * row's, or the mapping's end.  Returns 0 (a global function returns a scalar).
 */
__noinline int unwind_last_row_set(__u32 tgid, struct unwind_mapping *m, __u32 idx)
{
	__u32 zero = 0, next = idx + 1;
	struct unwind_last_row *last = bpf_map_lookup_elem(&unwind_last_row, &zero);
	struct unwind_row *row, *after = NULL;
	__u64 lo, hi;

	if (!last || !m)
		return 0;
	row = bpf_map_lookup_elem(&unwind_rows, &idx);
	if (!row)
		return 0;
	if (next < m->first_row + m->nrows)
		after = bpf_map_lookup_elem(&unwind_rows, &next);
	lo = m->bias + row->pc;
	hi = after ? m->bias + after->pc : m->end;
	last->lo = lo > m->start ? lo : m->start;
	last->hi = hi < m->end ? hi : m->end;
	last->tgid = tgid;
	last->row = idx;
	return 0;
}

/* A new walk: nothing found yet. */
static __always_inline void unwind_last_row_clear(void)
{
	__u32 zero = 0;
	struct unwind_last_row *last = bpf_map_lookup_elem(&unwind_last_row, &zero);

	if (last)
		last->hi = 0;
}

static __always_inline bool unwind_read(__u64 *out, __u64 addr)
{
	return bpf_probe_read_user(out, sizeof(*out), (const void *)addr) == 0;
}

/*
 * Tells user space that this process's mappings are stale (a library loaded
 * since), at most every 50 ms per process: a process loading its modules
 * (python's dlopens at start) is re-read while it does, and one whose misses
 * persist costs at most 20 reads of its maps a second.
 */
#define UNWIND_MISS_INTERVAL_NS 50000000ULL

static __always_inline void unwind_report_miss(struct unwind_walk *w)
{
	struct aperture_event *event;
	__u64 now = bpf_ktime_get_ns();

	if (now - w->proc->miss_ns < UNWIND_MISS_INTERVAL_NS)
		return;
	w->proc->miss_ns = now;
	event = bpf_ringbuf_reserve(&events, sizeof(*event), 0);
	if (!event) {
		stat_inc(STAT_EVENTS_LOST);
		return;
	}
	event->type = EVENT_UNWIND_MISS;
	event->tgid = w->tgid;
	bpf_ringbuf_submit(event, 0);
}

/* One frame by frame pointers: 0 go on, 1 the end (rbp 0), -1 could not. */
static __always_inline int unwind_fp_step(struct unwind_walk *w)
{
	__u64 next_bp, ra;

	if (!w->bp)
		return 1;
	if (!unwind_read(&ra, w->bp + 8) || !unwind_read(&next_bp, w->bp))
		return -1;
	/*
	 * The return address is the caller's, whatever the caller keeps in rbp
	 * (glibc's __libc_start_call_main has no frame pointer): keep it, and
	 * end the chain after it unless the next frame lies above this one.
	 */
	if (next_bp <= w->bp)
		next_bp = 0;
	w->sp = w->bp + 16;
	w->bp = next_bp;
	w->pc = ra;
	w->precise = false;
	return 0;
}

/* The registers saved in the ucontext that __restore_rt's stack points at (x86_64 sigcontext). */
#define UC_RBP 120
#define UC_RSP 160
#define UC_RIP 168

/* One frame by a CFI row: 0 go on, 1 the end, -1 could not. */
static __always_inline int unwind_row_step(struct unwind_walk *w, const struct unwind_row *row)
{
	__u64 cfa, ra, bp;

	switch (row->cfa_rule) {
	case UNWIND_CFA_RSP:
		cfa = w->sp + row->cfa_off;
		break;
	case UNWIND_CFA_RBP:
		cfa = w->bp + row->cfa_off;
		break;
	case UNWIND_CFA_PLT:
		cfa = w->sp + 8 + ((w->pc & 15) >= (__u64)row->cfa_off ? 8 : 0);
		break;
	case UNWIND_CFA_SIGNAL:
		if (!unwind_read(&bp, w->sp + UC_RBP) || !unwind_read(&cfa, w->sp + UC_RSP) ||
		    !unwind_read(&ra, w->sp + UC_RIP))
			return -1;
		w->bp = bp;
		w->sp = cfa;
		w->pc = ra;
		w->precise = true;	/* the interrupted instruction itself */
		return 0;
	case UNWIND_CFA_END:
		return 1;
	default:
		return -1;
	}
	if (!unwind_read(&ra, cfa - 8))
		return -1;
	if (row->rbp_rule == UNWIND_RBP_OFFSET && !unwind_read(&w->bp, cfa + row->rbp_off))
		return -1;
	w->sp = cfa;
	w->pc = ra;
	w->precise = false;
	return 0;
}

/* bpf_loop callback: records the current frame, then steps to its caller. 1 stops. */
static long unwind_step(__u64 index, void *arg)
{
	struct unwind_walk *w = arg;
	struct aperture_stack *st = w->st;
	struct unwind_mapping *m;
	struct unwind_row *row;
	__u32 depth = st->depth;
	__u64 lookup;
	int idx, ret;

	if (depth >= APERTURE_MAX_DEPTH) {
		w->truncated = true;
		return 1;
	}
	st->ips[depth] = w->pc;
	st->depth = depth + 1;
	/* A return address may be just past the function (a call to a noreturn one). */
	lookup = w->precise ? w->pc : w->pc - 1;
	if (!python_frame(&w->py, st, lookup)) {
		w->truncated = true;
		return 1;
	}
	idx = unwind_last_row_get(w->tgid, lookup);
	if (idx >= 0) {
		row = bpf_map_lookup_elem(&unwind_rows, &idx);
		ret = row ? unwind_row_step(w, row) : -1;
		goto stepped;
	}
	idx = unwind_mapping_index(w->proc, lookup);
	if (idx < 0) {
		unwind_report_miss(w);
		w->truncated = true;
		return 1;
	}
	m = &w->proc->mappings[idx & (UNWIND_MAX_MAPPINGS - 1)];
	if (!m->nrows) {
		ret = unwind_fp_step(w);
	} else {
		idx = unwind_row_index(m->first_row, m->nrows, lookup - m->bias);
		if (idx >= 0)
			unwind_last_row_set(w->tgid, m, idx);
		row = idx >= 0 ? bpf_map_lookup_elem(&unwind_rows, &idx) : NULL;
		ret = row ? unwind_row_step(w, row) : -1;
	}
stepped:
	if (ret < 0)
		w->truncated = true;
	return ret != 0 || !w->pc;
}

/* Appends @marker after the last frame of @st, or over it when the stack is full. */
static __always_inline void unwind_mark(struct aperture_stack *st, __u64 marker)
{
	__u32 depth = st->depth;

	if (!depth)
		return;
	if (depth >= APERTURE_MAX_DEPTH)
		depth = APERTURE_MAX_DEPTH - 1;
	barrier_var(depth);	/* checked again where it indexes: 6.1 does not narrow the clamp */
	if (depth < APERTURE_MAX_DEPTH) {
		st->ips[depth] = marker;
		st->depth = depth + 1;
	}
}

/*
 * Starts a walk of the current task's user stack into @st from its user
 * registers at the last entry into the kernel (as bpf_get_stack uses them);
 * false when the task has none.  Direct (BTF) loads: BPF_CORE_READ's
 * bpf_probe_read_kernel is denied under lockdown=confidentiality.
 */
static __always_inline bool unwind_walk_begin(struct unwind_walk *w, struct aperture_stack *st)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());

	if (!regs)
		return false;
	w->pc = regs->ip;
	w->sp = regs->sp;
	w->bp = regs->bp;
	w->st = st;
	st->depth = 0;
	return true;
}

/*
 * Walks the current task's user stack into @st with the tables: 1 when this
 * process has tables (the walk was done, whole or marked truncated), 0 when
 * DWARF unwinding is off, -1 when this process has no tables yet (the caller
 * walks frame pointers instead, and marks the walk).
 */
static __always_inline int unwind_dwarf_walk(struct aperture_stack *st)
{
	struct unwind_walk w = {};

	if (!unwind_dwarf)
		return 0;
	w.tgid = bpf_get_current_pid_tgid() >> 32;
	w.proc = bpf_map_lookup_elem(&unwind_procs, &w.tgid);
	if (!w.proc)
		return -1;
	if (python_enabled && (w.proc->flags & UNWIND_PROC_PYTHON))
		w.py.proc = bpf_map_lookup_elem(&python_procs, &w.tgid);
	w.py.cur.tgid = w.tgid;
	if (!unwind_walk_begin(&w, st))
		return 0;
	w.precise = true;
	unwind_last_row_clear();
	bpf_loop(APERTURE_MAX_DEPTH + 1, unwind_step, &w, 0);
	if (w.truncated)
		unwind_mark(st, APERTURE_IP_TRUNCATED);
	return 1;
}

/* bpf_loop callback of the frame-pointer walk: records the frame, steps to its caller. */
static long unwind_fp_loop_step(__u64 index, void *arg)
{
	struct unwind_walk *w = arg;
	struct aperture_stack *st = w->st;
	__u32 depth = st->depth;

	if (depth >= APERTURE_MAX_DEPTH)
		return 1;
	st->ips[depth] = w->pc;
	st->depth = depth + 1;
	/* The chain ends at rbp 0 (_start), at an unreadable frame or one not above the last. */
	return unwind_fp_step(w) != 0 || !w->pc;
}

/*
 * The current task's user stack by frame pointers, as bpf_get_stack()
 * walks it (first the interrupted ip, then the return address above each
 * frame), but ending where the chain stops making sense instead of reading
 * on until a fault.  1 when done, 0 when the caller must use bpf_get_stack().
 */
static __always_inline int unwind_fp_walk(struct aperture_stack *st)
{
	struct unwind_walk w = {};

	if (!unwind_fp_in_bpf || !unwind_walk_begin(&w, st))
		return 0;
	bpf_loop(APERTURE_MAX_DEPTH, unwind_fp_loop_step, &w, 0);
	return 1;
}

#endif /* UNWIND_DWARF_BPF_H */
