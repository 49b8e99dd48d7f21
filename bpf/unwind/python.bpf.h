/* SPDX-License-Identifier: GPL-2.0 */
/*
 * CPython frames, put in a user stack in place of the evaluator's native
 * frame (bpf/unwind/dwarf.bpf.h calls in at each frame of a process the
 * loader marked CPython).  The thread's PyThreadState comes from its pthread
 * TSD slot (_PyRuntime.autoTSSkey, set by every CPython 3.8-3.13 for each
 * thread with a thread state) through the task's fsbase, so a thread waiting
 * for the GIL shows its own frames, never the holder's; its thread_id must be
 * this thread's pthread_self() (= fsbase).  Each native evaluator frame, leaf
 * to root, takes the Python frames of its run: one frame object (3.8-3.10),
 * or frames down to the entry frame (3.11: is_entry; 3.12+: the CSTACK shim).
 * Offsets: user/unwind/python.c.
 */
#ifndef UNWIND_PYTHON_BPF_H
#define UNWIND_PYTHON_BPF_H

#include "python_tables.h"
#include "lib/stats.bpf.h"
#include "lib/kernel.bpf.h"
#include "unwind/user_read.bpf.h"

/* Set by the loader before load (--python): 0 verifies the walk away. */
const volatile __u32 python_enabled = 0;

/* Sized by the loader (1 entry when Python is off). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct python_proc);
} python_procs SEC(".maps");

/*
 * Per (tgid, code object address): the code object last seen there and its
 * generation (bpf/include/python_tables.h).  LRU: a forgotten address starts
 * again at generation 0, which the loader then refuses to name for an older
 * frame only if the identity differs.  Sized by the loader.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1);
	__type(key, struct python_code_key);
	__type(value, struct python_code_seen);
} python_codes SEC(".maps");

/* Where a stack's walk of Python frames is: scalars only (python_run_put's argument). */
struct python_cursor {
	__u64 frame;			/* the next Python frame to show; 0 when none is left */
	__u32 tgid;
	__s32 state;			/* 0: thread state not read yet; 1: walking; -1: done */
};

struct python_walk {
	struct python_proc *proc;	/* NULL: not a CPython process (the common case: one test per frame) */
	struct python_cursor cur;
};

/* The state of one evaluator's run of frames, for the bpf_loop callback. */
struct python_emit {
	const struct python_proc *py;
	struct python_cursor *cur;
	struct aperture_stack *st;
	__u32 emitted;
	bool full;			/* the stack is full */
	bool cut;			/* a read failed: the walk stops */
};

static __always_inline bool py_read(void *out, __u32 size, __u64 addr)
{
	return user_read(out, size, (const void *)addr) == 0;
}

static __always_inline bool python_in_eval(const struct python_proc *py, __u64 pc)
{
	return (pc >= py->eval_start && pc < py->eval_end) ||
	       (pc >= py->cold_start && pc < py->cold_end);
}

/* The current thread's newest Python frame into cur->frame: false when it has none. */
static __always_inline bool python_thread_frame(const struct python_proc *py, struct python_cursor *cur)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 fsbase = task->thread.fsbase, tstate = 0, thread_id = 0, ptr = 0;
	struct { __s32 initialized; __u32 key; } tss;

	if (!py_read(&tss, sizeof(tss), py->tss_addr) || !tss.initialized || tss.key >= 32)
		return false;	/* not initialized yet (the loader checked the offset itself) */
	if (!py_read(&tstate, sizeof(tstate), fsbase + py->tsd_offset + tss.key * 16ULL + 8) || !tstate)
		return false;	/* a thread without a Python thread state */
	if (!py_read(&thread_id, sizeof(thread_id), tstate + py->ts_thread_id) || thread_id != fsbase) {
		stat_inc(STAT_PY_CUT);
		return false;
	}
	if (!py_read(&ptr, sizeof(ptr), tstate + py->ts_frame))
		return false;
	if (py->layout == PY_LAYOUT_CFRAME_ENTRY || py->layout == PY_LAYOUT_CFRAME_OWNER) {
		if (!ptr || !py_read(&ptr, sizeof(ptr), ptr + py->cframe_current))
			return false;
	}
	cur->frame = ptr;
	return ptr != 0;
}

/* Each Python frame and its code object, read in one piece each (two reads a frame). */
struct python_buf {
	__u8 frame[PY_READ_MAX];
	__u8 code[PY_READ_MAX];
	__u32 code_new;		/* python_frame_ip's: the code object was not seen at its address before */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct python_buf);
} python_scratch SEC(".maps");

/* The 8 bytes at @off of @buf (0 when @off is out of it: the loader checked every offset fits). */
static __always_inline __u64 py_u64(const __u8 *buf, __u32 off)
{
	off &= 2 * PY_READ_MAX - 1;
	if (off > PY_READ_MAX - 8)
		return 0;
	return *(const __u64 *)(buf + off);
}

