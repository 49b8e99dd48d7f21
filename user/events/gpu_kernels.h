/* SPDX-License-Identifier: GPL-2.0 */
/* What the GPU profiler (gpu.c) tells other parts: the name of what a sample or event counted. */
#ifndef GPU_KERNELS_H
#define GPU_KERNELS_H

#include <stdint.h>

struct profiler;
struct symbolizer;

/*
 * The name of a GPU key's object (bpf/include/gpu.h) in process @tgid: the
 * kernel's name, demangled ("matmul(float*, float*, float*, int)"; a runtime
 * launch's host stub is looked up in @sym, which may be NULL), else
 * "kernel@0xHANDLE"; "graph@0xHANDLE"; "cuCtxSynchronize" and the other
 * synchronize calls.  Malloc'ed; NULL only when out of memory.
 */
char *gpu_object_label(const struct profiler *p, struct symbolizer *sym, uint32_t tgid, uint64_t object);

#endif /* GPU_KERNELS_H */
