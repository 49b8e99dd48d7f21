/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The loader's half of the CPython frame walk: recognises a CPython process
 * (user/lib/cpython.c) and writes what the BPF walk reads into python_procs
 * (bpf/unwind/python.bpf.h).  Driven by the unwinder's worker thread.
 */
#ifndef UNWIND_PYTHON_H
#define UNWIND_PYTHON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct pywalker;

/* @procs_fd: python_procs (not taken). */
struct pywalker *pywalker_new(int procs_fd);
void pywalker_free(struct pywalker *w);

/*
 * Looks at @tgid (again): true when it is a CPython process whose frames
 * are walked (its entry is written).  A CPython not initialized yet is kept
 * to ask again (pywalker_take_retries); a refused one is said once, in a line.
 */
bool pywalker_track(struct pywalker *w, uint32_t tgid);

/* @tgid is gone: its entry goes. */
void pywalker_forget(struct pywalker *w, uint32_t tgid);

/* Moves up to @max tgids to ask about again into @out (at most every 100 ms each); how many. */
size_t pywalker_take_retries(struct pywalker *w, uint32_t *out, size_t max);
bool pywalker_has_retries(const struct pywalker *w);

/* One line: processes walked, refused, waiting. */
void pywalker_report(const struct pywalker *w, FILE *out);

#endif /* UNWIND_PYTHON_H */
