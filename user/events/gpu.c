// SPDX-License-Identifier: GPL-2.0
/*
 * GPU kernel launches: owns the gpu skeleton (bpf/events/gpu.bpf.c).  Finds
 * the CUDA driver library (libcuda.so*) each target maps, through its
 * /proc/PID/maps and /proc/PID/root (a container's own driver), and attaches
 * the uprobes there, for that pid only; the whole machine gets every libcuda
 * some process maps (and the host's), for every process.  A target that
 * loads the library later (a COMMAND that dlopens it, as the CUDA runtime
 * does) is attached on the record loop's tick (poll, ~100 ms): launches
 * before that are not seen.
 *
 * Samples: launches/count and launch_time/nanoseconds for kernel and graph
 * launches, syncs/count and sync_wait/nanoseconds for the synchronize calls;
 * the leaf frame is the kernel's name (demangled), graph@0xHANDLE or the
 * synchronize call.  Times are the calls on the CPU, not GPU execution.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "gpu.h"
#include "gpu.skel.h"
#include "gpu_kernels.h"
#include "procmaps.h"
#include "profiler.h"
#include "symbolize.h"
#include "util.h"

_Static_assert(sizeof(struct gpu_config) <= PROFILER_CONFIG_MAX, "gpu_config too big");

/* How often the whole machine's processes are searched again for a libcuda file not probed yet. */
#define MACHINE_RESCAN_NS (5 * 1000000000ull)

/* The entry programs; every one but the lookups returns through call_exit. */
enum gpu_prog {
	PROG_LAUNCH, PROG_LAUNCH_EX, PROG_GRAPH, PROG_SYNC_CTX, PROG_SYNC_STREAM, PROG_SYNC_EVENT,
	PROG_LOOKUP_NAME, PROG_LOOKUP_KERNEL,
};

/*
 * The driver's exported names (cuda.h of CUDA 13.0 and the stub libcuda.so's
 * dynamic symbols): the _ptsz forms are what a program built with
 * per-thread default streams calls.  A name an older driver lacks is skipped.
 */
static const struct {
	const char *func;
	enum gpu_prog enter;
} libcuda_probes[] = {
	{ "cuLaunchKernel", PROG_LAUNCH },
	{ "cuLaunchKernel_ptsz", PROG_LAUNCH },
	/* Same first seven arguments as cuLaunchKernel. */
	{ "cuLaunchCooperativeKernel", PROG_LAUNCH },
	{ "cuLaunchCooperativeKernel_ptsz", PROG_LAUNCH },
	{ "cuLaunchKernelEx", PROG_LAUNCH_EX },
	{ "cuLaunchKernelEx_ptsz", PROG_LAUNCH_EX },
	{ "cuGraphLaunch", PROG_GRAPH },
	{ "cuGraphLaunch_ptsz", PROG_GRAPH },
	{ "cuCtxSynchronize", PROG_SYNC_CTX },
	{ "cuCtxSynchronize_v2", PROG_SYNC_CTX },
	{ "cuStreamSynchronize", PROG_SYNC_STREAM },
	{ "cuStreamSynchronize_ptsz", PROG_SYNC_STREAM },
	{ "cuEventSynchronize", PROG_SYNC_EVENT },
	{ "cuModuleGetFunction", PROG_LOOKUP_NAME },
	{ "cuLibraryGetKernel", PROG_LOOKUP_NAME },
	{ "cuKernelGetFunction", PROG_LOOKUP_KERNEL },
};
#define NPROBES (sizeof(libcuda_probes) / sizeof(libcuda_probes[0]))

/* A libcuda file probed for a pid (-1: every process): one set of uprobes each. */
struct probed_file {
	dev_t dev;
	ino_t ino;
	int pid;
};

/* The last dims of a kernel seen over the whole run, and whether they ever changed. */
struct kernel_dims {
	uint32_t tgid;
	uint64_t object;
	uint64_t grid, block;	/* packed as in gpu_value, flags off */
	bool varied;
};

struct gpu_priv {
	struct probed_file *probed;
	size_t nprobed, probed_cap;
	uint64_t next_machine_scan_ns;
	struct kernel_dims *dims;
	size_t ndims, dims_cap;
};

