/* SPDX-License-Identifier: GPL-2.0 */
/*
 * User stacks from DWARF CFI, for code built without frame pointers.  The
 * loader (user/unwind/) turns each mapped file's .eh_frame into rows and
 * lists each process's executable mappings; per frame this walk finds the
 * mapping (the last frame's, else a binary search), the row (the last
 * frame's, else a binary search among the rows of the pc's page, by the
 * file's page index), computes the CFA, reads the return address at CFA - 8
 * and the saved rbp (through a per-CPU copy of the stack around them), and
 * goes on, in a bpf_loop (5.17+) so that the verifier checks one step (up to
 * UNWIND_BATCH frames: unwind_frames), not 127.
 * Mappings without a table (JIT code) are walked with frame pointers; where
 * neither works the stack ends in an APERTURE_IP_TRUNCATED frame.
 */
#ifndef UNWIND_DWARF_BPF_H
#define UNWIND_DWARF_BPF_H

#include "unwind_tables.h"
#include "lib/kernel.bpf.h"
#include "unwind/mappings.bpf.h"
#include "lib/notify.bpf.h"
#include "unwind/python.bpf.h"
#include "unwind/user_read.bpf.h"

/* Set by the loader before load (--unwind): 0 leaves only the frame-pointer walk, verified away. */
const volatile __u32 unwind_dwarf = 0;
/* unwind_fp_in_bpf: unwind/user_read.bpf.h */

/* Sized by the loader (1 entry when dwarf unwinding is off). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct unwind_row);
} unwind_rows SEC(".maps");

/* The registers a frame's step reads and writes (scalars only: a global function's argument). */
struct unwind_regs {
	__u64 pc;
	__u64 sp;
	__u64 bp;
	__u32 precise;		/* pc is an exact pc (first frame, after a signal), not a return address */
	__u32 tgid;		/* the process walked (its rows cached by it: unwind_row_cache) */
};

/* The walk's state, on the caller's stack for the bpf_loop callback. */
struct unwind_walk {
	struct unwind_proc *proc;
	struct aperture_stack *st;
	struct unwind_regs r;
	__u32 gen;		/* this walk's generation of the CPU's unwind_cpu */
	bool truncated;
	struct python_walk py;	/* CPython frames, in a process marked CPython (py.cur.tgid: the walk's tgid) */
};

/*
 * What a walk keeps between frames, per CPU (a page does not fit on the
 * BPF stack, and the walk's state must stay small: its callers' frames and
 * the CPython walk's come close to the 512-byte limit):
 * - a copy of the user stack around the last address read: every frame reads
 *   its return address (and maybe the saved rbp) from the stack, and one
 *   bpf_probe_read_user costs far more per call than per byte (copies of the
 *   rest of the page instead of 512 bytes took 1-3 ns off each frame of a
 *   95-frame stack, bench/unwind.sh's deepstack-nofp), so the copy runs from
 *   just below the address read to the page's end and the frames above are
 *   read from it;
 * - the last row found (a copy of it) and the pcs [lo, hi) it covers
 *   (absolute, within its mapping): a recursion's frames share a return
 *   address and skip both searches and the row's lookup;
 * - the last frame's mapping, tried before the mapping search.
 * A walk owns it through its generation: it takes a new one at its start and
 * trusts what is here only while the generation is still its own, checked
 * again after each use, so that a walk interrupting another on this CPU (a
 * perf sample inside a tracepoint's walk) costs the outer walk only a retake,
 * and tables the loader rewrites between samples are never read through a
 * stale note.
 */
#define UNWIND_WINDOW 4096		/* bytes of stack copied at once, at most; a power of 2 */
#define UNWIND_WINDOW_BELOW 64		/* of them below the address read: a saved rbp sits under the return address */
#define UNWIND_PAGE 4096		/* a copy never crosses a page: the next one may be unmapped */

struct unwind_cpu {
	__u32 gen;
	__u32 win_len;		/* bytes of win valid; 0: none */
	__u64 win_lo;		/* the user address of win[0] */
	__u64 row_lo;
	__u64 row_hi;		/* 0: no row noted */
	struct unwind_row row;	/* the row noted */
	__u32 mapping;
	__u8 win[UNWIND_WINDOW];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct unwind_cpu);
} unwind_cpu SEC(".maps");

/* @c emptied and owned by a new generation, put in *@gen. */
static __always_inline void unwind_cpu_own(struct unwind_cpu *c, __u32 *gen)
{
	c->win_len = 0;
	c->row_hi = 0;
	c->mapping = 0;
	*gen = ++c->gen;
}

