// SPDX-License-Identifier: GPL-2.0
/*
 * GPU kernel launches seen from the CPU: uprobes on the CUDA driver library
 * (libcuda.so.1) and, where a target maps it as a shared library, the CUDA
 * runtime (libcudart.so*), attached by the loader.
 *
 * A launch call (cuLaunchKernel, cuLaunchKernelEx, their _ptsz forms,
 * cuGraphLaunch; cudaLaunchKernel & co) or a synchronize call
 * (cuCtxSynchronize, cuStreamSynchronize, cuEventSynchronize,
 * cudaDeviceSynchronize & co) is timed from its uprobe to its uretprobe and
 * counted per (thread, CUfunction handle or sync kind, user stack) into
 * { calls, call ns, last grid, last block | flags }.  The stack is taken at
 * the return, where the caller's frame pointer is back in place (at the entry
 * a frame-pointer walk skips the caller itself).  The time is the call on the
 * CPU, not the kernel's execution on the GPU, which only the GPU's own timing
 * (CUPTI, events) can tell.
 *
 * A runtime call makes the driver call (cudaLaunchKernel -> cuLaunchKernel):
 * it is counted once, as the runtime call (the program's own stack, the
 * runtime's time, which holds the driver's), under the CUfunction of the
 * driver launch seen inside it (named by the driver's lookups) or, when none
 * was seen, the runtime's own handle (GPU_OBJ_RUNTIME).  The driver call
 * inside is not counted.
 *
 * Names: cuModuleGetFunction and cuLibraryGetKernel hand the program a handle
 * for a name; on their return the handle is read from the out-parameter and
 * the name kept in gpu_names, keyed by (tgid, handle); cuKernelGetFunction
 * gives the CUfunction of a CUkernel the CUkernel's name.
 */
#include "vmlinux.h"
#include "gpu.h"
#define PROFILER_ID PROFILER_GPU
#define PROFILER_CONFIG struct gpu_config
#define COUNTS_VALUE struct gpu_value
#define COUNTS_VALUE_ADD(slot, delta) gpu_value_add(slot, delta)
static inline __attribute__((always_inline)) void gpu_value_add(struct gpu_value *slot,
								const struct gpu_value *delta);
#include "events/profiler.bpf.h"

#define CUDA_SUCCESS 0

/*
 * The 6th and 7th integer arguments: libbpf 1.1's PT_REGS_PARM stops at 5.
 * On x86_64 the 7th is on the stack, above the return address, at the entry.
 */
#if defined(__TARGET_ARCH_x86)
#define ARG6(ctx) ((ctx)->r9)
static __always_inline __u32 arg7_u32(struct pt_regs *ctx)
{
	__u32 v = 0;

	bpf_probe_read_user(&v, sizeof(v), (void *)(PT_REGS_SP(ctx) + 8));
	return v;
}
#elif defined(__TARGET_ARCH_arm64)
#define ARG6(ctx) ((ctx)->regs[5])
static __always_inline __u32 arg7_u32(struct pt_regs *ctx)
{
	return (__u32)ctx->regs[6];
}
#else
#error "add this architecture's 6th and 7th argument"
#endif

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct gpu_thread);
} gpu_threads SEC(".maps");

/* (tgid, handle) -> name; LRU: a long-lived process's old modules make room. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, struct gpu_name_key);
	__type(value, struct gpu_name);
} gpu_names SEC(".maps");

/* A name is 256 bytes: read into per-CPU scratch, not the 512-byte BPF stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gpu_name);
} gpu_name_scratch SEC(".maps");

static inline __attribute__((always_inline)) void gpu_value_add(struct gpu_value *slot,
								const struct gpu_value *delta)
{
	__u64 flags = delta->block & ~GPU_BLOCK_DIMS_MASK;

	__sync_fetch_and_add(&slot->call_ns, delta->call_ns);
	if (delta->block & GPU_F_SYNC) {
		__sync_fetch_and_add(&slot->syncs, delta->syncs);
		slot->block = GPU_F_SYNC;
		return;
	}
	/* Another dims than the last launch of this key: the varied flag stays. */
	if (slot->launches && (slot->grid != delta->grid ||
			       (slot->block & GPU_BLOCK_DIMS_MASK) != (delta->block & GPU_BLOCK_DIMS_MASK)))
		flags |= GPU_F_VARIED;
	__sync_fetch_and_add(&slot->launches, delta->launches);
	/* The last dims without atomics: two CPUs launching at once keep one of them. */
	slot->grid = delta->grid;
	slot->block = delta->block | flags | (slot->block & GPU_F_VARIED);
}

