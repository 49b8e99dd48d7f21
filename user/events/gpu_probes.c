// SPDX-License-Identifier: GPL-2.0
/*
 * Where the GPU profiler's uprobes go: the CUDA driver (libcuda.so*) and the
 * CUDA runtime (libcudart.so*, where a program maps it as a shared library;
 * nvcc links it statically by default, and then the driver's entry points
 * see its launches), found through each process's /proc/PID/maps and opened
 * through /proc/PID/root (a container's own copy).  A target's copy is probed
 * for that pid only; for the whole machine every copy some process maps (and
 * the host's driver) is probed for every process.
 *
 * When: at the start, then on the caller's tick (~100 ms), because the CUDA
 * runtime loads the driver with dlopen when the program first calls it:
 *  - a target whose driver is not probed yet, every tick;
 *  - the whole machine: each process that appeared since aperture started,
 *    at the ages 0.1, 0.2, 0.4 ... 6.4 s (a program sets CUDA up early in its
 *    life: found within about its age then, at 7 reads of its maps);
 *  - everything again every 5 s (a library loaded later than that).
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <bpf/libbpf.h>
#include "gpu.skel.h"
#include "gpu_probes.h"
#include "procmaps.h"
#include "profiler.h"
#include "util.h"

#define RESCAN_NS (5 * 1000000000ull)
/* A new process's maps are read at these ages: FIRST_CHECK_NS << 0 .. << YOUNG_CHECKS - 1. */
#define FIRST_CHECK_NS 100000000ull
#define YOUNG_CHECKS 7
/*
 * Library files probed at most (each a set of uprobes): a process names its
 * own files, and the whole machine's scan must not attach without end.
 */
#define MAX_PROBED_FILES 512

/* The entry programs; their returns: see exit_prog(). */
enum gpu_prog {
	PROG_LAUNCH, PROG_LAUNCH_EX, PROG_GRAPH, PROG_SYNC_CTX, PROG_SYNC_STREAM, PROG_SYNC_EVENT,
	PROG_LOOKUP_NAME, PROG_LOOKUP_KERNEL,
	PROG_RT_LAUNCH, PROG_RT_LAUNCH_EX, PROG_RT_GRAPH, PROG_RT_SYNC_DEVICE, PROG_RT_SYNC_STREAM,
	PROG_RT_SYNC_EVENT,
};

struct gpu_probe {
	const char *func;
	enum gpu_prog enter;
};

/*
 * The driver's exported names (cuda.h of CUDA 13.0 and the stub libcuda.so's
 * dynamic symbols): the _ptsz forms are what a program built with
 * per-thread default streams calls.  A name an older driver lacks is skipped.
 */