/* At a walk's start: this CPU's unwind_cpu, owned by the walk (*@gen). */
static __always_inline void unwind_cpu_take(__u32 *gen)
{
	__u32 zero = 0;
	struct unwind_cpu *c = bpf_map_lookup_elem(&unwind_cpu, &zero);

	if (c)
		unwind_cpu_own(c, gen);
}

/* This CPU's unwind_cpu for the walk of generation *@gen: taken again (emptied) when another walk took it since. */
static __always_inline struct unwind_cpu *unwind_cpu_get(__u32 *gen)
{
	__u32 zero = 0;
	struct unwind_cpu *c = bpf_map_lookup_elem(&unwind_cpu, &zero);

	if (c && c->gen != *gen)
		unwind_cpu_own(c, gen);
	return c;
}

/* ceil(log2(n + 1)) steps of the search below. */
#define UNWIND_ROW_STEPS 24		/* 16M rows per file */

/*
 * A global function, as unwind_mapping_index (mappings.bpf.h): inlined, the
 * two searches took the walk past a million instructions.
 */

/*
 * Index in unwind_rows of the last row of a file's table (its rows from
 * @first on) whose pc <= @rel, searched among rows [@lo, @hi) of it (all of
 * them, or a page's: the row before @lo is below @rel), or -1.
 */
APERTURE_SUBPROG int unwind_row_index(__u32 first, __u32 lo, __u32 hi, __u64 rel)
{
	__u32 idx, above;

	for (int i = 0; i < UNWIND_ROW_STEPS && lo < hi; i++) {
		__u32 mid = lo + (hi - lo) / 2;
		struct unwind_row *row;

		idx = first + mid;
		row = bpf_map_lookup_elem(&unwind_rows, &idx);
		if (!row)
			return -1;
		/*
		 * hi = mid when the row starts above @rel, else lo = mid + 1, by
		 * arithmetic (both are file offsets, below 2^63): a branch here
		 * split the verifier's states at each step (2455 instructions
		 * for this function against 1120 so), as in unwind_mapping_index.
		 */
		above = -(__u32)((rel - row->pc) >> 63);
		barrier_var(above);
		hi -= (hi - mid) & above;
		lo += (mid + 1 - lo) & ~above;
	}
	return lo ? (int)(first + lo - 1) : -1;
}

/* Entry @p of the page index whose head is at @head in unwind_rows, or @fallback when unreadable. */
static __always_inline __u32 unwind_page_entry(__u32 head, __u32 p, __u32 fallback)
{
	__u32 slot = head + 1 + p / UNWIND_PAGE_PER_SLOT;
	struct unwind_page_slot *s = bpf_map_lookup_elem(&unwind_rows, &slot);

	if (!s)
		return fallback;
	switch (p % UNWIND_PAGE_PER_SLOT) {
	case 0: return s->first[0];
	case 1: return s->first[1];
	default: return s->first[2];
	}
}

/*
 * The rows [*@lo, *@hi) of @m's table among which @rel's row is searched:
 * one page's, by the file's page index (all rows when it has none).  false
 * when @rel is below the first row.  Out-of-range entries (a broken index)
 * are clamped: they give a wrong row, never a read outside the table.
 */
static __always_inline bool unwind_page_rows(struct unwind_mapping *m, __u64 rel, __u32 *lo, __u32 *hi)
{
	__u32 head = m->first_row - m->index_rows, p;
	struct unwind_page_head *h;
	__u64 page;

	*lo = 0;
	*hi = m->nrows;
	if (m->index_rows < 2 || m->index_rows > m->first_row)
		return true;
	h = bpf_map_lookup_elem(&unwind_rows, &head);
	if (!h)
		return true;
	if (rel < h->base)
		return false;
	page = (rel - h->base) >> (h->shift & 63);
	p = page < h->npages ? (__u32)page : h->npages;
	*lo = unwind_page_entry(head, p, 0);
	if (p < h->npages)
		*hi = unwind_page_entry(head, p + 1, m->nrows);
	if (*hi > m->nrows)
		*hi = m->nrows;
	if (*lo > *hi)
		*lo = *hi;
	return true;
}

/* unwind_find_row's answers other than a row. */
#define UNWIND_FIND_NO_MAPPING	(-1)	/* no mapping holds the pc: the maps are stale */
#define UNWIND_FIND_FP		(-2)	/* a mapping without a table: frame pointers */
#define UNWIND_FIND_NO_ROW	(-3)	/* a table without a row for the pc */

