// SPDX-License-Identifier: GPL-2.0
/*
 * The GPU benchmark's workload (bench/gpu.sh): N kernel launches through the
 * stand-in CUDA driver or runtime of the tests (tests/workloads/gpu), timed
 * by one clock around the loop.
 *
 *   gpuloop driver|runtime N
 *
 * driver: dlopen("libcuda.so.1"), cuInit, cuModuleGetFunction, then N
 * cuLaunchKernel calls; runtime: dlopen("libcudart.so.12"), one kernel
 * registered as nvcc's start-up code does, then N cudaLaunchKernel calls
 * (each makes the driver's cuLaunchKernel, as NVIDIA's runtime does).  Set
 * FAKE_CUDA_LAUNCH_US=0 and FAKE_CUDA_INIT_MS=0 for the bare call cost.
 * When $GPULOOP_GO names a file, the loop waits for it (after the library is
 * loaded and the first launch made): the profiler attaches meanwhile.
 * Prints "ns_per_launch=X cpu_ns_per_launch=Y launches=N": wall time, and the
 * process's CPU time (user + system: the traps' kernel work is the caller's),
 * which other jobs on the machine do not inflate the way they do the wall
 * time (each trap is a chance to be scheduled out).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cudart_api.h"

typedef CUresult (*launch_fn)(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
			      unsigned int, unsigned int, CUstream, void **, void **);
typedef cudaError_t (*rt_launch_fn)(const void *, dim3, dim3, void **, size_t, cudaStream_t);

static long long clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The loop's clocks: wall and this process's CPU time. */
struct span {
	long long wall_ns, cpu_ns;
};

static struct span span_now(void)
{
	return (struct span){ clock_ns(CLOCK_MONOTONIC), clock_ns(CLOCK_PROCESS_CPUTIME_ID) };
}

static struct span span_since(struct span start)
{
	struct span now = span_now();

	return (struct span){ now.wall_ns - start.wall_ns, now.cpu_ns - start.cpu_ns };
}

static void *must(void *p, const char *what)
{
	if (!p) {
		fprintf(stderr, "gpuloop: %s: %s\n", what, dlerror());
		exit(1);
	}
	return p;
}

static void wait_for_go(void)
{
	const char *go = getenv("GPULOOP_GO");

	for (int i = 0; go && *go && access(go, F_OK) && i < 6000; i++)
		usleep(10000);
}

/* The host stub of the runtime's kernel (nvcc names it after the kernel). */
void bench_kernel(void)
{
}

static struct span loop_driver(long n)
{
	void *lib = must(dlopen("libcuda.so.1", RTLD_NOW), "libcuda.so.1");
	CUresult (*init)(unsigned int) = must(dlsym(lib, "cuInit"), "cuInit");
	CUresult (*get)(CUfunction *, CUmodule, const char *) = must(dlsym(lib, "cuModuleGetFunction"), "get");
	launch_fn launch = must(dlsym(lib, "cuLaunchKernel"), "cuLaunchKernel");
	CUfunction f;
	struct span t;

	if (init(0) || get(&f, NULL, "bench_kernel") || launch(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL))
		exit(1);
	wait_for_go();
	t = span_now();
	for (long i = 0; i < n; i++)
		launch(f, 64, 1, 1, 256, 1, 1, 0, NULL, NULL, NULL);
	return span_since(t);
}

static struct span loop_runtime(long n)
{
	void *lib = must(dlopen("libcudart.so.12", RTLD_NOW), "libcudart.so.12");
	void (*reg)(void **, const char *, char *, const char *, int, uint3 *, uint3 *, dim3 *, dim3 *, int *) =
		must(dlsym(lib, "__cudaRegisterFunction"), "__cudaRegisterFunction");
	cudaError_t (*set_device)(int) = must(dlsym(lib, "cudaSetDevice"), "cudaSetDevice");
	rt_launch_fn launch = must(dlsym(lib, "cudaLaunchKernel"), "cudaLaunchKernel");
	dim3 grid = { 64, 1, 1 }, block = { 256, 1, 1 };
	struct span t;

	reg(NULL, (const char *)bench_kernel, "bench_kernel", "bench_kernel", -1, NULL, NULL, NULL, NULL, NULL);
	if (set_device(0) || launch((const void *)bench_kernel, grid, block, NULL, 0, NULL))
		exit(1);
	wait_for_go();
	t = span_now();
	for (long i = 0; i < n; i++)
		launch((const void *)bench_kernel, grid, block, NULL, 0, NULL);
	return span_since(t);
}

int main(int argc, char **argv)
{
	long n = argc > 2 ? atol(argv[2]) : 0;
	struct span s;

	if (argc < 3 || n <= 0 || (strcmp(argv[1], "driver") && strcmp(argv[1], "runtime"))) {
		fprintf(stderr, "usage: gpuloop driver|runtime N\n");
		return 2;
	}
	s = strcmp(argv[1], "driver") == 0 ? loop_driver(n) : loop_runtime(n);
	printf("ns_per_launch=%.1f cpu_ns_per_launch=%.1f launches=%ld\n", (double)s.wall_ns / n,
	       (double)s.cpu_ns / n, n);
	return 0;
}