static __always_inline __u32 py_u32(const __u8 *buf, __u32 off)
{
	off &= 2 * PY_READ_MAX - 1;
	if (off > PY_READ_MAX - 4)
		return 0;
	return *(const __u32 *)(buf + off);
}

static __always_inline __u8 py_u8(const __u8 *buf, __u32 off)
{
	off &= 2 * PY_READ_MAX - 1;
	if (off > PY_READ_MAX - 1)
		return 0;
	return buf[off];
}

/* Reads @len bytes (1..PY_READ_MAX) at @addr into @buf. */
static __always_inline bool py_read_span(__u8 *buf, __u32 len, __u64 addr)
{
	len &= 2 * PY_READ_MAX - 1;
	if (!len || len > PY_READ_MAX)
		return false;
	return user_read(buf, len, (const void *)addr) == 0;
}

/* The instruction index (code units) of the frame in @b running @code. */
static __always_inline __u64 python_instr(const struct python_proc *py, const struct python_buf *b, __u64 code)
{
	__u64 ptr, base;
	__s32 lasti;

	if (py->layout == PY_LAYOUT_FRAME_OBJECT) {
		lasti = (__s32)py_u32(b->frame, py->frame_instr);
		if (lasti < 0)
			return 0;
		return py->minor <= 9 ? (__u64)lasti / 2 : (__u64)lasti;	/* bytes before 3.10 */
	}
	base = code + py->code_adaptive;
	ptr = py_u64(b->frame, py->frame_instr);
	return ptr < base ? 0 : (ptr - base) / 2;
}

/*
 * This CPU's last answers of python_codes, by code object address (direct
 * mapped): each Python frame asked the LRU map, 760 ns a frame at 99 Hz
 * (its bucket, element and LRU bit cold each time: bpf_ktime_get_ns around
 * it on chain.py), a fifth of a Python sample's cost; a note is one cache
 * line.  A note holds while the identity read at the address is the one
 * noted: a new code object there (another identity) asks the map, which
 * gives it the next generation.  What a note can get wrong is only a
 * generation older than the map's (another CPU saw the address change back
 * and forth meanwhile, or a note torn by a program interrupting its write):
 * the loader then finds the map's generation differs and leaves the frame
 * unnamed, never misnamed (user/symbolize/pyframes.c code_is_the_sampled).
 */
#define PY_CODE_NOTES 256		/* per CPU, a power of 2 (32 bytes each) */

struct python_code_note {
	__u64 code;			/* 0: empty (or being written) */
	__u64 identity;
	__u32 tgid;
	__u32 generation;
	__u64 pad;
};

struct python_code_notes {
	struct python_code_note e[PY_CODE_NOTES];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct python_code_notes);
} python_code_notes SEC(".maps");

/*
 * The generation of the code object at @code, identified by @identity (a new
 * one: the next generation), from python_codes (the truth, shared) through
 * this CPU's note; *@code_new set when it was not seen there before.
 */
static __always_inline __u32 python_generation(__u32 tgid, __u64 code, __u64 identity, __u32 *code_new)
{
	struct python_code_key key = { .tgid = tgid, .code = code };
	struct python_code_seen fresh = { .identity = identity }, *seen;
	struct python_code_note *note = NULL;
	struct python_code_notes *notes;
	__u32 zero = 0, generation;

	notes = bpf_map_lookup_elem(&python_code_notes, &zero);
	if (notes) {
		note = &notes->e[(code * 0x9e3779b97f4a7c15ULL) >> 56 & (PY_CODE_NOTES - 1)];
		if (note->code == code && note->tgid == tgid && note->identity == identity)
			return note->generation;
	}
	seen = bpf_map_lookup_elem(&python_codes, &key);
	if (!seen) {
		bpf_map_update_elem(&python_codes, &key, &fresh, BPF_NOEXIST);
		*code_new = 1;
		generation = 0;
	} else {
		if (seen->identity != identity) {
			seen->identity = identity;	/* racing CPUs may count one change twice: still another generation */
			seen->generation++;
			*code_new = 1;
		}
		generation = seen->generation;
	}
	if (note) {
		note->code = 0;
		barrier();	/* empty while written */
		note->identity = identity;
		note->tgid = tgid;
		note->generation = generation;
		barrier();
		note->code = code;
	}
	return generation;
}

/*
 * The stack slot of the Python frame whose first bytes are in @b->frame: its
 * code object read into @b->code, then (code, instruction, generation)
 * encoded; 0 when the code object cannot be read.  A global function, so
 * that the verifier checks its branches (the layouts, the generation's map
 * update) once, not inside every path of the bpf_loop callback below, which
 * it walks until the loop's states converge: 1680 instructions for that
 * callback before, against 555 now (and 170 for this function).
 */