/* @c notes row @idx of @m: the pcs it covers run to the next row's, or the mapping's end.  false when not noted. */
static __always_inline bool unwind_note_row(struct unwind_cpu *c, struct unwind_mapping *m, __u32 idx)
{
	__u32 next = idx + 1;
	struct unwind_row *row, *after = NULL;
	__u64 lo, hi;

	row = bpf_map_lookup_elem(&unwind_rows, &idx);
	if (!row)
		return false;
	if (next < m->first_row + m->nrows)
		after = bpf_map_lookup_elem(&unwind_rows, &next);
	lo = m->bias + row->pc;
	hi = after ? m->bias + after->pc : m->end;
	c->row_lo = lo > m->start ? lo : m->start;
	c->row_hi = hi < m->end ? hi : m->end;
	c->row = *row;
	return true;
}

/*
 * The rows the searches found on this CPU, by the pc searched (a
 * direct-mapped cache: a slot per hash of the pc, the last pc to land there
 * kept): a sample's frames outside a recursion (its leaf, the callers
 * around it, libc's thread start) mostly come back in the next samples, and
 * each took a search for its mapping and one for its row, whose steps read
 * table rows that other work has pushed out of the CPU's caches by then.
 * An entry holds for its process (tgid) while the mapping it was found in
 * still holds the pc with the same file, bias and table (first_row): a
 * process that mapped something else there, or a table rebuilt elsewhere,
 * misses, as the note in unwind_cpu would not.  Entries are read and written
 * under the walk's generation (unwind_cpu): one written while another walk
 * took the CPU is emptied, one read then is not used.
 */
#define UNWIND_ROW_CACHE 256		/* entries per CPU, a power of 2 (64 bytes each) */

struct unwind_cached_row {
	__u64 pc;		/* the pc searched (absolute); 0: empty */
	__u64 bias;		/* of its mapping, when found */
	__u64 row_lo;
	__u64 row_hi;		/* the pcs the row covers, as unwind_cpu notes them */
	__u32 tgid;
	__u32 mapping;		/* its index in the process's mappings */
	__u32 first_row;	/* the mapping's table, when found */
	__u32 file_id;
	__u32 idx;		/* the row's index in unwind_rows */
	struct unwind_row row;
};

_Static_assert(sizeof(struct unwind_cached_row) == 64, "a cached row fills a cache line");

struct unwind_row_cache {
	struct unwind_cached_row e[UNWIND_ROW_CACHE];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct unwind_row_cache);
} unwind_row_cache SEC(".maps");

/* @pc's entry in @cache (a multiplicative hash: return addresses share their low bits' patterns). */
static __always_inline struct unwind_cached_row *unwind_cache_slot(struct unwind_row_cache *cache, __u64 pc)
{
	return &cache->e[(pc * 0x9e3779b97f4a7c15ULL) >> 56 & (UNWIND_ROW_CACHE - 1)];
}

/*
 * @pc's row from @e, noted in @c as a search would note it, for the walk of
 * generation @mine in process @tgid: its index in unwind_rows, or -1 when
 * @e does not hold it (or no longer holds for @proc).
 */
static __always_inline int unwind_cache_get(struct unwind_cpu *c, __u32 mine, struct unwind_cached_row *e,
					    struct unwind_proc *proc, __u32 tgid, __u64 pc)
{
	struct unwind_mapping *m;
	struct unwind_row row;
	__u64 lo, hi;
	__u32 mapping, idx;

	if (e->pc != pc || e->tgid != tgid || e->mapping >= proc->nmappings)
		return -1;	/* (a slot past the mappings may hold one the process had) */
	mapping = e->mapping & (UNWIND_MAX_MAPPINGS - 1);
	m = &proc->mappings[mapping];
	if (pc < m->start || pc >= m->end || !m->nrows || m->bias != e->bias ||
	    m->first_row != e->first_row || m->file_id != e->file_id)
		return -1;
	lo = e->row_lo;
	hi = e->row_hi;
	row = e->row;
	idx = e->idx;
	barrier();	/* the entry read before the generation */
	if (c->gen != mine || idx > 0x7fffffff)
		return -1;
	c->row_lo = lo;
	c->row_hi = hi;
	c->row = row;
	c->mapping = mapping;
	return idx;
}

/* Keeps in @e the row @idx of mapping @mapping (@m) that @c notes for @pc, for the walk of generation @mine. */
static __always_inline void unwind_cache_put(struct unwind_cpu *c, __u32 mine, struct unwind_cached_row *e,
					     struct unwind_mapping *m, __u32 mapping, __u32 tgid, __u64 pc, __u32 idx)
{
	e->pc = 0;
	barrier();	/* empty while it is written */
	e->bias = m->bias;
	e->row_lo = c->row_lo;
	e->row_hi = c->row_hi;
	e->tgid = tgid;
	e->mapping = mapping;
	e->first_row = m->first_row;
	e->file_id = m->file_id;
	e->idx = idx;
	e->row = c->row;
	barrier();
	e->pc = pc;
	barrier();
	if (c->gen != mine)
		e->pc = 0;	/* another walk took the CPU meanwhile: the note (or the entry) may be its */
}