static const struct gpu_probe driver_probes[] = {
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

/*
 * The runtime's (cuda_runtime_api.h of CUDA 13.0 and libcudart.so.13's
 * dynamic symbols): __cudaLaunchKernel is what nvcc 13's <<<>>> calls
 * (crt/host_runtime.h), cudaLaunchKernel what older nvcc's and C callers do.
 */
static const struct gpu_probe runtime_probes[] = {
	{ "cudaLaunchKernel", PROG_RT_LAUNCH },
	{ "cudaLaunchKernel_ptsz", PROG_RT_LAUNCH },
	{ "__cudaLaunchKernel", PROG_RT_LAUNCH },
	{ "__cudaLaunchKernel_ptsz", PROG_RT_LAUNCH },
	{ "cudaLaunchCooperativeKernel", PROG_RT_LAUNCH },
	{ "cudaLaunchCooperativeKernel_ptsz", PROG_RT_LAUNCH },
	{ "cudaLaunchKernelExC", PROG_RT_LAUNCH_EX },
	{ "cudaLaunchKernelExC_ptsz", PROG_RT_LAUNCH_EX },
	{ "cudaGraphLaunch", PROG_RT_GRAPH },
	{ "cudaGraphLaunch_ptsz", PROG_RT_GRAPH },
	{ "cudaDeviceSynchronize", PROG_RT_SYNC_DEVICE },
	{ "cudaStreamSynchronize", PROG_RT_SYNC_STREAM },
	{ "cudaStreamSynchronize_ptsz", PROG_RT_SYNC_STREAM },
	{ "cudaEventSynchronize", PROG_RT_SYNC_EVENT },
};

enum gpu_library { LIB_DRIVER, LIB_RUNTIME, NLIBS };

static const struct {
	const char *file;	/* the file name up to its version: "libcuda.so" (.1, .570.86.15) */
	const char *what;
	const struct gpu_probe *probes;
	size_t nprobes;
} libraries[NLIBS] = {
	[LIB_DRIVER] = { "libcuda.so", "CUDA driver", driver_probes,
			 sizeof(driver_probes) / sizeof(driver_probes[0]) },
	[LIB_RUNTIME] = { "libcudart.so", "CUDA runtime", runtime_probes,
			  sizeof(runtime_probes) / sizeof(runtime_probes[0]) },
};

/* A library file probed for a pid (-1: every process): one set of uprobes each. */
struct probed_file {
	dev_t dev;
	ino_t ino;
	int pid;
	enum gpu_library lib;
};

/* A process of the machine, by pid; born_ns 0: there when aperture started. */
struct machine_process {
	int pid;
	uint64_t born_ns;	/* CLOCK_MONOTONIC, when first seen */
	unsigned int checks;	/* of its maps since */
};

struct gpu_probes {
	struct probed_file *probed;
	size_t nprobed, probed_cap;
	unsigned int refused;		/* mapped names not probed (each scan): not the file mapped, over the cap */
	struct machine_process *procs;	/* the whole machine's, sorted by pid */
	size_t nprocs;
	uint64_t next_rescan_ns;
};

struct gpu_probes *gpu_probes_new(void)
{
	return calloc_logged(1, sizeof(struct gpu_probes));
}

void gpu_probes_free(struct gpu_probes *g)
{
	if (!g)
		return;
	if (g->refused)
		log_warn("gpu: %u CUDA library names in processes' maps not probed (an anonymous mapping's or "
			 "memfd's name, not the file mapped, or over %d files)", g->refused, MAX_PROBED_FILES);
	free(g->probed);
	free(g->procs);
	free(g);
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
	case PROG_RT_LAUNCH: return skel->progs.rt_launch_enter;
	case PROG_RT_LAUNCH_EX: return skel->progs.rt_launch_ex_enter;
	case PROG_RT_GRAPH: return skel->progs.rt_graph_enter;
	case PROG_RT_SYNC_DEVICE: return skel->progs.rt_sync_device_enter;
	case PROG_RT_SYNC_STREAM: return skel->progs.rt_sync_stream_enter;
	case PROG_RT_SYNC_EVENT: return skel->progs.rt_sync_event_enter;
	}
	return NULL;
}

static struct bpf_program *exit_prog(struct gpu_bpf *skel, enum gpu_prog prog)
{
	if (prog == PROG_LOOKUP_NAME || prog == PROG_LOOKUP_KERNEL)
		return skel->progs.lookup_exit;
	return prog >= PROG_RT_LAUNCH ? skel->progs.rt_call_exit : skel->progs.call_exit;
}

/* Which library @path is: "libcuda.so.1" the driver, "libcudart.so.12" the runtime, "libcudnn.so" none (-1). */
static int library_of(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	for (int lib = 0; lib < NLIBS; lib++) {
		size_t len = strlen(libraries[lib].file);

		if (strncmp(base, libraries[lib].file, len) == 0 && (base[len] == 0 || base[len] == '.'))
			return lib;
	}
	return -1;
}

static bool is_gpu_library(const char *path)
{
	return library_of(path) >= 0;
}

/* The host's driver, where the whole machine's processes that load it later will find it. */
static bool host_driver(char *path, size_t len)
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

static bool already_probed(const struct gpu_probes *g, const struct stat *st, int pid)
{
	for (size_t i = 0; i < g->nprobed; i++)
		if (g->probed[i].dev == st->st_dev && g->probed[i].ino == st->st_ino && g->probed[i].pid == pid)
			return true;
	return false;
}

