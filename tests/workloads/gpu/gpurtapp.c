// SPDX-License-Identifier: GPL-2.0
/*
 * A CUDA runtime API program for the GPU profiler's tests, linked against the
 * stand-in libcudart.so.12 (fake_libcudart.c) as `nvcc --cudart shared`
 * links one: the runtime is mapped from the start and loads the driver
 * (libcuda.so.1) on the first call.
 *
 *   gpurtapp N M K J S_MS [PAUSE_MS]
 *
 * Registers three kernels as nvcc's start-up code does (__cudaRegisterFunction
 * with the host stub, whose symbol is the kernel's name, and the device
 * name), initializes (cudaSetDevice; then waits PAUSE_MS, default 0), then
 * launches saxpy N times with grid (128,1,1) block (256,1,1) through
 * cudaLaunchKernel (launch_saxpy), stencil(float const*, float*, int) M times
 * with grid (32,32,1) block (8,8,4) through cudaLaunchKernelExC
 * (launch_stencil), relu(float*) K times with grid (8,1,1) block (128,1,1)
 * through __cudaGetKernel + __cudaLaunchKernel as nvcc 13's <<<>>> does
 * (launch_relu), and calls cudaDeviceSynchronize J times, each waiting S_MS
 * (wait_for_device).  It prints what it did and its own clock around the
 * launch and synchronize calls.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "../wl.h"
#include "cudart_api.h"

/*
 * The host stubs: nvcc names each after its kernel (extern "C" saxpy, the
 * mangled C++ names of the others) and passes its address to the runtime.
 * Bodies that differ: the compiler may not fold them into one.
 */
static volatile int stub_called;

void saxpy(void)
{
	stub_called = 1;
}

void _Z7stencilPKfPfi(void)
{
	stub_called = 2;
}

void _Z4reluPf(void)
{
	stub_called = 3;
}

static long long launch_ns, sync_ns;

static void check(cudaError_t r, const char *what)
{
	if (r != cudaSuccess) {
		fprintf(stderr, "gpurtapp: %s failed: %d\n", what, (int)r);
		exit(1);
	}
}

static void register_kernels(void)
{
	__cudaRegisterFunction(NULL, (const char *)saxpy, "saxpy", "saxpy", -1, NULL, NULL, NULL, NULL, NULL);
	__cudaRegisterFunction(NULL, (const char *)_Z7stencilPKfPfi, "_Z7stencilPKfPfi", "_Z7stencilPKfPfi", -1,
			       NULL, NULL, NULL, NULL, NULL);
	__cudaRegisterFunction(NULL, (const char *)_Z4reluPf, "_Z4reluPf", "_Z4reluPf", -1, NULL, NULL, NULL, NULL,
			       NULL);
}

static void launch_saxpy(int n)
{
	dim3 grid = { 128, 1, 1 }, block = { 256, 1, 1 };
	void *args[1] = { NULL };

	for (int i = 0; i < n; i++) {
		uint64_t t = now_ns(CLOCK_MONOTONIC);

		check(cudaLaunchKernel((const void *)saxpy, grid, block, args, 0, NULL), "cudaLaunchKernel");
		launch_ns += now_ns(CLOCK_MONOTONIC) - t;
	}
}

static void launch_stencil(int n)
{
	cudaLaunchConfig_t cfg = { .gridDim = { 32, 32, 1 }, .blockDim = { 8, 8, 4 } };

	for (int i = 0; i < n; i++) {
		uint64_t t = now_ns(CLOCK_MONOTONIC);

		check(cudaLaunchKernelExC(&cfg, (const void *)_Z7stencilPKfPfi, NULL), "cudaLaunchKernelExC");
		launch_ns += now_ns(CLOCK_MONOTONIC) - t;
	}
}

static void launch_relu(int n)
{
	static cudaKernel_t handle;	/* as nvcc's launch code keeps it */
	dim3 grid = { 8, 1, 1 }, block = { 128, 1, 1 };

	check(__cudaGetKernel(&handle, (const void *)_Z4reluPf), "__cudaGetKernel");
	for (int i = 0; i < n; i++) {
		uint64_t t = now_ns(CLOCK_MONOTONIC);

		check(__cudaLaunchKernel(handle, grid, block, NULL, 0, NULL), "__cudaLaunchKernel");
		launch_ns += now_ns(CLOCK_MONOTONIC) - t;
	}
}

static void wait_for_device(int n)
{
	for (int i = 0; i < n; i++) {
		uint64_t t = now_ns(CLOCK_MONOTONIC);

		check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
		sync_ns += now_ns(CLOCK_MONOTONIC) - t;
	}
}

int main(int argc, char **argv)
{
	char sync_us[32];
	int n, m, k, j, s_ms;

	if (argc < 6) {
		fprintf(stderr, "usage: gpurtapp N M K J S_MS [PAUSE_MS]\n");
		return 2;
	}
	n = atoi(argv[1]);
	m = atoi(argv[2]);
	k = atoi(argv[3]);
	j = atoi(argv[4]);
	s_ms = atoi(argv[5]);
	snprintf(sync_us, sizeof(sync_us), "%d", s_ms * 1000);
	setenv("FAKE_CUDA_SYNC_US", sync_us, 1);
	register_kernels();
	check(cudaSetDevice(0), "cudaSetDevice");
	if (argc > 6)
		usleep(atoi(argv[6]) * 1000);
	launch_saxpy(n);
	launch_stencil(m);
	launch_relu(k);
	wait_for_device(j);
	printf("gpurtapp: pid=%d saxpy=%d stencil=%d relu=%d syncs=%d launch_ns=%lld sync_ns=%lld\n",
	       (int)getpid(), n, m, k, j, launch_ns, sync_ns);
	return 0;
}