/*
 * The index in unwind_rows of the row for @pc in @proc's tables (process
 * @tgid), or an UNWIND_FIND_ answer, for the walk of generation *@gen (the
 * CPU's row cache first, then the last frame's mapping it noted in
 * unwind_cpu; the row found is noted, and cached).
 * unwind_frame has tried the noted row already.  A global function, so that
 * the verifier checks its paths once, not inside every path of the walk's
 * step (inlined, they took syscall_exit with --syscall-stacks past a million
 * instructions).
 */
APERTURE_SUBPROG int unwind_find_row(__u32 *gen, struct unwind_proc *proc, __u64 pc, __u32 tgid)
{
	struct unwind_cached_row *e = NULL;
	struct unwind_row_cache *cache;
	struct unwind_cpu *c;
	struct unwind_mapping *m;
	__u32 mapping = 0, lo, hi, zero = 0;
	int idx;

	if (!gen || !proc)
		return UNWIND_FIND_NO_MAPPING;
	c = unwind_cpu_get(gen);
	cache = bpf_map_lookup_elem(&unwind_row_cache, &zero);
	if (c && cache) {
		e = unwind_cache_slot(cache, pc);
		idx = unwind_cache_get(c, *gen, e, proc, tgid, pc);
		if (idx >= 0)
			return idx;
	}
	if (c)
		mapping = c->mapping;	/* only a hint: checked below */
	mapping &= UNWIND_MAX_MAPPINGS - 1;
	m = &proc->mappings[mapping];
	if (pc < m->start || pc >= m->end) {
		idx = unwind_mapping_index(proc, pc);
		if (idx < 0)
			return UNWIND_FIND_NO_MAPPING;
		mapping = idx & (UNWIND_MAX_MAPPINGS - 1);
		m = &proc->mappings[mapping];
		if (c)
			c->mapping = mapping;
	}
	if (!m->nrows)
		return UNWIND_FIND_FP;
	if (!unwind_page_rows(m, pc - m->bias, &lo, &hi))
		return UNWIND_FIND_NO_ROW;
	idx = unwind_row_index(m->first_row, lo, hi, pc - m->bias);
	if (idx < 0)
		return UNWIND_FIND_NO_ROW;
	if (c && unwind_note_row(c, m, idx) && e)
		unwind_cache_put(c, *gen, e, m, mapping, tgid, pc, idx);
	return idx;
}

/*
 * Reads the 8 bytes of user memory at @addr into *@out for the walk of
 * generation *@gen: from the CPU's copy of the stack when they are in it,
 * else through a new copy (the page's bytes from @addr - UNWIND_WINDOW_BELOW
 * on, up to UNWIND_WINDOW), else by one read of 8 bytes.  1 when read.  A
 * global function: verified once, not at each of the walk's reads.
 */
APERTURE_SUBPROG int unwind_read_user(__u32 *gen, __u64 *out, __u64 addr)
{
	struct unwind_cpu *c;
	__u64 off, lo, end, len, page = addr & ~(__u64)(UNWIND_PAGE - 1);
	__u32 mine;

	if (!gen || !out)
		return 0;
	c = unwind_cpu_get(gen);
	if (!c)
		goto direct;
	mine = *gen;
	off = addr - c->win_lo;
	if (c->win_len >= 8 && off <= c->win_len - 8 && off <= UNWIND_WINDOW - 8) {
		*out = *(__u64 *)(c->win + off);
		barrier();
		if (c->gen == mine)
			return 1;
	}
	/* A new copy, within the page of @addr, so that it fails only where the 8 bytes would. */
	lo = addr - UNWIND_WINDOW_BELOW;
	if (lo > addr || lo < page)
		lo = page;
	end = page + UNWIND_PAGE;
	if (end - lo > UNWIND_WINDOW)
		end = lo + UNWIND_WINDOW;
	if (addr + 8 > end)
		goto direct;	/* 8 bytes across two pages (or the copy's end) */
	len = end - lo;
	barrier_var(len);	/* the bound is checked on the register that is passed */
	if (len > UNWIND_WINDOW)
		goto direct;
	c->win_len = 0;
	if (user_read(c->win, len, (const void *)lo))
		goto direct;	/* the page is not readable: the 8 bytes' read says so */
	c->win_lo = lo;
	c->win_len = len;
	off = addr - lo;
	if (off > UNWIND_WINDOW - 8)
		goto direct;
	*out = *(__u64 *)(c->win + off);
	barrier();
	if (c->gen == mine)
		return 1;
direct:
	return user_read(out, sizeof(*out), (const void *)addr) == 0;
}

