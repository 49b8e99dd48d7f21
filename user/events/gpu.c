// SPDX-License-Identifier: GPL-2.0
/*
 * GPU kernel launches: owns the gpu skeleton (bpf/events/gpu.bpf.c), whose
 * uprobes gpu_probes.c attaches to the CUDA driver (libcuda) and runtime
 * (libcudart) each target maps, at the start and on the caller's tick.
 *
 * Samples: launches/count and launch_time/nanoseconds for kernel and graph
 * launches, syncs/count and sync_wait/nanoseconds for the synchronize calls;
 * the leaf frame is the kernel's name (demangled), graph@0xHANDLE or the
 * synchronize call.  Times are the calls on the CPU, not GPU execution.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "gpu.h"
#include "gpu.skel.h"
#include "gpu_probes.h"
#include "profile_event.h"
#include "profiler.h"
#include "symbolize.h"
#include "util.h"

_Static_assert(sizeof(struct gpu_config) <= PROFILER_CONFIG_MAX, "gpu_config too big");

/* The last dims of a kernel seen over the whole run, and whether they ever changed. */
struct kernel_dims {
	uint32_t tgid;
	uint64_t object;
	uint64_t grid, block;	/* packed as in gpu_value, flags off */
	bool varied;
};

struct gpu_priv {
	struct gpu_probes *probes;
	struct kernel_dims *dims;
	size_t ndims, dims_cap;
};

static int gpu_open(struct profiler *p, const struct profiler_opts *o)
{
	struct gpu_priv *priv = calloc_logged(1, sizeof(*priv));

	p->priv = priv;
	if (!priv)
		return -ENOMEM;
	priv->probes = gpu_probes_new();
	if (!priv->probes)
		return -ENOMEM;
	return PROFILER_OPEN_SKEL(p, gpu);
}

static void gpu_close(struct profiler *p)
{
	struct gpu_priv *priv = p->priv;

	gpu_bpf__destroy(p->skel);
	if (priv) {
		gpu_probes_free(priv->probes);
		free(priv->dims);
	}
	free(priv);
}

static int gpu_attach(struct profiler *p)
{
	struct gpu_priv *priv = p->priv;
	int err = profiler_attach_tracing(p);

	if (err || !p->skel)
		return err;
	gpu_probes_start(p, priv->probes);
	return 0;
}

/*
 * The caller's tick: the CUDA libraries loaded since (the runtime dlopens the
 * driver after main starts).  A set taken over from pins has no programs in
 * hand to attach: the probes its first daemon made go on counting.
 */
static void gpu_poll(struct profiler *p)
{
	static bool told;
	struct gpu_priv *priv = p->priv;

	if (priv && p->skel) {
		gpu_probes_tick(p, priv->probes);
		return;
	}
	if (p->pinned && !told)
		log_warn("gpu: taken over from pins: CUDA libraries that processes load from now on are not "
			 "probed (the probes already pinned keep counting; `aperture run --unpin` and a new "
			 "start probe them)");
	told = true;
}

/* struct gpu_value -> { launches, launch ns, syncs, sync wait ns } */
static void gpu_to_values(const struct profiler *p, const uint64_t *raw, uint64_t *values)
{
	const struct gpu_value *v = (const void *)raw;

	if (v->block & GPU_F_SYNC) {
		values[2] = v->syncs;
		values[3] = v->call_ns;
	} else {
		values[0] = v->launches;
		values[1] = v->call_ns;
	}
}

static struct kernel_dims *dims_of(struct gpu_priv *priv, uint32_t tgid, uint64_t object)
{
	for (size_t i = 0; i < priv->ndims; i++)
		if (priv->dims[i].tgid == tgid && priv->dims[i].object == object)
			return &priv->dims[i];
	if (array_reserve((void **)&priv->dims, &priv->dims_cap, priv->ndims, sizeof(*priv->dims), 16))
		return NULL;
	priv->dims[priv->ndims] = (struct kernel_dims){ .tgid = tgid, .object = object, .grid = UINT64_MAX };
	return &priv->dims[priv->ndims++];
}

/*
 * Each drained record of a kernel: its dims over the whole run.  A
 * generation's flag says whether they varied within it; a change between
 * records (generations, stacks) is seen here.
 */
