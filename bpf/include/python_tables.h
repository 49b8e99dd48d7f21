/* SPDX-License-Identifier: GPL-2.0 */
/*
 * CPython frames in user stacks, shared between the loader (user/unwind/
 * python.c finds the numbers, user/symbolize/pyframes.c names the frames)
 * and the BPF walk (bpf/unwind/python.bpf.h).
 *
 * python_procs: per tgid of a CPython process, where its evaluator is, where
 * its thread states are found and the offsets of the fields the walk reads.
 */
#ifndef PYTHON_TABLES_H
#define PYTHON_TABLES_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* How a minor version chains its frames. */
enum python_layout {
	PY_LAYOUT_FRAME_OBJECT = 1,	/* 3.8-3.10: tstate->frame, PyFrameObject.f_back, one per evaluator call */
	PY_LAYOUT_CFRAME_ENTRY = 2,	/* 3.11: tstate->cframe->current_frame; is_entry ends an evaluator's run */
	PY_LAYOUT_CFRAME_OWNER = 3,	/* 3.12: tstate->cframe->current_frame; an owner CSTACK frame ends it */
	PY_LAYOUT_CURRENT_OWNER = 4,	/* 3.13: tstate->current_frame; an owner CSTACK frame ends it */
};

/* _PyInterpreterFrame.owner of the shim frame an evaluator call pushes (3.12, 3.13). */
#define PY_FRAME_OWNED_BY_CSTACK 3

struct python_proc {
	__u64 eval_start;	/* _PyEval_EvalFrameDefault, as mapped */
	__u64 eval_end;
	__u64 cold_start;	/* its .cold part (0, 0: none) */
	__u64 cold_end;
	__u64 tss_addr;		/* _PyRuntime's autoTSSkey (Py_tss_t: int initialized, pthread key), as mapped */
	__u32 tsd_offset;	/* glibc: struct pthread's specific_1stblock, from the thread pointer */
	__u16 layout;		/* enum python_layout */
	__u16 minor;		/* 3.minor */
	/* Offsets of the fields read. */
	__u16 ts_thread_id;	/* PyThreadState.thread_id (pthread_self()) */
	__u16 ts_frame;		/* .frame (3.8-3.10), .cframe (3.11, 3.12), .current_frame (3.13) */
	__u16 cframe_current;	/* _PyCFrame.current_frame (3.11, 3.12) */
	__u16 frame_back;	/* f_back / previous */
	__u16 frame_code;	/* f_code / f_executable */
	__u16 frame_instr;	/* f_lasti (int) / prev_instr / instr_ptr (pointer) */
	__u16 frame_entry;	/* is_entry (3.11) / owner (3.12+): one byte */
	__u16 code_adaptive;	/* co_code_adaptive (3.11+): the bytecode the instruction pointer points in */
	__u16 code_name;	/* co_name: with co_firstlineno, the identity of a code object */
	__u16 code_firstlineno;
	/*
	 * Each frame and each code object is read in one piece: the frame's
	 * first frame_len bytes, the code object's [code_lo, code_lo + code_len)
	 * (co_firstlineno to co_name), at most PY_READ_MAX bytes each.
	 */
	__u16 frame_len;
	__u16 code_lo;
	__u16 code_len;
	__u16 pad[3];
};

#define PY_READ_MAX 128

/*
 * A Python frame in a stack's ips[]: bit 63 set, bit 0 set (a caller frame
 * is looked up at ip - 1: that clears bit 0 and nothing else, and decoding
 * puts it back), the code object's address / 16 (pymalloc and glibc malloc
 * align objects to 16), the instruction index (code units) and the code
 * object's generation at its address (5 bits): python_codes keeps, per
 * (process, code address), the identity of the code object last seen there
 * (co_name's address and co_firstlineno, read at the sample) and counts how
 * many different ones were, so that a code object freed and another
 * allocated at its address gets other frames (another stack), and the loader
 * names a frame only while the map says its generation still lives there.
 * The markers (0xff..fe, 0xff..fc and those - 1) are told apart first.
 */
#define PY_FRAME_TAG (1ULL << 63)
#define PY_CODE_SHIFT 1			/* bits 1..43: code address >> 4 */
#define PY_CODE_BITS 43
#define PY_INSTR_SHIFT 44		/* bits 44..57: instruction index */
#define PY_INSTR_BITS 14
#define PY_CHECK_SHIFT 58		/* bits 58..62: the generation at the address */
#define PY_CHECK_BITS 5

static inline __u64 py_frame_encode(__u64 code, __u64 instr, __u64 check)
{
	if (instr >= (1ULL << PY_INSTR_BITS))
		instr = (1ULL << PY_INSTR_BITS) - 1;	/* past 32 KiB of bytecode: the last line we can say */
	return PY_FRAME_TAG | 1 | ((code >> 4) & ((1ULL << PY_CODE_BITS) - 1)) << PY_CODE_SHIFT |
	       instr << PY_INSTR_SHIFT | (check & ((1ULL << PY_CHECK_BITS) - 1)) << PY_CHECK_SHIFT;
}

/* A code object's identity: co_name's address (< 2^47) and co_firstlineno above it. */
static inline __u64 py_code_identity(__u64 name_addr, __u32 firstlineno)
{
	return name_addr ^ ((__u64)firstlineno << 47);
}

struct python_code_key {
	__u32 tgid;
	__u32 pad;
	__u64 code;
};

struct python_code_seen {
	__u64 identity;		/* py_code_identity() of the code object last seen at the address */
	__u32 generation;	/* how many different ones were seen there before it */
	__u32 pad;
};

#endif /* PYTHON_TABLES_H */