static __always_inline bool unwind_read(struct unwind_walk *w, __u64 *out, __u64 addr)
{
	return unwind_read_user(&w->gen, out, addr) == 1;
}

/*
 * unwind_read_user's first answer, inline: the 8 bytes at @addr from @c's
 * copy of the stack, trusted only while the copy is still the walk's
 * (generation *@gen); else the global function's copy or read.
 */
static __always_inline bool unwind_read_near(struct unwind_cpu *c, __u32 *gen, __u64 *out, __u64 addr)
{
	__u64 off;

	if (c) {
		off = addr - c->win_lo;
		if (c->win_len >= 8 && off <= c->win_len - 8 && off <= UNWIND_WINDOW - 8) {
			*out = *(__u64 *)(c->win + off);
			barrier();
			if (c->gen == *gen)
				return true;
		}
	}
	return unwind_read_user(gen, out, addr) == 1;
}

/* One frame of @r by frame pointers, reading through @c: 0 go on, 1 the end (rbp 0), -1 could not. */
static __always_inline int unwind_fp_step_in(struct unwind_cpu *c, __u32 *gen, struct unwind_regs *r)
{
	__u64 next_bp = 0, ra = 0;

	if (!r->bp)
		return 1;
	if (!unwind_read_near(c, gen, &ra, r->bp + 8) || !unwind_read_near(c, gen, &next_bp, r->bp))
		return -1;
	/*
	 * The return address is the caller's, whatever the caller keeps in rbp
	 * (glibc's __libc_start_call_main has no frame pointer): keep it, and
	 * end the chain after it unless the next frame lies above this one.
	 */
	if (next_bp <= r->bp)
		next_bp = 0;
	r->sp = r->bp + 16;
	r->bp = next_bp;
	r->pc = ra;
	r->precise = 0;
	return 0;
}

/* One frame by frame pointers (a mapping without a table in the DWARF walk): as unwind_fp_step_in. */
static __always_inline int unwind_fp_step(struct unwind_walk *w)
{
	return unwind_fp_step_in(NULL, &w->gen, &w->r);
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
	event->tgid = w->py.cur.tgid;
	bpf_ringbuf_submit(event, 0);
}

/*
 * A new mapping placed over pcs a process's tables list: a library unloaded
 * and another loaded where it was (ld.so's first mmap of a library, the one
 * that chooses its address, comes here; its segments follow at fixed
 * addresses).  No walk may read the new code by the old file's rows: a wrong
 * CFA reads a wrong return address, often 0, and the stack ends early
 * without a mark.  So the process's tables are forgotten at once (its walks
 * are frame-pointer walks marked [before-unwind-tables] until user space
 * has read its maps again, which this asks for, the symbolizer's names
 * included).  Loaded once a run, with the DWARF tables (profiler_prepare);
 * every mmap of the machine that picks an address costs a lookup here.
 */
SEC("tp_btf/vm_unmapped_area")
int BPF_PROG(maps_replaced, unsigned long addr, struct vm_unmapped_area_info *info)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct aperture_event *event;
	struct unwind_proc *proc;

	if (addr & 4095)
		return 0;	/* -ENOMEM: nothing placed */
	proc = bpf_map_lookup_elem(&unwind_procs, &tgid);
	if (!proc || !unwind_range_mapped(proc, addr, info->length))
		return 0;
	bpf_map_delete_elem(&unwind_procs, &tgid);
	event = bpf_ringbuf_reserve(&events, sizeof(*event), 0);
	if (!event) {
		stat_inc(STAT_EVENTS_LOST);
		return 0;
	}
	event->type = EVENT_UNWIND_MISS;
	event->tgid = tgid;
	bpf_ringbuf_submit(event, 0);
	return 0;
}

/* The registers saved in the ucontext that __restore_rt's stack points at (x86_64 sigcontext). */
#define UC_RBP 120
#define UC_RSP 160
#define UC_RIP 168

/* unwind_frame's answer when the row's rule or a read failed (as for no row: the walk ends, truncated). */
#define UNWIND_STEP_FAIL	UNWIND_FIND_NO_ROW

/*
 * The CFA of @r's frame when the rule is a register plus @cfa_off (rsp or rbp:
 * nearly every row) into *@cfa; false for the others (PLT, signal frames, the end).
 */
static __always_inline bool unwind_cfa_sum(__u8 cfa_rule, __s32 cfa_off, const struct unwind_regs *r, __u64 *cfa)
{
	if (cfa_rule == UNWIND_CFA_RSP)
		*cfa = r->sp + cfa_off;
	else if (cfa_rule == UNWIND_CFA_RBP)
		*cfa = r->bp + cfa_off;
	else
		return false;
	return true;
}