static void gpu_on_record(struct profiler *p, const struct raw_record *rec)
{
	const struct gpu_value *v = (const void *)rec->values;
	uint64_t block = v->block & GPU_BLOCK_DIMS_MASK;
	struct kernel_dims *d;

	uint32_t kind = GPU_OBJECT_KIND(rec->key->object);

	if (!p->priv || (kind != GPU_OBJ_KERNEL && kind != GPU_OBJ_RUNTIME) || !v->launches)
		return;
	d = dims_of(p->priv, rec->key->tgid, rec->key->object);
	if (!d)
		return;
	if ((v->block & GPU_F_VARIED) || (d->grid != UINT64_MAX && (d->grid != v->grid || d->block != block)))
		d->varied = true;
	d->grid = v->grid;
	d->block = block;
}

/* The kernel name @handle of @tgid got from the driver, demangled as @sym does; NULL when unknown. */
static char *kernel_name(const struct profiler *p, const struct symbolizer *sym, uint32_t tgid, uint64_t handle)
{
	struct gpu_name_key key = { .tgid = tgid, .handle = handle };
	struct gpu_name name;
	const struct gpu_bpf *skel = p ? p->skel : NULL;
	char *plain;

	if (!skel || bpf_map_lookup_elem(bpf_map__fd(skel->maps.gpu_names), &key, &name))
		return NULL;
	name.name[GPU_NAME_LEN - 1] = 0;	/* a longer name was cut there */
	plain = symbolizer_demangle_name(sym, name.name);
	return plain ?: strdup(name.name);
}

/*
 * A runtime launch's kernel whose driver launch was not seen: the host stub
 * cudaLaunchKernel got is named as the kernel (nvcc gives it the kernel's
 * mangled name); a cudaKernel_t may be a CUkernel the driver named.
 */
static char *runtime_kernel_name(const struct profiler *p, struct symbolizer *sym, uint32_t tgid,
				 uint64_t handle)
{
	struct sym_frame frame;
	char *name = kernel_name(p, sym, tgid, handle);

	if (name || !sym)
		return name;
	symbolizer_user(sym, tgid, handle, &frame);
	if (!frame.function || frame.function_offset)
		return NULL;	/* not a function's start: a handle, not a host stub */
	return strdup(frame.function);
}

static const char *sync_name(uint64_t which)
{
	static const char *const names[] = {
		[GPU_SYNC_CTX] = "cuCtxSynchronize",
		[GPU_SYNC_STREAM] = "cuStreamSynchronize",
		[GPU_SYNC_EVENT] = "cuEventSynchronize",
		[GPU_SYNC_RT_DEVICE] = "cudaDeviceSynchronize",
		[GPU_SYNC_RT_STREAM] = "cudaStreamSynchronize",
		[GPU_SYNC_RT_EVENT] = "cudaEventSynchronize",
	};

	return which < sizeof(names) / sizeof(names[0]) ? names[which] : NULL;
}

/*
 * The name of a GPU key's object (bpf/include/gpu.h) in process @tgid: the
 * kernel's name, demangled ("matmul(float*, float*, float*, int)"; a runtime
 * launch's host stub is looked up in @sym, which may be NULL), else
 * "kernel@0xHANDLE"; "graph@0xHANDLE"; "cuCtxSynchronize" and the other
 * synchronize calls.  Malloc'ed; NULL only when out of memory.
 */
static char *gpu_object_label(const struct profiler *p, struct symbolizer *sym, uint32_t tgid, uint64_t object)
{
	uint64_t handle = GPU_OBJECT_HANDLE(object);
	char *label = NULL;

	switch (GPU_OBJECT_KIND(object)) {
	case GPU_OBJ_KERNEL:
		label = kernel_name(p, sym, tgid, handle);
		break;
	case GPU_OBJ_RUNTIME:
		label = runtime_kernel_name(p, sym, tgid, handle);
		break;
	case GPU_OBJ_GRAPH:
		return asprintf(&label, "graph@0x%" PRIx64, handle) < 0 ? NULL : label;
	case GPU_OBJ_SYNC:
		if (sync_name(handle))
			return strdup(sync_name(handle));
		/* fall through */
	default:
		return asprintf(&label, "gpu@0x%" PRIx64, object) < 0 ? NULL : label;
	}
	if (label || asprintf(&label, "kernel@0x%" PRIx64, handle) >= 0)
		return label;
	return NULL;
}

