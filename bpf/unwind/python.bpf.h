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

#include "unwind/python_tables.h"
#include "lib/stats.bpf.h"

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

/* Where a stack's walk of Python frames is. */
struct python_walk {
	struct python_proc *proc;	/* NULL: not a CPython process (the common case: one test per frame) */
	__u64 frame;			/* the next Python frame to show; 0 when none is left */
	__s32 state;			/* 0: thread state not read yet; 1: walking; -1: done */
};

/* The state of one evaluator's run of frames, for the bpf_loop callback. */
struct python_emit {
	struct python_walk *pw;
	struct aperture_stack *st;
	__u32 emitted;
	bool full;			/* the stack is full */
	bool cut;			/* a read failed: the walk stops */
};

static __always_inline bool py_read(void *out, __u32 size, __u64 addr)
{
	return bpf_probe_read_user(out, size, (const void *)addr) == 0;
}

static __always_inline bool python_in_eval(const struct python_proc *py, __u64 pc)
{
	return (pc >= py->eval_start && pc < py->eval_end) ||
	       (pc >= py->cold_start && pc < py->cold_end);
}

/* The current thread's newest Python frame into pw->frame: false when it has none. */
static __always_inline bool python_thread_frame(struct python_walk *pw)
{
	struct task_struct *task = bpf_get_current_task_btf();
	const struct python_proc *py = pw->proc;
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
	pw->frame = ptr;
	return ptr != 0;
}

/* The instruction index (code units) of @frame running @code. */
static __always_inline __u64 python_instr(const struct python_proc *py, __u64 frame, __u64 code)
{
	__u64 ptr = 0, base;
	__s32 lasti = 0;

	if (py->layout == PY_LAYOUT_FRAME_OBJECT) {
		if (!py_read(&lasti, sizeof(lasti), frame + py->frame_instr) || lasti < 0)
			return 0;
		return py->minor <= 9 ? (__u64)lasti / 2 : (__u64)lasti;	/* bytes before 3.10 */
	}
	base = code + py->code_adaptive;
	if (!py_read(&ptr, sizeof(ptr), frame + py->frame_instr) || ptr < base)
		return 0;
	return (ptr - base) / 2;
}

/* bpf_loop callback: shows one Python frame of this evaluator's run; 1 stops. */
static long python_frame_step(__u64 index, void *arg)
{
	struct python_emit *e = arg;
	struct python_walk *pw = e->pw;
	const struct python_proc *py = pw->proc;
	struct aperture_stack *st = e->st;
	__u64 frame = pw->frame, code = 0, name = 0, back = 0;
	__u32 depth = st->depth;
	__s32 firstlineno = 0;
	__u8 entry = 0;

	if (!frame || !py)
		return 1;
	if (py->layout >= PY_LAYOUT_CFRAME_OWNER) {
		if (!py_read(&entry, 1, frame + py->frame_entry))
			goto cut;
		if (entry == PY_FRAME_OWNED_BY_CSTACK) {	/* the shim below this run's frames */
			if (!py_read(&back, sizeof(back), frame + py->frame_back))
				goto cut;
			pw->frame = back;
			return 1;
		}
	}
	if (!py_read(&code, sizeof(code), frame + py->frame_code) || !code ||
	    !py_read(&back, sizeof(back), frame + py->frame_back) ||
	    !py_read(&name, sizeof(name), code + py->code_name) ||
	    !py_read(&firstlineno, sizeof(firstlineno), code + py->code_firstlineno))
		goto cut;
	if (py->layout == PY_LAYOUT_CFRAME_ENTRY && !py_read(&entry, 1, frame + py->frame_entry))
		goto cut;
	if (depth >= APERTURE_MAX_DEPTH) {
		e->full = true;
		return 1;
	}
	st->ips[depth] = py_frame_encode(code, python_instr(py, frame, code),
					 py_frame_check(name, (__u32)firstlineno));
	st->depth = depth + 1;
	e->emitted++;
	pw->frame = back;
	/* One frame object per evaluator call before 3.11; 3.11 marks the first of a run. */
	return py->layout == PY_LAYOUT_FRAME_OBJECT || (py->layout == PY_LAYOUT_CFRAME_ENTRY && entry);
cut:
	e->cut = true;
	return 1;
}

/*
 * Called with the native frame at st->ips[st->depth - 1] at @pc (as looked
 * up): when it is the evaluator's, puts its Python frames in its place.
 * Returns false when the stack is full (the caller ends it truncated).
 */
static __always_inline bool python_frame(struct python_walk *pw, struct aperture_stack *st, __u64 pc)
{
	struct python_emit e = { .pw = pw, .st = st };
	__u32 depth = st->depth;

	if (!pw->proc || pw->state < 0 || !python_in_eval(pw->proc, pc) || !depth)
		return true;
	if (!pw->state) {
		pw->state = python_thread_frame(pw) ? 1 : -1;
		if (pw->state < 0)
			return true;
	}
	if (!pw->frame) {
		pw->state = -1;
		return true;
	}
	st->depth = depth - 1;		/* the evaluator's frame: replaced */
	bpf_loop(APERTURE_MAX_DEPTH, python_frame_step, &e, 0);
	if (e.cut) {
		stat_inc(STAT_PY_CUT);
		pw->state = -1;
	}
	if (e.emitted) {
		stat_add(STAT_PY_FRAMES, e.emitted);
		st->pad = 1;	/* has Python frames: stack_store tells the loader when it is new */
	} else if (st->depth == depth - 1) {
		st->depth = depth;	/* nothing shown: the native frame stays */
	}
	if (e.full) {
		stat_inc(STAT_PY_CUT);
		return false;
	}
	return true;
}

#endif /* UNWIND_PYTHON_BPF_H */
