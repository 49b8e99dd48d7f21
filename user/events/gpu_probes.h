/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where and when the GPU profiler's uprobes go (gpu_probes.c): the CUDA
 * driver (libcuda.so*) and the CUDA runtime (libcudart.so*) each target maps.
 */
#ifndef GPU_PROBES_H
#define GPU_PROBES_H

struct profiler;
struct gpu_probes;

struct gpu_probes *gpu_probes_new(void);
void gpu_probes_free(struct gpu_probes *g);

/* At the start: the libraries the targets (or every process) map now, and the host's driver. */
void gpu_probes_start(struct profiler *p, struct gpu_probes *g);

/*
 * The caller's tick (~100 ms: record's loop, the daemon's): the libraries
 * that targets or new processes loaded since.  The links it adds go to
 * p->links, after those there before.
 */
void gpu_probes_tick(struct profiler *p, struct gpu_probes *g);

#endif /* GPU_PROBES_H */