static bool driver_probed(const struct gpu_probes *g, int pid)
{
	for (size_t i = 0; i < g->nprobed; i++)
		if (g->probed[i].pid == pid && g->probed[i].lib == LIB_DRIVER)
			return true;
	return false;
}

/* Remembers @st's file as probed for @pid; false when out of memory or files (then it is not probed). */
static bool note_probed(struct gpu_probes *g, const struct stat *st, int pid, enum gpu_library lib)
{
	if (g->nprobed >= MAX_PROBED_FILES) {
		g->refused++;
		return false;
	}
	if (array_reserve((void **)&g->probed, &g->probed_cap, g->nprobed, sizeof(*g->probed), 16))
		return false;
	g->probed[g->nprobed++] = (struct probed_file){ st->st_dev, st->st_ino, pid, lib };
	return true;
}

/* One uprobe (or uretprobe) on @func of @path for @pid; 0, or -errno (-ENOENT: no such symbol). */
static int attach_one(struct profiler *p, struct bpf_program *prog, const char *path, const char *func,
		      int pid, bool retprobe)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = func, .retprobe = retprobe);

	return profiler_add_link(p, bpf_program__attach_uprobe_opts(prog, pid, path, 0, &uo));
}

/*
 * Every entry point of @lib in @st's file, reached by @open_path and named
 * @path, for @pid (-1: every process): the entry first, then its return (a
 * return without its entry counts nothing).
 */
static void attach_file(struct profiler *p, struct gpu_probes *g, enum gpu_library lib, const char *path,
			const char *open_path, const struct stat *st, int pid)
{
	struct gpu_bpf *skel = p->skel;
	int attached = 0, missing = 0, err;

	if (already_probed(g, st, pid) || !note_probed(g, st, pid, lib))
		return;
	for (size_t i = 0; i < libraries[lib].nprobes; i++) {
		const struct gpu_probe *probe = &libraries[lib].probes[i];

		err = attach_one(p, enter_prog(skel, probe->enter), open_path, probe->func, pid, false);
		if (err == -ENOENT) {
			missing++;	/* an older library: not every name exists */
			continue;
		}
		err = err ?: attach_one(p, exit_prog(skel, probe->enter), open_path, probe->func, pid, true);
		if (err) {
			log_warn("gpu: cannot probe %s in %s: %s", probe->func, path, strerror(-err));
			continue;
		}
		attached++;
	}
	if (pid < 0)
		log_info("gpu: %d %s entry points probed in %s (every process), %d not in this one", attached,
			 libraries[lib].what, path, missing);
	else
		log_info("gpu: %d %s entry points probed in %s (pid %d), %d not in this one", attached,
			 libraries[lib].what, path, pid, missing);
	if (!attached)
		log_warn("gpu: %s has none of the %s's launch or synchronize functions", path,
			 libraries[lib].what);
}

struct scan {
	struct profiler *p;
	struct gpu_probes *g;
	int attach_pid;		/* what the uprobes are for: the pid, or -1 (every process) */
};

static bool on_mapped(const struct mapped_file *file, void *arg)
{
	struct scan *s = arg;

	attach_file(s->p, s->g, (enum gpu_library)library_of(file->path), file->path, file->fd_path, &file->st,
		    s->attach_pid);
	return true;
}

/* The CUDA libraries @pid maps, probed for @attach_pid; false when @pid is gone. */
static bool scan_process(struct profiler *p, struct gpu_probes *g, int pid, int attach_pid)
{
	struct scan s = { p, g, attach_pid };
	unsigned int refused = 0;
	bool read = proc_mapped_files(pid, is_gpu_library, on_mapped, &s, &refused);

	if (refused && !g->refused)
		log_warn("gpu: pid %d maps a CUDA library name that is not the file mapped (an anonymous "
			 "mapping's or memfd's name?): not probed", pid);
	g->refused += refused;
	return read;
}