/* Grows *@array of *@cap elements of @size to hold one more than @n; false when out of memory. */
static bool grow(void **array, size_t *cap, size_t n, size_t size)
{
	size_t want = *cap ? *cap * 2 : 16;
	void *grown;

	if (n < *cap)
		return true;
	grown = realloc(*array, want * size);
	if (!grown)
		return false;
	*array = grown;
	*cap = want;
	return true;
}

static struct bpf_program *enter_prog(struct gpu_bpf *skel, enum gpu_prog prog)
{
	switch (prog) {
	case PROG_LAUNCH: return skel->progs.launch_enter;
	case PROG_LAUNCH_EX: return skel->progs.launch_ex_enter;
	case PROG_GRAPH: return skel->progs.graph_enter;
	case PROG_SYNC_CTX: return skel->progs.sync_ctx_enter;
	case PROG_SYNC_STREAM: return skel->progs.sync_stream_enter;
	case PROG_SYNC_EVENT: return skel->progs.sync_event_enter;
	case PROG_LOOKUP_NAME: return skel->progs.lookup_name_enter;
	case PROG_LOOKUP_KERNEL: return skel->progs.lookup_kernel_enter;
	}
	return NULL;
}

static struct bpf_program *exit_prog(struct gpu_bpf *skel, enum gpu_prog prog)
{
	return prog == PROG_LOOKUP_NAME || prog == PROG_LOOKUP_KERNEL ? skel->progs.lookup_exit
								       : skel->progs.call_exit;
}

static int gpu_open(struct profiler *p, const struct profiler_opts *o)
{
	p->priv = calloc_logged(1, sizeof(struct gpu_priv));
	if (!p->priv)
		return -ENOMEM;
	return PROFILER_OPEN_SKEL(p, gpu);
}

static void gpu_close(struct profiler *p)
{
	struct gpu_priv *priv = p->priv;

	gpu_bpf__destroy(p->skel);
	if (priv) {
		free(priv->probed);
		free(priv->dims);
	}
	free(priv);
}

/* "libcuda.so.1", "libcuda.so.570.86.15": the driver; not libcudart, not libcuda-something. */
static bool is_libcuda(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return strncmp(base, "libcuda.so", 10) == 0 && (base[10] == 0 || base[10] == '.');
}

/*
 * The libcuda @pid maps, as a path that reaches it from here: through
 * /proc/PID/root, so that a container's own driver is the one probed.
 */
static bool libcuda_of_pid(int pid, char *path, size_t len)
{
	return proc_mapped_file(pid, is_libcuda, path, len);
}

/* The host's driver, where the whole machine's processes that load it later will find it. */
static bool host_libcuda(char *path, size_t len)
{
	static const char *const candidates[] = {
#if defined(__x86_64__)
		"/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/lib/x86_64-linux-gnu/libcuda.so.1",
#elif defined(__aarch64__)
		"/usr/lib/aarch64-linux-gnu/libcuda.so.1", "/lib/aarch64-linux-gnu/libcuda.so.1",
#endif
		"/usr/lib64/libcuda.so.1", "/usr/lib/libcuda.so.1", "/usr/local/nvidia/lib64/libcuda.so.1",
	};

	return first_readable(candidates, sizeof(candidates) / sizeof(candidates[0]), path, len);
}

static bool already_probed(const struct gpu_priv *priv, const struct stat *st, int pid)
{
	for (size_t i = 0; i < priv->nprobed; i++)
		if (priv->probed[i].dev == st->st_dev && priv->probed[i].ino == st->st_ino &&
		    priv->probed[i].pid == pid)
			return true;
	return false;
}

static bool pid_probed(const struct gpu_priv *priv, int pid)
{
	for (size_t i = 0; i < priv->nprobed; i++)
		if (priv->probed[i].pid == pid)
			return true;
	return false;
}

/* One uprobe (or uretprobe) on @func of @path for @pid; 0, or -errno (-ENOENT: no such symbol). */
static int attach_one(struct profiler *p, struct bpf_program *prog, const char *path, const char *func,
		      int pid, bool retprobe)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = func, .retprobe = retprobe);

	return profiler_add_link(p, bpf_program__attach_uprobe_opts(prog, pid, path, 0, &uo));
}