/* One frame of @r by a CFI @row, reading through @c: 0 go on, 1 the end, UNWIND_STEP_FAIL. */
static __always_inline int unwind_row_step(struct unwind_cpu *c, __u32 *gen, struct unwind_regs *r,
					   const struct unwind_row *row)
{
	__u64 cfa = 0, ra = 0, bp = r->bp;

	if (!unwind_cfa_sum(row->cfa_rule, row->cfa_off, r, &cfa)) {
		switch (row->cfa_rule) {
		case UNWIND_CFA_PLT:
			cfa = r->sp + 8 + ((r->pc & 15) >= (__u64)row->cfa_off ? 8 : 0);
			break;
		case UNWIND_CFA_SIGNAL:
			/*
			 * The ucontext at rsp holds the interrupted code's registers.  Read into
			 * these locals, not a function's own: those took the GPU kind's call_exit
			 * past the 512-byte stack ("combined stack size of 5 calls is 544").
			 */
			if (!unwind_read_near(c, gen, &bp, r->sp + UC_RBP) ||
			    !unwind_read_near(c, gen, &cfa, r->sp + UC_RSP) ||
			    !unwind_read_near(c, gen, &ra, r->sp + UC_RIP))
				return UNWIND_STEP_FAIL;
			r->bp = bp;
			r->sp = cfa;
			r->pc = ra;
			r->precise = 1;	/* the interrupted instruction itself */
			return 0;
		case UNWIND_CFA_END:
			return 1;
		default:
			return UNWIND_STEP_FAIL;
		}
	}
	if (!unwind_read_near(c, gen, &ra, cfa - 8))
		return UNWIND_STEP_FAIL;
	if (row->rbp_rule == UNWIND_RBP_OFFSET && !unwind_read_near(c, gen, &bp, cfa + row->rbp_off))
		return UNWIND_STEP_FAIL;
	r->bp = bp;
	r->sp = cfa;
	r->pc = ra;
	r->precise = 0;
	return 0;
}

/*
 * Steps @r from the frame at its pc to its caller with @proc's tables, for
 * the walk of generation *@gen, through @c (this CPU's unwind_cpu, or NULL):
 * by the row noted there when the pc is in the pcs it covers (a recursion:
 * no search, no lookup), else by the row unwind_find_row finds.  0 go on,
 * 1 the end, UNWIND_STEP_FAIL, or unwind_find_row's UNWIND_FIND_NO_MAPPING
 * or UNWIND_FIND_FP (@r untouched).
 */
static __always_inline int unwind_frame_in(struct unwind_cpu *c, __u32 *gen, struct unwind_proc *proc,
					   struct unwind_regs *r)
{
	struct unwind_row row, *found;
	__u64 pc;
	int idx;

	/* A return address may be just past the function (a call to a noreturn one). */
	pc = r->precise ? r->pc : r->pc - 1;
	if (c && pc >= c->row_lo && pc < c->row_hi) {
		row = c->row;
		barrier();
		if (c->gen == *gen)
			return unwind_row_step(c, gen, r, &row);
	}
	idx = unwind_find_row(gen, proc, pc, r->tgid);
	if (idx < 0)
		return idx;
	/* The row found is noted: no lookup of it, while the note is still the walk's. */
	if (c && pc >= c->row_lo && pc < c->row_hi) {
		row = c->row;
		barrier();
		if (c->gen == *gen)
			return unwind_row_step(c, gen, r, &row);
	}
	found = bpf_map_lookup_elem(&unwind_rows, &idx);
	if (!found)
		return UNWIND_STEP_FAIL;
	row = *found;
	return unwind_row_step(c, gen, r, &row);
}

/* The 8 bytes at @addr from @c's copy of the stack (its start @lo, @len bytes) into *@out; false when not in it. */
static __always_inline bool unwind_win_get(struct unwind_cpu *c, __u64 lo, __u64 len, __u64 addr, __u64 *out)
{
	__u64 off = addr - lo;

	if (off > UNWIND_WINDOW - 8 || off + 8 > len)
		return false;
	*out = *(__u64 *)(c->win + off);
	return true;
}

/*
 * Steps @r (its pc @pc, as unwind_frame_in computes it) by the row noted in
 * @c, inline: when @pc is among the pcs the row covers, its CFA is rsp or rbp
 * plus an offset and what it reads is in the copy of the stack (a
 * recursion's frames after its first).  The row is read in place, not
 * copied, and the generation (@mine) checked once after every read of @c,
 * not after each.  false leaves @r as it was, for unwind_frame_in.
 */
