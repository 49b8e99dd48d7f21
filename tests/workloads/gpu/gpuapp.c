// SPDX-License-Identifier: GPL-2.0
/*
 * A CUDA driver API program for the GPU profiler's tests, run against the
 * stand-in libcuda.so.1 (fake_libcuda.c), loaded with dlopen as the CUDA
 * runtime loads the driver (found through LD_LIBRARY_PATH).
 *
 *   gpuapp N M K J S_MS [DELAY_MS [PAUSE_MS]]
 *
 * After DELAY_MS (default 0), and once the file $GPUAPP_GO names exists
 * (when set: a test creates it once aperture is attached), it loads the
 * library, calls cuInit (and waits
 * PAUSE_MS more, default 0: a profiler can attach to it then), gets
 * "vecAdd" by cuModuleGetFunction and "_Z6matmulPfS_S_i" by
 * cuLibraryGetKernel + cuKernelGetFunction, then launches vecAdd N times
 * with grid (64,1,1) block (256,1,1) (cuLaunchKernel, from launch_vecadd),
 * matmul M times with grids (16..64, 1..2, 1) block (16,16,1)
 * (cuLaunchKernelEx and its _ptsz form in turn, from launch_matmul),
 * cuGraphLaunch K times (run_graphs) and cuCtxSynchronize J times, each
 * waiting S_MS (wait_for_gpu).  It prints what it did and its own clock
 * around the launch and synchronize calls.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "cuda_api.h"

struct driver {
	CUresult (*init)(unsigned int);
	CUresult (*module_get_function)(CUfunction *, CUmodule, const char *);
	CUresult (*library_get_kernel)(CUkernel *, CUlibrary, const char *);
	CUresult (*kernel_get_function)(CUfunction *, CUkernel);
	CUresult (*launch_kernel)(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int,
				  unsigned int, unsigned int, unsigned int, CUstream, void **, void **);
	CUresult (*launch_kernel_ex)(const CUlaunchConfig *, CUfunction, void **, void **);
	CUresult (*launch_kernel_ex_ptsz)(const CUlaunchConfig *, CUfunction, void **, void **);
	CUresult (*graph_launch)(CUgraphExec, CUstream);
	CUresult (*ctx_synchronize)(void);
};

static long long launch_ns, sync_ns;

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void *must_sym(void *lib, const char *name)
{
	void *sym = dlsym(lib, name);

	if (!sym) {
		fprintf(stderr, "gpuapp: %s: %s\n", name, dlerror());
		exit(1);
	}
	return sym;
}

static void load_driver(struct driver *d)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW);

	if (!lib) {
		fprintf(stderr, "gpuapp: %s\n", dlerror());
		exit(1);
	}
	d->init = must_sym(lib, "cuInit");
	d->module_get_function = must_sym(lib, "cuModuleGetFunction");
	d->library_get_kernel = must_sym(lib, "cuLibraryGetKernel");
	d->kernel_get_function = must_sym(lib, "cuKernelGetFunction");
	d->launch_kernel = must_sym(lib, "cuLaunchKernel");
	d->launch_kernel_ex = must_sym(lib, "cuLaunchKernelEx");
	d->launch_kernel_ex_ptsz = must_sym(lib, "cuLaunchKernelEx_ptsz");
	d->graph_launch = must_sym(lib, "cuGraphLaunch");
	d->ctx_synchronize = must_sym(lib, "cuCtxSynchronize");
}

/* Until the file $GPUAPP_GO exists (at most 60 s): the test says when to load the driver. */
static void wait_for_go(void)
{
	const char *go = getenv("GPUAPP_GO");

	for (int i = 0; go && *go && access(go, F_OK) && i < 6000; i++)
		usleep(10000);
}

static void check(CUresult r, const char *what)
{
	if (r != CUDA_SUCCESS) {
		fprintf(stderr, "gpuapp: %s failed: %d\n", what, (int)r);
		exit(1);
	}
}

static void launch_vecadd(const struct driver *d, CUfunction f, int n)
{
	void *params[1] = { NULL };

	for (int i = 0; i < n; i++) {
		long long t = now_ns();

		check(d->launch_kernel(f, 64, 1, 1, 256, 1, 1, 0, NULL, params, NULL), "cuLaunchKernel");
		launch_ns += now_ns() - t;
	}
}

static void launch_matmul(const struct driver *d, CUfunction f, int n)
{
	for (int i = 0; i < n; i++) {
		CUlaunchConfig cfg = {
			.gridDimX = 16 * (i % 4 + 1), .gridDimY = i % 2 + 1, .gridDimZ = 1,
			.blockDimX = 16, .blockDimY = 16, .blockDimZ = 1,
		};
		long long t = now_ns();

		check((i % 2 ? d->launch_kernel_ex_ptsz : d->launch_kernel_ex)(&cfg, f, NULL, NULL),
		      "cuLaunchKernelEx");
		launch_ns += now_ns() - t;
	}
}

static void run_graphs(const struct driver *d, CUgraphExec exec, int n)
{
	for (int i = 0; i < n; i++) {
		long long t = now_ns();

		check(d->graph_launch(exec, NULL), "cuGraphLaunch");
		launch_ns += now_ns() - t;
	}
}

static void wait_for_gpu(const struct driver *d, int n)
{
	for (int i = 0; i < n; i++) {
		long long t = now_ns();

		check(d->ctx_synchronize(), "cuCtxSynchronize");
		sync_ns += now_ns() - t;
	}
}

int main(int argc, char **argv)
{
	struct driver d;
	CUfunction vecadd, matmul;
	CUkernel matmul_kernel;
	static char graph_exec[64];	/* a graph's handle: any address the driver would give */
	char sync_us[32];
	int n, m, k, j, s_ms;

	if (argc < 6) {
		fprintf(stderr, "usage: gpuapp N M K J S_MS [DELAY_MS [PAUSE_MS]]\n");
		return 2;
	}
	n = atoi(argv[1]);
	m = atoi(argv[2]);
	k = atoi(argv[3]);
	j = atoi(argv[4]);
	s_ms = atoi(argv[5]);
	if (argc > 6)
		usleep(atoi(argv[6]) * 1000);
	snprintf(sync_us, sizeof(sync_us), "%d", s_ms * 1000);
	setenv("FAKE_CUDA_SYNC_US", sync_us, 1);
	wait_for_go();
	load_driver(&d);
	check(d.init(0), "cuInit");
	if (argc > 7)
		usleep(atoi(argv[7]) * 1000);
	check(d.module_get_function(&vecadd, NULL, "vecAdd"), "cuModuleGetFunction");
	check(d.library_get_kernel(&matmul_kernel, NULL, "_Z6matmulPfS_S_i"), "cuLibraryGetKernel");
	check(d.kernel_get_function(&matmul, matmul_kernel), "cuKernelGetFunction");
	launch_vecadd(&d, vecadd, n);
	launch_matmul(&d, matmul, m);
	run_graphs(&d, (CUgraphExec)graph_exec, k);
	wait_for_gpu(&d, j);
	printf("gpuapp: pid=%d vecAdd=%d matmul=%d graphs=%d syncs=%d launch_ns=%lld sync_ns=%lld\n",
	       (int)getpid(), n, m, k, j, launch_ns, sync_ns);
	return 0;
}
