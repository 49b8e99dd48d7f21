/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Names of CPython frames (bpf/include/python_tables.h says how a frame is
 * put in a stack): the code object's qualified name, file and the line of
 * the instruction, read from the process through process_vm_readv and kept
 * per (process, code object), so that a frame is named even after its
 * process exited when it was read before (the loader reads the frames of
 * each new stack as the BPF side reports it).
 */
#ifndef PYFRAMES_H
#define PYFRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pyframes;

struct pyframe_name {
	const char *qualname;		/* owned by the cache: valid until pyframes_forget/free */
	const char *filename;
	uint32_t line;			/* 0 when the line table says none */
};

struct pyframes *pyframes_new(void);
void pyframes_free(struct pyframes *pf);

/*
 * What the BPF side last saw at a code address of a process (python_codes):
 * the identity of the code object there and its generation.  False when it
 * has no entry.
 */
typedef bool (*pyframes_seen_fn)(void *ctx, uint32_t tgid, uint64_t code, uint64_t *identity,
				 uint32_t *generation);
/* With it, a frame is named only while its generation still lives at its address; without, always. */
void pyframes_set_seen(struct pyframes *pf, pyframes_seen_fn fn, void *ctx);

/* True for an ips[] entry that is a Python frame (a caller's, at ip - 1, too). */
bool pyframes_is_frame(uint64_t ip);

/* True when @tgid is a CPython process this reader can name (looked at once, then remembered). */
bool pyframes_is_python(struct pyframes *pf, uint32_t tgid);

/* Reads and keeps the code object of @ip in @tgid now (the stack is new, the process alive). */
void pyframes_prefetch(struct pyframes *pf, uint32_t tgid, uint64_t ip);

/* @ip's names: false when its code object could not be read or was not the one sampled (counted). */
bool pyframes_name(struct pyframes *pf, uint32_t tgid, uint64_t ip, struct pyframe_name *out);

/* @tgid exited: what was kept for it goes. */
void pyframes_forget(struct pyframes *pf, uint32_t tgid);

struct pyframes_usage {
	uint64_t named;		/* code objects read */
	uint64_t unnamed;	/* frames whose code object could not be read, or had changed */
	size_t bytes;
};
void pyframes_usage(const struct pyframes *pf, struct pyframes_usage *out);

#endif /* PYFRAMES_H */