static __always_inline bool unwind_noted_step(struct unwind_cpu *c, __u32 mine, struct unwind_regs *r, __u64 pc)
{
	__u64 cfa, ra, bp = r->bp, lo, len;

	if (pc < c->row_lo || pc >= c->row_hi)
		return false;
	if (!unwind_cfa_sum(c->row.cfa_rule, c->row.cfa_off, r, &cfa))
		return false;	/* PLT, signal frames, the end: rare, the full step */
	lo = c->win_lo;
	len = c->win_len;
	if (!unwind_win_get(c, lo, len, cfa - 8, &ra))
		return false;
	if (c->row.rbp_rule == UNWIND_RBP_OFFSET && !unwind_win_get(c, lo, len, cfa + c->row.rbp_off, &bp))
		return false;
	barrier();	/* the reads above before the generation's */
	if (c->gen != mine)
		return false;
	r->pc = ra;
	r->sp = cfa;
	r->bp = bp;
	r->precise = 0;
	return true;
}

/*
 * Steps @r when it is a caller's frame (its pc a return address) in the
 * mapping the walk last found (@c's note), and that mapping's file keeps
 * frame pointers (UNWIND_MAPPING_FP_FRAMES): its row there is CFA = rbp + 16,
 * rbp saved at CFA - 16, stepped as such with no row search; rbp 0 ends the
 * walk, as in a frame-pointer walk (the outermost frame, _start, clears it).
 * The first frame and a signal's (precise pcs) may be in a prologue: they
 * take their row.  false leaves @r as it was; else *@ret is the step's answer.
 */
static __always_inline bool unwind_fp_file_step(struct unwind_cpu *c, __u32 *gen, struct unwind_proc *proc,
						struct unwind_regs *r, int *ret)
{
	struct unwind_row fp_row = {
		.cfa_rule = UNWIND_CFA_RBP, .cfa_off = 16, .rbp_rule = UNWIND_RBP_OFFSET, .rbp_off = -16,
	};
	struct unwind_mapping *m;

	if (r->precise)
		return false;
	m = &proc->mappings[c->mapping & (UNWIND_MAX_MAPPINGS - 1)];	/* a hint: checked against the pc */
	if (!(m->flags & UNWIND_MAPPING_FP_FRAMES) || r->pc - 1 < m->start || r->pc - 1 >= m->end)
		return false;
	*ret = r->bp ? unwind_row_step(c, gen, r, &fp_row) : 1;
	return true;
}

/* unwind_noted_step, else unwind_fp_file_step, else unwind_frame_in: one frame's step, as unwind_frame_in answers. */
static __always_inline int unwind_frame_fast(struct unwind_cpu *c, __u32 *gen, struct unwind_proc *proc,
					     struct unwind_regs *r)
{
	int ret;

	if (c && unwind_noted_step(c, *gen, r, r->precise ? r->pc : r->pc - 1))
		return 0;
	if (c && unwind_fp_file_step(c, gen, proc, r, &ret))
		return ret;
	return unwind_frame_in(c, gen, proc, r);
}

/*
 * unwind_frame_fast as a global function (verified once): one frame's step,
 * for a walk that has something to do between frames (CPython's).
 */
APERTURE_SUBPROG int unwind_frame(__u32 *gen, struct unwind_proc *proc, struct unwind_regs *r)
{
	if (!gen || !proc || !r)
		return UNWIND_STEP_FAIL;
	return unwind_frame_fast(unwind_cpu_get(gen), gen, proc, r);
}

/* Frames one unwind_frames call records and steps, at most. */
#define UNWIND_BATCH 8

/*
 * Appends @pc to @st inside a batched walk, at *@depth (the batch keeps the
 * depth in a local and stores it in @st once, at its end); false when the
 * stack is full.
 */
static __always_inline bool unwind_push(struct aperture_stack *st, __u64 *depth, __u64 pc)
{
	__u64 d = *depth;	/* 64 bits, checked where it indexes (6.1: see python_run_put) */

	barrier_var(d);
	if (d >= APERTURE_MAX_DEPTH)
		return false;
	st->ips[d] = pc;
	*depth = d + 1;
	return true;
}

/*
 * Records @r's frame in @st and steps @r to its caller, up to UNWIND_BATCH
 * times, for a walk with nothing to do between frames (no CPython): one
 * call of a global function and one lookup of unwind_cpu for that many
 * frames, not one per frame.  Stops after a frame whose step did not give 0
 * (and returns that answer, as unwind_frame does, the frame recorded), after
 * a pc of 0, or when @st is full (0: the caller sees the depth).
 */