static __always_inline struct gpu_thread *thread_get(bool create)
{
	return bpf_task_storage_get(&gpu_threads, bpf_get_current_task_btf(), NULL,
				    create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
}

/*
 * A launch or synchronize call of a target begins, in the driver or (@runtime)
 * the CUDA runtime: its start, object and dims until it returns.
 */
static __always_inline struct gpu_call *call_begin(struct pt_regs *ctx, __u64 object, bool runtime)
{
	struct aperture_control *ctl = control_get();
	struct gpu_thread *t;
	struct gpu_call *call;

	if (!ctl || !task_wanted(ctl, bpf_get_current_pid_tgid() >> 32))
		return NULL;
	t = thread_get(true);
	if (!t) {
		stat_inc(STAT_START_FULL);
		return NULL;
	}
	/* A call inside a call of the same library (a wrapper): the inner one is timed, the outer finds none. */
	call = runtime ? &t->runtime : &t->call;
	call->object = object;
	call->entry_sp = PT_REGS_SP(ctx);
	call->inner_object = 0;
	call->begin_ns = bpf_ktime_get_ns();
	return call;
}

static __always_inline void call_dims(struct gpu_call *call, __u32 gx, __u32 gy, __u32 gz,
				      __u32 bx, __u32 by, __u32 bz)
{
	call->grid[0] = gx;
	call->grid[1] = gy;
	call->grid[2] = gz;
	call->block[0] = bx;
	call->block[1] = by;
	call->block[2] = bz;
}

/* cuLaunchKernel(f, gridDimX..Z, blockDimX..Z, sharedMemBytes, hStream, kernelParams, extra) */
SEC("uprobe")
int BPF_KPROBE(launch_enter, void *f, __u32 gx, __u32 gy, __u32 gz, __u32 bx)
{
	struct gpu_call *call = call_begin(ctx, GPU_OBJECT(GPU_OBJ_KERNEL, f), false);

	if (call)
		call_dims(call, gx, gy, gz, bx, (__u32)ARG6(ctx), arg7_u32(ctx));
	return 0;
}

/* The first six fields of CUlaunchConfig (cuda.h): gridDimX..Z, blockDimX..Z. */
struct cu_launch_config_dims {
	__u32 grid[3];
	__u32 block[3];
};

static __always_inline void launch_ex_begin(struct pt_regs *ctx, const void *config, __u64 object, bool runtime)
{
	struct gpu_call *call = call_begin(ctx, object, runtime);
	struct cu_launch_config_dims d = {};

	if (!call)
		return;
	bpf_probe_read_user(&d, sizeof(d), config);
	call_dims(call, d.grid[0], d.grid[1], d.grid[2], d.block[0], d.block[1], d.block[2]);
}

/* cuLaunchKernelEx(const CUlaunchConfig *config, f, kernelParams, extra) */
SEC("uprobe")
int BPF_KPROBE(launch_ex_enter, const void *config, void *f)
{
	launch_ex_begin(ctx, config, GPU_OBJECT(GPU_OBJ_KERNEL, f), false);
	return 0;
}

/* cuGraphLaunch(hGraphExec, hStream): a graph's kernels bypass the launch calls. */
SEC("uprobe")
int BPF_KPROBE(graph_enter, void *exec)
{
	struct gpu_call *call = call_begin(ctx, GPU_OBJECT(GPU_OBJ_GRAPH, exec), false);

	if (call)
		call_dims(call, 0, 0, 0, 0, 0, 0);
	return 0;
}

static __always_inline void sync_begin(struct pt_regs *ctx, __u32 which, bool runtime)
{
	struct gpu_call *call = call_begin(ctx, GPU_OBJECT(GPU_OBJ_SYNC, which), runtime);

	if (call)
		call_dims(call, 0, 0, 0, 0, 0, 0);
}

SEC("uprobe")
int BPF_KPROBE(sync_ctx_enter)
{
	sync_begin(ctx, GPU_SYNC_CTX, false);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(sync_stream_enter)
{
	sync_begin(ctx, GPU_SYNC_STREAM, false);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(sync_event_enter)
{
	sync_begin(ctx, GPU_SYNC_EVENT, false);
	return 0;
}

/*
 * The CUDA runtime's entry points (cuda_runtime_api.h).  A dim3 passed by
 * value is 12 bytes: two integer registers, x | y << 32 and z (x86_64 and
 * arm64 alike).
 *
 * cudaLaunchKernel(func, dim3 gridDim, dim3 blockDim, args, sharedMem, stream),
 * cudaLaunchCooperativeKernel: the same; __cudaLaunchKernel (what nvcc 13's
 * <<<>>> calls): a cudaKernel_t in place of func.
 */
SEC("uprobe")
int BPF_KPROBE(rt_launch_enter, void *func, __u64 grid_xy, __u64 grid_z, __u64 block_xy, __u64 block_z)
{
	struct gpu_call *call = call_begin(ctx, GPU_OBJECT(GPU_OBJ_RUNTIME, func), true);

	if (call)
		call_dims(call, (__u32)grid_xy, grid_xy >> 32, (__u32)grid_z, (__u32)block_xy, block_xy >> 32,
			  (__u32)block_z);
	return 0;
}

/* cudaLaunchKernelExC(const cudaLaunchConfig_t *config, func, args): the config begins with the dims too. */
SEC("uprobe")
int BPF_KPROBE(rt_launch_ex_enter, const void *config, void *func)
{
	launch_ex_begin(ctx, config, GPU_OBJECT(GPU_OBJ_RUNTIME, func), true);
	return 0;
}

/* cudaGraphLaunch(cudaGraphExec_t, stream): the same handle as the driver's CUgraphExec. */
SEC("uprobe")
int BPF_KPROBE(rt_graph_enter, void *exec)
{
	struct gpu_call *call = call_begin(ctx, GPU_OBJECT(GPU_OBJ_GRAPH, exec), true);

	if (call)
		call_dims(call, 0, 0, 0, 0, 0, 0);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(rt_sync_device_enter)
{
	sync_begin(ctx, GPU_SYNC_RT_DEVICE, true);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(rt_sync_stream_enter)
{
	sync_begin(ctx, GPU_SYNC_RT_STREAM, true);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(rt_sync_event_enter)
{
	sync_begin(ctx, GPU_SYNC_RT_EVENT, true);
	return 0;
}

/* One GpuKernel raw event per launch (--gpu-events with --events). */
static __always_inline void launch_raw_event(const struct aperture_control *ctl, const struct sample_key *key,
					     const struct gpu_call *call, __u64 begin_ns, __u64 ns)
{
	struct gpu_raw_event *ev = raw_event_reserve(ctl, sizeof(*ev));

	if (!ev)
		return;
	raw_event_fill(&ev->raw, EVENT_GPU_KERNEL, key, begin_ns, ns, 0);
	__builtin_memcpy(ev->grid, call->grid, sizeof(ev->grid));
	__builtin_memcpy(ev->block, call->block, sizeof(ev->block));
	raw_event_submit(ev);
}

static __always_inline bool is_launch(__u32 kind)
{
	return kind == GPU_OBJ_KERNEL || kind == GPU_OBJ_RUNTIME;
}

/* @call returned (its begin taken and cleared by the caller): counted under the caller's user stack. */
static __always_inline void call_count(struct pt_regs *ctx, const struct gpu_call *call, __u64 object,
				       __u64 begin_ns)
{
	struct aperture_control *ctl = control_get();
	struct gpu_config *cfg = config_get();
	struct sample_key key = {};
	struct gpu_value delta = {};
	__u32 kind = GPU_OBJECT_KIND(object);

	if (!ctl || !cfg)
		return;
	delta.call_ns = bpf_ktime_get_ns() - begin_ns;
	if (kind == GPU_OBJ_SYNC) {
		delta.syncs = 1;
		delta.block = GPU_F_SYNC;
	} else {
		delta.launches = 1;
		delta.grid = GPU_GRID_PACK(call->grid[0], call->grid[1], call->grid[2]);
		delta.block = GPU_BLOCK_PACK(call->block[0], call->block[1], call->block[2]) |
			      (kind == GPU_OBJ_GRAPH ? GPU_F_GRAPH : 0);
	}
	key_fill_who(&key, object);
	process_seen(ctl, key.tgid);
	/* The kernel stack of a uprobe is the trap path: it says nothing about the program. */
	if (ctl->stack_mode != STACK_MODE_KERNEL)
		key.user_stack_id = stack_store(ctx, true);
	record_event(ctl, &key, &delta);
	if (is_launch(kind) && cfg->raw_launches)
		launch_raw_event(ctl, &key, call, begin_ns, delta.call_ns);
}

/*
 * The return of a driver call.  Inside a runtime call of the same thread
 * (below its entry on the stack) it is the runtime's work: not counted, its
 * launch handle handed to the runtime call, which the driver named.
 */
SEC("uretprobe")
int BPF_KRETPROBE(call_exit, long ret)
{
	struct gpu_thread *t = thread_get(false);
	__u64 begin_ns;

	if (!t || !t->call.begin_ns)
		return 0;
	begin_ns = t->call.begin_ns;
	t->call.begin_ns = 0;
	if (t->runtime.begin_ns && PT_REGS_SP(ctx) < t->runtime.entry_sp) {
		if (GPU_OBJECT_KIND(t->call.object) != GPU_OBJ_SYNC)
			t->runtime.inner_object = t->call.object;
		return 0;
	}
	call_count(ctx, &t->call, t->call.object, begin_ns);
	return 0;
}

/* The return of a runtime call: counted as the driver's launch inside it, when one was seen. */
SEC("uretprobe")
int BPF_KRETPROBE(rt_call_exit, long ret)
{
	struct gpu_thread *t = thread_get(false);
	__u64 begin_ns, object;

	if (!t || !t->runtime.begin_ns)
		return 0;
	begin_ns = t->runtime.begin_ns;
	t->runtime.begin_ns = 0;
	object = t->runtime.object;
	if (t->runtime.inner_object && GPU_OBJECT_KIND(object) != GPU_OBJ_SYNC)
		object = t->runtime.inner_object;
	call_count(ctx, &t->runtime, object, begin_ns);
	return 0;
}

/* cuModuleGetFunction(CUfunction *hfunc, CUmodule, name), cuLibraryGetKernel(CUkernel *, CUlibrary, name) */
SEC("uprobe")
int BPF_KPROBE(lookup_name_enter, void *out, void *owner, const char *name)
{
	struct gpu_thread *t = thread_get(true);

	if (!t) {
		stat_inc(STAT_NAMES_LOST);	/* no thread storage: the handle goes unnamed */
		return 0;
	}
	t->lookup.out = (__u64)out;
	t->lookup.name = (__u64)name;
	t->lookup.from_handle = 0;
	return 0;
}

/* cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel): the function takes the kernel's name. */
SEC("uprobe")
int BPF_KPROBE(lookup_kernel_enter, void *out, void *kernel)
{
	struct gpu_thread *t = thread_get(true);

	if (!t) {
		stat_inc(STAT_NAMES_LOST);	/* no thread storage: the handle goes unnamed */
		return 0;
	}
	t->lookup.out = (__u64)out;
	t->lookup.name = 0;
	t->lookup.from_handle = (__u64)kernel;
	return 0;
}

/*
 * The lookup returned: the new handle's name into gpu_names.  Names are
 * learned for every process the probes are attached to, even while the
 * profiler is paused, so that a launch counted later is named.
 */
SEC("uretprobe")
int BPF_KRETPROBE(lookup_exit, long ret)
{
	struct gpu_thread *t = thread_get(false);
	struct gpu_name_key key = { .tgid = bpf_get_current_pid_tgid() >> 32 };
	struct gpu_name *name, *known;
	__u32 zero = 0;
	__u64 out;

	if (!t || !t->lookup.out)
		return 0;
	out = t->lookup.out;
	t->lookup.out = 0;
	name = bpf_map_lookup_elem(&gpu_name_scratch, &zero);
	if ((int)ret != CUDA_SUCCESS || !name)
		return 0;
	if (t->lookup.name) {
		if (bpf_probe_read_user_str(name->name, sizeof(name->name), (void *)t->lookup.name) <= 0)
			return 0;
	} else {
		key.handle = t->lookup.from_handle;
		known = bpf_map_lookup_elem(&gpu_names, &key);
		if (!known)
			return 0;
		__builtin_memcpy(name->name, known->name, sizeof(name->name));
	}
	if (bpf_probe_read_user(&key.handle, sizeof(key.handle), (void *)out))
		return 0;
	if (bpf_map_update_elem(&gpu_names, &key, name, BPF_ANY))
		stat_inc(STAT_NAMES_LOST);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