/* The leaf frame: the kernel's name (the same for every sample of it), a graph, a sync call. */
static char *gpu_object_name(const struct profile *prof, const struct profile_sample *s,
			     const uint64_t *raw, const char *known)
{
	if (known)
		return strdup(known);
	return gpu_object_label(prof->object_ctx, prof->sym, s->tgid, s->object);
}

/* One row of the report: a kernel (or graph, or sync call) of a process, over all its samples. */
struct report_row {
	uint32_t tgid;
	uint64_t object;
	const char *name;
	uint64_t calls, ns;
	const struct profile_sample *top;	/* its sample with the most calls */
	uint64_t top_calls;
};

static int row_by_ns(const void *a, const void *b)
{
	const struct report_row *x = a, *y = b;

	return x->ns < y->ns ? 1 : x->ns > y->ns ? -1 : 0;
}

/* Rows of the samples whose kind is @sync (sync waits) or not (launches), sorted by time. */
static size_t report_rows(const struct profile *prof, bool sync, struct report_row *rows, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < prof->nsamples; i++) {
		const struct profile_sample *s = &prof->samples[i];
		uint64_t calls = s->values[sync ? 2 : 0], ns = s->values[sync ? 3 : 1];
		size_t r;

		if ((GPU_OBJECT_KIND(s->object) == GPU_OBJ_SYNC) != sync || !calls)
			continue;
		for (r = 0; r < n && (rows[r].tgid != s->tgid || rows[r].object != s->object); r++)
			;
		if (r == n && n == max)
			continue;	/* more rows than the report has room for: the rest is in the profile */
		if (r == n)
			rows[n++] = (struct report_row){ s->tgid, s->object, s->object_name ?: "?" };
		rows[r].calls += calls;
		rows[r].ns += ns;
		if (calls > rows[r].top_calls) {
			rows[r].top = s;
			rows[r].top_calls = calls;
		}
	}
	qsort(rows, n, sizeof(*rows), row_by_ns);
	return n;
}

/* "launch_vecadd <- run <- main": the first user frames of @s, callee first. */
static void print_stack(const struct profile_sample *s, FILE *out)
{
	for (uint32_t i = 0; s && i < s->nuser && i < 4; i++) {
		const struct sym_frame *f = &s->frames[s->nkernel + i].sym;

		fprintf(out, "%s%s", i ? " <- " : "", f->function ?: f->name);
	}
	fputc('\n', out);
}

/* "(64,1,1)", or "varied, last (64,1,1)" */
static const char *dims_text(const struct gpu_priv *priv, const struct report_row *row, char *buf, size_t len)
{
	for (size_t i = 0; priv && i < priv->ndims; i++) {
		const struct kernel_dims *d = &priv->dims[i];

		if (d->tgid != row->tgid || d->object != row->object)
			continue;
		snprintf(buf, len, "%s(%u,%u,%u) (%u,%u,%u)", d->varied ? "varied, last " : "",
			 (uint32_t)d->grid, (uint32_t)(d->grid >> 32 & 0xffff), (uint32_t)(d->grid >> 48),
			 (uint32_t)(d->block & 0xffff), (uint32_t)(d->block >> 16 & 0xffff),
			 (uint32_t)(d->block >> 32 & 0xffff));
		return buf;
	}
	return "-";
}

static void report_launches(const struct profiler *p, const struct report_row *rows, size_t n,
			    unsigned int top, FILE *out)
{
	uint64_t total_ns = 0;
	char dims[96];

	for (size_t i = 0; i < n; i++)
		total_ns += rows[i].ns;
	fprintf(out, "GPU launches: top %u by launch time (the launch call on the CPU, not the kernel on the GPU)\n"
		"  %-36s %8s %10s %7s %9s  %-30s %s\n", top, "kernel", "pid", "launches", "share", "avg us",
		"grid block", "top launching stack");
	for (size_t i = 0; i < n && i < top; i++) {
		const struct report_row *r = &rows[i];

		fprintf(out, "  %-36s %8u %10" PRIu64 " %6.1f%% %9.2f  %-30s ", r->name, r->tgid, r->calls,
			total_ns ? 100.0 * r->ns / total_ns : 0.0, r->ns / 1e3 / r->calls,
			dims_text(p->priv, r, dims, sizeof(dims)));
		print_stack(r->top, out);
	}
}