/*
 * Every entry point of libcuda_probes on @path for @pid (-1: every process):
 * the entry first, then its return (a return without its entry counts nothing).
 */
static void attach_file(struct profiler *p, const char *path, int pid)
{
	struct gpu_priv *priv = p->priv;
	struct gpu_bpf *skel = p->skel;
	int attached = 0, missing = 0, err = 0;
	struct stat st;

	if (stat(path, &st) || already_probed(priv, &st, pid))
		return;
	if (!grow((void **)&priv->probed, &priv->probed_cap, priv->nprobed, sizeof(*priv->probed)))
		return;
	priv->probed[priv->nprobed++] = (struct probed_file){ st.st_dev, st.st_ino, pid };
	for (size_t i = 0; i < NPROBES; i++) {
		const char *func = libcuda_probes[i].func;

		err = attach_one(p, enter_prog(skel, libcuda_probes[i].enter), path, func, pid, false);
		if (err == -ENOENT) {
			missing++;	/* an older driver: not every name exists */
			continue;
		}
		err = err ?: attach_one(p, exit_prog(skel, libcuda_probes[i].enter), path, func, pid, true);
		if (err) {
			log_warn("gpu: cannot probe %s in %s: %s", func, path, strerror(-err));
			continue;
		}
		attached++;
	}
	log_info("gpu: %d CUDA entry points probed in %s (%s %d), %d not in this driver", attached, path,
		 pid < 0 ? "every process" : "pid", pid, missing);
	if (!attached)
		log_warn("gpu: %s has none of the CUDA driver's launch or synchronize functions", path);
}

/* Every libcuda some process maps, and the host's, probed for every process. */
static void attach_machine(struct profiler *p)
{
	char path[PATH_MAX];
	struct dirent *de;
	DIR *proc;

	if (host_libcuda(path, sizeof(path)))
		attach_file(p, path, -1);
	proc = opendir("/proc");
	while (proc && (de = readdir(proc)))
		if (de->d_name[0] >= '1' && de->d_name[0] <= '9' &&
		    libcuda_of_pid(atoi(de->d_name), path, sizeof(path)))
			attach_file(p, path, -1);
	if (proc)
		closedir(proc);
}

/* Each target that maps libcuda and is not probed yet. */
static void attach_targets(struct profiler *p)
{
	char path[PATH_MAX];

	for (int i = 0; i < p->opts.npids; i++) {
		int pid = (int)p->opts.pids[i];

		if (!pid_probed(p->priv, pid) && libcuda_of_pid(pid, path, sizeof(path)))
			attach_file(p, path, pid);
	}
}

static bool whole_machine(const struct profiler *p)
{
	return !p->opts.npids && !p->opts.targets_only;
}

static int gpu_attach(struct profiler *p)
{
	struct gpu_priv *priv = p->priv;
	int err = profiler_attach_tracing(p);

	if (err || !p->skel)
		return err;
	if (whole_machine(p)) {
		attach_machine(p);
		priv->next_machine_scan_ns = now_ns(CLOCK_MONOTONIC) + MACHINE_RESCAN_NS;
	} else {
		attach_targets(p);
	}
	return 0;
}

/*
 * The record loop's tick: a target not probed yet is looked for again (the
 * CUDA runtime dlopens the driver after main starts); the whole machine is
 * searched for another libcuda file every few seconds (a process of the host
 * driver is caught by the probes on the host's file already).
 */
