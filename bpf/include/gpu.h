/* SPDX-License-Identifier: GPL-2.0 */
/* GPU (CUDA driver API) profiler structs shared with user space. */
#ifndef GPU_H
#define GPU_H

#include "aperture.h"

/*
 * The key's object: what was called, a kind in the top byte and a handle
 * below it.  User-space pointers fit in 56 bits on x86_64 and arm64 (47-52
 * bits of address), so a CUfunction or CUgraphExec handle is kept whole.
 */
#define GPU_OBJECT_KIND_SHIFT 56
#define GPU_OBJECT_HANDLE_MASK ((1ULL << GPU_OBJECT_KIND_SHIFT) - 1)
enum gpu_object_kind {
	GPU_OBJ_KERNEL = 0,	/* a kernel launch: handle = the CUfunction (or CUkernel) */
	GPU_OBJ_GRAPH = 1,	/* cuGraphLaunch: handle = the CUgraphExec */
	GPU_OBJ_SYNC = 2,	/* the CPU waiting for the GPU: handle = enum gpu_sync */
	/*
	 * A launch through the CUDA runtime (libcudart) whose driver launch was
	 * not seen inside it: handle = cudaLaunchKernel's func (the host stub,
	 * named by its symbol) or __cudaLaunchKernel's cudaKernel_t (a CUkernel).
	 */
	GPU_OBJ_RUNTIME = 3,
};
#define GPU_OBJECT(kind, handle) ((__u64)(kind) << GPU_OBJECT_KIND_SHIFT | ((__u64)(handle) & GPU_OBJECT_HANDLE_MASK))
#define GPU_OBJECT_KIND(object) ((__u32)((object) >> GPU_OBJECT_KIND_SHIFT))
#define GPU_OBJECT_HANDLE(object) ((object) & GPU_OBJECT_HANDLE_MASK)

enum gpu_sync {
	GPU_SYNC_CTX = 1,	/* cuCtxSynchronize(_v2) */
	GPU_SYNC_STREAM = 2,	/* cuStreamSynchronize(_ptsz) */
	GPU_SYNC_EVENT = 3,	/* cuEventSynchronize */
	/* The runtime's (libcudart), counted instead of the driver call they make. */
	GPU_SYNC_RT_DEVICE = 4,	/* cudaDeviceSynchronize */
	GPU_SYNC_RT_STREAM = 5,	/* cudaStreamSynchronize(_ptsz) */
	GPU_SYNC_RT_EVENT = 6,	/* cudaEventSynchronize */
};

/*
 * Dims packed into one u64 each, so that the value stays 4 u64s
 * (APERTURE_MAX_VALUES): grid x | y << 32 | z << 48 (CUDA allows x < 2^31,
 * y and z <= 65535), block x | y << 16 | z << 32 (CUDA: <= 1024, 1024, 64).
 * A dimension beyond those limits (a launch the driver refuses anyway)
 * saturates at 65535.  The block word's top bits carry GPU_F_* flags.
 */
#define GPU_DIM16(v) ((__u64)((v) > 0xffff ? 0xffff : (v)))
#define GPU_GRID_PACK(x, y, z) ((__u64)(__u32)(x) | GPU_DIM16(y) << 32 | GPU_DIM16(z) << 48)
#define GPU_BLOCK_PACK(x, y, z) (GPU_DIM16(x) | GPU_DIM16(y) << 16 | GPU_DIM16(z) << 32)
#define GPU_BLOCK_DIMS_MASK ((1ULL << 48) - 1)
#define GPU_F_VARIED (1ULL << 63)	/* this key's launches did not all have the same dims */
#define GPU_F_SYNC (1ULL << 62)		/* a sync key (GPU_OBJ_SYNC): see gpu_value */
#define GPU_F_GRAPH (1ULL << 61)	/* graph launches (no dims) */

/*
 * Value of the GPU counts maps.  The first word counts launches only, so
 * that the events a run reports are launches; a sync key's calls are in the
 * third word, where a launch key keeps its grid.
 */
struct gpu_value {
	__u64 launches;	/* kernel or graph launches (0 in a sync key) */
	__u64 call_ns;	/* time inside the launch calls, or (sync key) waiting in the synchronize calls */
	union {
		__u64 grid;	/* launch key: the last launch's grid, GPU_GRID_PACK */
		__u64 syncs;	/* sync key: synchronize calls */
	};
	__u64 block;	/* launch key: the last launch's block, GPU_BLOCK_PACK, | GPU_F_*; sync key: GPU_F_SYNC */
};

/* gpu_config: the GPU profiler's own settings (pinned, bpftool-writable). */
struct gpu_config {
	__u32 raw_launches;	/* --gpu-events: every kernel launch is a GpuKernel raw event */
	__u32 pad;
};

/* Per-thread storage: the call in progress, from its uprobe to its uretprobe. */
struct gpu_call {
	__u64 begin_ns;		/* 0: none */
	__u64 object;		/* GPU_OBJECT() */
	__u32 grid[3];
	__u32 block[3];
	__u64 entry_sp;		/* the stack pointer at the entry: what a call inside this one runs below */
	__u64 inner_object;	/* runtime call: the driver launch seen inside it (0: none) */
};

/* Kernel names, learned when the program asks the driver for a function. */
#define GPU_NAME_LEN 256
struct gpu_name_key {
	__u32 tgid;
	__u32 pad;
	__u64 handle;		/* CUfunction or CUkernel */
};

struct gpu_name {
	char name[GPU_NAME_LEN];	/* as the program passed it (mangled), NUL-terminated */
};

/* Per-thread storage: a name lookup in progress (cuModuleGetFunction & co). */
struct gpu_lookup {
	__u64 out;		/* the CUfunction / CUkernel out-parameter */
	__u64 name;		/* the name string, or 0 ... */
	__u64 from_handle;	/* ... the CUkernel whose name the new CUfunction takes */
};

/*
 * A runtime call (cudaLaunchKernel) and the driver call it makes
 * (cuLaunchKernel) are in progress at once: one slot each.
 */
struct gpu_thread {
	struct gpu_call call;		/* the driver's (libcuda) */
	struct gpu_call runtime;	/* the runtime's (libcudart) */
	struct gpu_lookup lookup;
};

/*
 * A kernel launch (EVENT_GPU_KERNEL, --gpu-events): the raw event (object:
 * the CUfunction handle; timestamp and duration_ns: the launch call on the
 * CPU) and the launch's dims as the caller passed them.  The type says the size.
 */
struct gpu_raw_event {
	struct aperture_raw_event raw;
	__u32 grid[3];
	__u32 block[3];
};

_Static_assert(sizeof(struct gpu_value) == 8 * APERTURE_MAX_VALUES, "gpu_value layout");
_Static_assert(sizeof(struct gpu_config) == 8, "gpu_config layout");
_Static_assert(sizeof(struct gpu_raw_event) == 104, "gpu_raw_event layout");

#endif /* GPU_H */