APERTURE_SUBPROG int unwind_frames(__u32 *gen, struct unwind_proc *proc, struct unwind_regs *r,
			     struct aperture_stack *st)
{
	struct unwind_regs regs;	/* @r and the depth kept local between frames: not reloaded after each barrier */
	struct unwind_cpu *c;
	__u64 depth;
	int ret = 0;

	if (!gen || !proc || !r || !st)
		return UNWIND_STEP_FAIL;
	c = unwind_cpu_get(gen);
	regs = *r;
	depth = st->depth;
	for (int i = 0; i < UNWIND_BATCH; i++) {
		if (!unwind_push(st, &depth, regs.pc))
			break;
		ret = unwind_frame_fast(c, gen, proc, &regs);
		if (ret || !regs.pc)
			break;
	}
	st->depth = depth;
	*r = regs;
	return ret;
}

/*
 * bpf_loop callback: records the current frame, then steps to its caller (in
 * a process without CPython frames, unwind_frames does both for several
 * frames).  1 stops.
 */
static long unwind_step(__u64 index, void *arg)
{
	struct unwind_walk *w = arg;
	struct aperture_stack *st = w->st;
	__u32 depth = st->depth;
	int ret;

	if (depth >= APERTURE_MAX_DEPTH) {
		w->truncated = true;
		return 1;
	}
	if (w->py.proc) {
		st->ips[depth] = w->r.pc;
		st->depth = depth + 1;
		if (!python_frame(&w->py, st, w->r.precise ? w->r.pc : w->r.pc - 1)) {
			w->truncated = true;
			return 1;
		}
		ret = unwind_frame(&w->gen, w->proc, &w->r);
	} else {
		ret = unwind_frames(&w->gen, w->proc, &w->r, st);
	}
	if (ret == UNWIND_FIND_NO_MAPPING) {
		unwind_report_miss(w);
		w->truncated = true;
		return 1;
	}
	if (ret == UNWIND_FIND_FP)
		ret = unwind_fp_step(w);
	if (ret < 0)
		w->truncated = true;
	return ret != 0 || !w->r.pc;
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
	w->r.pc = regs->ip;
	w->r.sp = regs->sp;
	w->r.bp = regs->bp;
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

	if (!APERTURE_HAS_LOOP || !unwind_dwarf)
		return 0;
	w.py.cur.tgid = bpf_get_current_pid_tgid() >> 32;
	w.proc = bpf_map_lookup_elem(&unwind_procs, &w.py.cur.tgid);
	if (!w.proc)
		return -1;
	if (python_enabled && (w.proc->flags & UNWIND_PROC_PYTHON))
		w.py.proc = bpf_map_lookup_elem(&python_procs, &w.py.cur.tgid);
	if (!unwind_walk_begin(&w, st))
		return 0;
	w.r.precise = 1;
	w.r.tgid = w.py.cur.tgid;
	unwind_cpu_take(&w.gen);
	bpf_loop(APERTURE_MAX_DEPTH + 1, unwind_step, &w, 0);
	if (w.truncated)
		unwind_mark(st, APERTURE_IP_TRUNCATED);
	return 1;
}

/*
 * Records @r's frame in @st and steps @r to its caller by frame pointers, up
 * to UNWIND_BATCH times (as unwind_frames does for the tables): 1 when the
 * walk is over (rbp 0 at _start, an unreadable frame or one not above the
 * last, a pc of 0, a full stack), 0 to go on.
 */
APERTURE_SUBPROG int unwind_fp_frames(__u32 *gen, struct unwind_regs *r, struct aperture_stack *st)
{
	struct unwind_cpu *c;
	__u64 depth;
	int ret = 0;

	if (!gen || !r || !st)
		return 1;
	c = unwind_cpu_get(gen);
	depth = st->depth;
	for (int i = 0; i < UNWIND_BATCH; i++) {
		if (!unwind_push(st, &depth, r->pc) || unwind_fp_step_in(c, gen, r) != 0 || !r->pc) {
			ret = 1;
			break;
		}
	}
	st->depth = depth;
	return ret;
}

/* bpf_loop callback of the frame-pointer walk: up to UNWIND_BATCH frames. */
static long unwind_fp_loop_step(__u64 index, void *arg)
{
	struct unwind_walk *w = arg;

	return unwind_fp_frames(&w->gen, &w->r, w->st) != 0;
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

	if (!APERTURE_HAS_LOOP || !unwind_fp_in_bpf || !unwind_walk_begin(&w, st))
		return 0;
	unwind_cpu_take(&w.gen);
	bpf_loop(APERTURE_MAX_DEPTH, unwind_fp_loop_step, &w, 0);
	return 1;
}

#endif /* UNWIND_DWARF_BPF_H */