/* Each target whose driver is not probed yet (@all: every target). */
static void scan_targets(struct profiler *p, struct gpu_probes *g, bool all)
{
	for (int i = 0; i < p->opts.npids; i++) {
		int pid = (int)p->opts.pids[i];

		if (all || !driver_probed(g, pid))
			scan_process(p, g, pid, pid);
	}
}

static int by_pid(const void *a, const void *b)
{
	const struct machine_process *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

/*
 * The machine's processes now, sorted by pid, each with what @g knew of it
 * (a new one born @now); NULL when /proc cannot be read, *@n set.
 */
static struct machine_process *list_processes(const struct gpu_probes *g, uint64_t now, size_t *n)
{
	struct machine_process *procs = NULL, *known;
	size_t cap = 0;
	struct dirent *de;
	DIR *dir = opendir("/proc");

	*n = 0;
	while (dir && (de = readdir(dir))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		if (array_reserve((void **)&procs, &cap, *n, sizeof(*procs), 256))
			break;	/* out of memory: the rest waits for the next tick */
		procs[(*n)++] = (struct machine_process){ .pid = atoi(de->d_name), .born_ns = now };
	}
	if (dir)
		closedir(dir);
	qsort(procs, *n, sizeof(*procs), by_pid);
	for (size_t i = 0; i < *n; i++) {
		known = g->procs ? bsearch(&procs[i], g->procs, g->nprocs, sizeof(*procs), by_pid) : NULL;
		if (known)
			procs[i] = *known;
	}
	return procs;
}

/* A process first seen since the start, at the ages 0.1, 0.2 ... 6.4 s: its maps read once per age. */
static bool check_due(struct machine_process *proc, uint64_t now)
{
	if (!proc->born_ns || proc->checks >= YOUNG_CHECKS)
		return false;
	if (now - proc->born_ns < FIRST_CHECK_NS << proc->checks)
		return false;
	while (proc->checks < YOUNG_CHECKS && now - proc->born_ns >= FIRST_CHECK_NS << proc->checks)
		proc->checks++;	/* a late tick counts once */
	return true;
}

/* The whole machine's processes that appeared since the last tick, and the young ones due a look. */
static void scan_new_processes(struct profiler *p, struct gpu_probes *g, uint64_t now)
{
	size_t n;
	struct machine_process *procs = list_processes(g, now, &n);

	if (!procs)
		return;	/* the old list stays */
	for (size_t i = 0; i < n; i++)
		if (check_due(&procs[i], now))
			scan_process(p, g, procs[i].pid, -1);
	free(g->procs);
	g->procs = procs;
	g->nprocs = n;
}

/* Every CUDA library some process maps, and the host's driver, probed for every process. */
static void scan_machine(struct profiler *p, struct gpu_probes *g)
{
	char path[PATH_MAX];
	struct stat st;

	if (host_driver(path, sizeof(path)) && !stat(path, &st))
		attach_file(p, g, LIB_DRIVER, path, path, &st, -1);
	for (size_t i = 0; i < g->nprocs; i++)
		scan_process(p, g, g->procs[i].pid, -1);
}

static bool whole_machine(const struct profiler *p)
{
	return !p->opts.npids && !p->opts.targets_only;
}

void gpu_probes_start(struct profiler *p, struct gpu_probes *g)
{
	uint64_t now = now_ns(CLOCK_MONOTONIC);

	g->next_rescan_ns = now + RESCAN_NS;
	if (!whole_machine(p)) {
		scan_targets(p, g, true);
		return;
	}
	g->procs = list_processes(g, 0, &g->nprocs);	/* born 0: there before us */
	scan_machine(p, g);
}

void gpu_probes_tick(struct profiler *p, struct gpu_probes *g)
{
	uint64_t now = now_ns(CLOCK_MONOTONIC);
	bool rescan = now >= g->next_rescan_ns;

	if (rescan)
		g->next_rescan_ns = now + RESCAN_NS;
	if (!whole_machine(p)) {
		scan_targets(p, g, rescan);
		return;
	}
	scan_new_processes(p, g, now);
	if (rescan)
		scan_machine(p, g);
}