static void report_syncs(const struct report_row *rows, size_t n, unsigned int top, FILE *out)
{
	fprintf(out, "GPU synchronize waits (the CPU waiting for the GPU)\n  %-36s %8s %10s %12s %10s  %s\n",
		"call", "pid", "calls", "total ms", "avg ms", "top waiting stack");
	for (size_t i = 0; i < n && i < top; i++) {
		fprintf(out, "  %-36s %8u %10" PRIu64 " %12.3f %10.3f  ", rows[i].name, rows[i].tgid,
			rows[i].calls, rows[i].ns / 1e6, rows[i].ns / 1e6 / rows[i].calls);
		print_stack(rows[i].top, out);
	}
}

/* The top @top kernels by launch time, then the synchronize waits. */
static void gpu_report(struct profiler *p, const struct profile *prof, unsigned int top, FILE *out)
{
	size_t max = 1024, n;
	struct report_row *rows = top ? calloc_logged(max, sizeof(*rows)) : NULL;

	if (!rows)
		return;
	n = report_rows(prof, false, rows, max);
	if (n)
		report_launches(p, rows, n, top, out);
	else
		fprintf(out, "GPU launches: none seen (is libcuda loaded by the targets?)\n");
	memset(rows, 0, max * sizeof(*rows));
	n = report_rows(prof, true, rows, max);
	if (n)
		report_syncs(rows, n, top, out);
	free(rows);
}

static bool parse_events(const char *arg, void *config)
{
	((struct gpu_config *)config)->raw_launches = 1;
	return true;
}

static const struct profiler_option gpu_options[] = {
	{ "gpu-events", 0, NULL, "gpu: every kernel launch as a GpuKernel record (--events FILE)", parse_events },
	{ NULL },
};

/*
 * --gpu-events: one launch (its own longer struct, bpf/include/gpu.h): the
 * kernel's name (owned by @f until written), the launch call's time, the dims.
 */
static bool gpu_raw_event(struct profiler *p, const struct aperture_raw_event *ev, size_t size,
			  struct raw_frames *f, struct profile_event *e)
{
	const struct gpu_raw_event *launch = (const struct gpu_raw_event *)ev;

	if (size < sizeof(*launch))
		return false;
	e->kind = PE_GPU_KERNEL;
	e->gpu.kernel_name = f->owned = gpu_object_label(p, f->sym, ev->hdr.tgid, ev->object);
	e->gpu.duration_ns = ev->duration_ns;	/* the launch call on the CPU, not GPU execution */
	memcpy(e->gpu.grid_size, launch->grid, sizeof(e->gpu.grid_size));
	memcpy(e->gpu.block_size, launch->block, sizeof(e->gpu.block_size));
	return true;
}

const struct profiler_ops profiler_gpu = {
	.name = "gpu",
	.id = PROFILER_GPU,
	.cli.title = "GPU launches",
	.cli.help = "GPU kernel launches and synchronize waits (uprobes on the CUDA driver, libcuda)",
	.cli.opt_in = true,		/* a uprobe traps on every launch of the targets */
	.cli.options = gpu_options,
	.config.size = sizeof(struct gpu_config),
	.schema.nraw = sizeof(struct gpu_value) / sizeof(uint64_t),
	.schema.folded_raw = 0,
	.needs = FEAT_BIT(FEAT_BTF) | FEAT_BIT(FEAT_TASK_STORAGE) | FEAT_BIT(FEAT_TP_SCHED_EXEC) |
		 FEAT_BIT(FEAT_RINGBUF) | FEAT_BIT(FEAT_UPROBE),
	.schema.nvalues = 4,
	.schema.value_types = { { "launches", "count" }, { "launch_time", "nanoseconds" },
			 { "syncs", "count" }, { "sync_wait", "nanoseconds" } },
	.schema.default_value = 0,
	.schema.period_type = { "launches", "count" },
	.schema.to_values = gpu_to_values,
	.schema.object_name = gpu_object_name,
	.raw_type = EVENT_GPU_KERNEL,
	.raw_event = gpu_raw_event,
	.on_record = gpu_on_record,
	.report = gpu_report,
	.poll = gpu_poll,
	.open = gpu_open,
	.attach = gpu_attach,
	.close = gpu_close,
};