static void gpu_poll(struct profiler *p)
{
	struct gpu_priv *priv = p->priv;
	uint64_t now;

	if (!priv || !p->skel)
		return;
	if (!whole_machine(p)) {
		attach_targets(p);
		return;
	}
	now = now_ns(CLOCK_MONOTONIC);
	if (now < priv->next_machine_scan_ns)
		return;
	attach_machine(p);
	priv->next_machine_scan_ns = now + MACHINE_RESCAN_NS;
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
	if (!grow((void **)&priv->dims, &priv->dims_cap, priv->ndims, sizeof(*priv->dims)))
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

	if (!p->priv || GPU_OBJECT_KIND(rec->key->object) != GPU_OBJ_KERNEL || !v->launches)
		return;
	d = dims_of(p->priv, rec->key->tgid, rec->key->object);
	if (!d)
		return;
	if ((v->block & GPU_F_VARIED) || (d->grid != UINT64_MAX && (d->grid != v->grid || d->block != block)))
		d->varied = true;
	d->grid = v->grid;
	d->block = block;
}

/* The kernel name @handle of @tgid got from the driver, demangled; NULL when unknown. */
static char *kernel_name(const struct profiler *p, uint32_t tgid, uint64_t handle)
{
	struct gpu_name_key key = { .tgid = tgid, .handle = handle };
	struct gpu_name name;
	const struct gpu_bpf *skel = p ? p->skel : NULL;
	char *plain;

	if (!skel || bpf_map_lookup_elem(bpf_map__fd(skel->maps.gpu_names), &key, &name))
		return NULL;
	name.name[GPU_NAME_LEN - 1] = 0;	/* a longer name was cut there */
	plain = symbolizer_demangle_name(name.name);
	return plain ?: strdup(name.name);
}

char *gpu_object_label(const struct profiler *p, uint32_t tgid, uint64_t object)
{
	static const char *const sync_names[] = {
		[GPU_SYNC_CTX] = "cuCtxSynchronize",
		[GPU_SYNC_STREAM] = "cuStreamSynchronize",
		[GPU_SYNC_EVENT] = "cuEventSynchronize",
	};
	uint64_t handle = GPU_OBJECT_HANDLE(object);
	char *label = NULL;

	switch (GPU_OBJECT_KIND(object)) {
	case GPU_OBJ_KERNEL:
		label = kernel_name(p, tgid, handle);
		if (label || asprintf(&label, "kernel@0x%" PRIx64, handle) >= 0)
			return label;
		return NULL;
	case GPU_OBJ_GRAPH:
		return asprintf(&label, "graph@0x%" PRIx64, handle) < 0 ? NULL : label;
	case GPU_OBJ_SYNC:
		if (handle < sizeof(sync_names) / sizeof(sync_names[0]) && sync_names[handle])
			return strdup(sync_names[handle]);
		break;
	}
	return asprintf(&label, "gpu@0x%" PRIx64, object) < 0 ? NULL : label;
}

/* The leaf frame: the kernel's name (the same for every sample of it), a graph, a sync call. */
static char *gpu_object_name(const struct profile *prof, const struct profile_sample *s,
			     const uint64_t *raw, const char *known)
{
	if (known)
		return strdup(known);
	return gpu_object_label(prof->object_ctx, s->tgid, s->object);
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

const struct profiler_ops profiler_gpu = {
	.name = "gpu",
	.id = PROFILER_GPU,
	.title = "GPU launches",
	.help = "GPU kernel launches and synchronize waits (uprobes on the CUDA driver, libcuda)",
	.opt_in = true,		/* a uprobe traps on every launch of the targets */
	.options = gpu_options,
	.config_size = sizeof(struct gpu_config),
	.nraw = sizeof(struct gpu_value) / sizeof(uint64_t),
	.folded_raw = 0,
	.needs = FEAT_BIT(FEAT_BTF) | FEAT_BIT(FEAT_TASK_STORAGE) | FEAT_BIT(FEAT_TP_SCHED_EXEC) |
		 FEAT_BIT(FEAT_RINGBUF) | FEAT_BIT(FEAT_UPROBE),
	.nvalues = 4,
	.value_types = { { "launches", "count" }, { "launch_time", "nanoseconds" },
			 { "syncs", "count" }, { "sync_wait", "nanoseconds" } },
	.default_value = 0,
	.period_type = { "launches", "count" },
	.to_values = gpu_to_values,
	.object_name = gpu_object_name,
	.on_record = gpu_on_record,
	.report = gpu_report,
	.poll = gpu_poll,
	.open = gpu_open,
	.attach = gpu_attach,
	.close = gpu_close,
};