APERTURE_SUBPROG __u64 python_frame_ip(const struct python_proc *py, struct python_buf *b, __u32 tgid)
{
	__u64 code, name;

	if (!py || !b)
		return 0;
	code = py_u64(b->frame, py->frame_code);
	if (!code || !py_read_span(b->code, py->code_len, code + py->code_lo))
		return 0;
	name = py_u64(b->code, (__u32)py->code_name - py->code_lo);
	return py_frame_encode(code, python_instr(py, b, code),
			       python_generation(tgid, code, py_code_identity(name,
				py_u32(b->code, (__u32)py->code_firstlineno - py->code_lo)), &b->code_new));
}

/* bpf_loop callback: shows one Python frame of this evaluator's run; 1 stops. */
static long python_frame_step(__u64 index, void *arg)
{
	struct python_emit *e = arg;
	struct python_cursor *cur = e->cur;
	const struct python_proc *py = e->py;
	struct aperture_stack *st = e->st;
	__u64 frame = cur->frame, back, ip;
	__u64 depth = st->depth;	/* 64 bits: a __u32's compare ran on a zero-extended copy */
	__u32 zero = 0;
	struct python_buf *b = bpf_map_lookup_elem(&python_scratch, &zero);
	__u8 entry = 0;

	if (!frame || !py || !b)
		return 1;
	if (!py_read_span(b->frame, py->frame_len, frame))
		goto cut;
	back = py_u64(b->frame, py->frame_back);
	if (py->layout >= PY_LAYOUT_CFRAME_OWNER) {
		if (py_u8(b->frame, py->frame_entry) == PY_FRAME_OWNED_BY_CSTACK) {
			cur->frame = back;	/* the shim below this run's frames */
			return 1;
		}
	} else if (py->layout == PY_LAYOUT_CFRAME_ENTRY) {
		entry = py_u8(b->frame, py->frame_entry);
	}
	b->code_new = 0;
	ip = python_frame_ip(py, b, cur->tgid);
	if (!ip)
		goto cut;
	/*
	 * Checked after the map calls, where it indexes: 6.1 lost the bound of
	 * a depth checked before them ("R3 unbounded memory access").
	 */
	barrier_var(depth);
	if (depth >= APERTURE_MAX_DEPTH) {
		e->full = true;
		return 1;
	}
	st->ips[depth] = ip;
	st->depth = depth + 1;
	if (b->code_new)
		st->py_new = 1;	/* stack_save tells the loader when the stack is new */
	e->emitted++;
	cur->frame = back;
	/* One frame object per evaluator call before 3.11; 3.11 marks the first of a run. */
	return py->layout == PY_LAYOUT_FRAME_OBJECT || (py->layout == PY_LAYOUT_CFRAME_ENTRY && entry);
cut:
	e->cut = true;
	return 1;
}

/*
 * The evaluator's native frame at st->ips[st->depth - 1]: puts its run's
 * Python frames in its place.  0, or -1 when the stack is full (the caller
 * ends it truncated).  A global function, verified once on its own: inlined
 * in the DWARF walk's loop body, its paths multiplied with the walk's and
 * took syscall_exit past the verifier's 1M instructions.  So it takes only
 * scalars and memory (@cur, @st) and looks the process up again itself.
 */
APERTURE_SUBPROG int python_run_put(struct python_cursor *cur, struct aperture_stack *st)
{
	struct python_emit e = { .cur = cur, .st = st };
	__u32 depth, tgid;

	if (!cur || !st)
		return 0;
	tgid = cur->tgid;
	e.py = bpf_map_lookup_elem(&python_procs, &tgid);
	depth = st->depth;
	if (!e.py || !depth || depth > APERTURE_MAX_DEPTH) {
		cur->state = -1;
		return 0;
	}
	if (!cur->state) {
		cur->state = python_thread_frame(e.py, cur) ? 1 : -1;
		if (cur->state < 0)
			return 0;
	}
	if (!cur->frame) {
		cur->state = -1;
		return 0;
	}
	st->depth = depth - 1;		/* the evaluator's frame: replaced */
	bpf_loop(APERTURE_MAX_DEPTH, python_frame_step, &e, 0);
	if (e.cut) {
		stat_inc(STAT_PY_CUT);
		cur->state = -1;
	}
	if (e.emitted) {
		stat_add(STAT_PY_FRAMES, e.emitted);
	} else if (st->depth == depth - 1) {
		st->depth = depth;	/* nothing shown: the native frame stays */
	}
	if (e.full) {
		stat_inc(STAT_PY_CUT);
		return -1;
	}
	return 0;
}

/*
 * Called with the native frame at st->ips[st->depth - 1] at @pc (as looked
 * up): when it is the evaluator's, puts its Python frames in its place.
 * Returns false when the stack is full (the caller ends it truncated).
 */
static __always_inline bool python_frame(struct python_walk *pw, struct aperture_stack *st, __u64 pc)
{
	if (!pw->proc || pw->cur.state < 0 || !st->depth || !python_in_eval(pw->proc, pc))
		return true;
	return python_run_put(&pw->cur, st) == 0;
}

#endif /* UNWIND_PYTHON_BPF_H */
