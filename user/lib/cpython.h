/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What a CPython process is made of, for the frame walk (user/unwind/
 * python.c) and the naming of its code objects (user/symbolize/pyframes.c):
 * which minor version, where _PyRuntime and the evaluator are, and the
 * offsets of the fields read, from _Py_DebugOffsets (3.13) or a table per
 * minor version (3.8-3.12), each checked against the binary's own
 * PyCode_Type/PyFrame_Type member tables before use.
 */
#ifndef LIB_CPYTHON_H
#define LIB_CPYTHON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct cpython_offsets {
	/* _PyRuntimeState, thread states and frames: the walk in BPF */
	uint16_t runtime_tss;		/* _PyRuntime.(gilstate.)autoTSSkey */
	uint16_t ts_thread_id;
	uint16_t ts_frame;		/* frame (3.8-3.10), cframe (3.11, 3.12), current_frame (3.13) */
	uint16_t cframe_current;	/* _PyCFrame.current_frame (3.11, 3.12) */
	uint16_t frame_back;
	uint16_t frame_code;
	uint16_t frame_instr;
	uint16_t frame_entry;		/* is_entry (3.11), owner (3.12+) */
	/* code objects: the naming */
	uint16_t co_filename;
	uint16_t co_name;
	uint16_t co_qualname;		/* 0 before 3.11 */
	uint16_t co_firstlineno;
	uint16_t co_linetable;		/* co_lnotab (3.8, 3.9), co_linetable (3.10+) */
	uint16_t co_code_adaptive;	/* 3.11+ */
	uint16_t ascii_size;		/* sizeof(PyASCIIObject): a compact ASCII string's bytes follow */
	uint16_t compact_size;		/* sizeof(PyCompactUnicodeObject): a compact non-ASCII string's */
};

struct cpython_proc {
	int minor;			/* 3.minor */
	int layout;			/* enum python_layout (bpf/include/python_tables.h) */
	uint64_t runtime;		/* _PyRuntime, as mapped */
	uint64_t eval_start, eval_end;	/* _PyEval_EvalFrameDefault, as mapped */
	uint64_t cold_start, cold_end;	/* its .cold part, when a symbol says where (0, 0: not known) */
	uint32_t tsd_offset;		/* glibc's struct pthread specific_1stblock, from the thread pointer */
	struct cpython_offsets off;
	char file[256];			/* the file with _PyRuntime, as /proc/PID/maps names it */
};

/*
 * Finds what @tgid's CPython is.  0: found and checked; -ENOENT: not a
 * CPython process; -EAGAIN: CPython, not initialized yet (ask again later);
 * -ENOTSUP: CPython that is refused, @why (@whylen bytes) says why in one
 * line (a free-threaded build, a version without a table, a table the
 * binary contradicts).  Other negative errnos: the process went away.
 */
int cpython_find(uint32_t tgid, struct cpython_proc *out, char *why, size_t whylen);

/* Reads @len bytes at @addr of @tgid (process_vm_readv): true when all were read. */
bool cpython_read(uint32_t tgid, uint64_t addr, void *buf, size_t len);

#endif /* LIB_CPYTHON_H */
