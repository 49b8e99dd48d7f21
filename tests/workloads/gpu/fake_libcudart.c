// SPDX-License-Identifier: GPL-2.0
/*
 * A stand-in libcudart.so.12 (the CUDA runtime, as a program built with
 * `nvcc --cudart shared` maps it) for the GPU profiler's tests: the runtime's
 * entry points with their real names and signatures (cudart_api.h: copied
 * from NVIDIA's headers of CUDA 13.0, and checked against them when they are
 * installed), forwarding to the driver as the real runtime does:
 *  - the driver (libcuda.so.1: the stand-in fake_libcuda.c) is loaded with
 *    dlopen and initialized on the first call, as the real runtime does;
 *  - __cudaRegisterFunction keeps each kernel's host stub and device name; a
 *    kernel's first launch asks the driver for its handle by name
 *    (cuModuleGetFunction; cuLibraryGetKernel for a cudaKernel_t);
 *  - cudaLaunchKernel(_ptsz) and __cudaLaunchKernel(_ptsz) call cuLaunchKernel,
 *    cudaLaunchKernelExC(_ptsz) cuLaunchKernelEx, cudaGraphLaunch(_ptsz)
 *    cuGraphLaunch, cudaDeviceSynchronize cuCtxSynchronize,
 *    cudaStreamSynchronize(_ptsz) cuStreamSynchronize, cudaEventSynchronize
 *    cuEventSynchronize.
 * FAKE_CUDART_DRIVER=unseen: the launches do the driver's work (spin
 * FAKE_CUDA_LAUNCH_US) without calling its exported functions, as a runtime
 * that reaches the driver's code some other way (cuGetProcAddress) would:
 * only the runtime's uprobes see them.
 * Built with frame pointers (tests/gpu.mk).
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../wl.h"
#include "cudart_api.h"

#define MAX_KERNELS 64

/* A kernel nvcc's code registered: its host stub, its name on the device, the driver's handles once asked. */
struct registered_kernel {
	const void *host_fun;
	const char *device_name;
	CUfunction function;
	CUkernel kernel;
};

struct driver {
	CUresult (*init)(unsigned int);
	CUresult (*module_get_function)(CUfunction *, CUmodule, const char *);
	CUresult (*library_get_kernel)(CUkernel *, CUlibrary, const char *);
	CUresult (*launch_kernel)(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int,
				  unsigned int, unsigned int, unsigned int, CUstream, void **, void **);
	CUresult (*launch_kernel_ex)(const CUlaunchConfig *, CUfunction, void **, void **);
	CUresult (*graph_launch)(CUgraphExec, CUstream);
	CUresult (*ctx_synchronize)(void);
	CUresult (*stream_synchronize)(CUstream);
	CUresult (*event_synchronize)(CUevent);
};

static struct registered_kernel kernels[MAX_KERNELS];
static int nkernels;
static struct driver driver;
static int driver_state;	/* 0: not loaded yet, 1: loaded, -1: failed */

static void *driver_sym(void *lib, const char *name)
{
	void *sym = dlsym(lib, name);

	if (!sym)
		fprintf(stderr, "libcudart (stand-in): %s: %s\n", name, dlerror());
	return sym;
}

static bool load_symbols(void *lib)
{
	driver.init = driver_sym(lib, "cuInit");
	driver.module_get_function = driver_sym(lib, "cuModuleGetFunction");
	driver.library_get_kernel = driver_sym(lib, "cuLibraryGetKernel");
	driver.launch_kernel = driver_sym(lib, "cuLaunchKernel");
	driver.launch_kernel_ex = driver_sym(lib, "cuLaunchKernelEx");
	driver.graph_launch = driver_sym(lib, "cuGraphLaunch");
	driver.ctx_synchronize = driver_sym(lib, "cuCtxSynchronize");
	driver.stream_synchronize = driver_sym(lib, "cuStreamSynchronize");
	driver.event_synchronize = driver_sym(lib, "cuEventSynchronize");
	return driver.init && driver.module_get_function && driver.library_get_kernel && driver.launch_kernel &&
	       driver.launch_kernel_ex && driver.graph_launch && driver.ctx_synchronize &&
	       driver.stream_synchronize && driver.event_synchronize;
}

/* The driver, loaded and initialized on the first call; false when it cannot be. */
static bool driver_ready(void)
{
	void *lib;

	if (driver_state)
		return driver_state > 0;
	driver_state = -1;
	lib = dlopen("libcuda.so.1", RTLD_NOW);
	if (!lib) {
		fprintf(stderr, "libcudart (stand-in): %s\n", dlerror());
		return false;
	}
	if (!load_symbols(lib) || driver.init(0) != CUDA_SUCCESS)
		return false;
	driver_state = 1;
	return true;
}

static bool driver_unseen(void)
{
	const char *v = getenv("FAKE_CUDART_DRIVER");

	return v && strcmp(v, "unseen") == 0;
}

/* The driver's launch work without the driver's functions (FAKE_CUDART_DRIVER=unseen). */
static cudaError_t launch_unseen(void)
{
	const char *us = getenv("FAKE_CUDA_LAUNCH_US");
	uint64_t end = now_ns(CLOCK_MONOTONIC) + (us && *us ? atol(us) : 20) * 1000LL;

	while (now_ns(CLOCK_MONOTONIC) < end)
		;
	return cudaSuccess;
}

static cudaError_t from_driver(CUresult r)
{
	return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}

/* The program's first call, as cudaFree(0) or cudaSetDevice are: the driver is loaded and initialized. */
cudaError_t cudaSetDevice(int device)
{
	return driver_ready() && device == 0 ? cudaSuccess : cudaErrorInvalidValue;
}

void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun, const char *deviceName,
			    int thread_limit, uint3 *tid, uint3 *bid, dim3 *bDim, dim3 *gDim, int *wSize)
{
	if (nkernels < MAX_KERNELS)
		kernels[nkernels++] = (struct registered_kernel){ hostFun, deviceName };
}

static struct registered_kernel *registered(const void *host_fun)
{
	for (int i = 0; i < nkernels; i++)
		if (kernels[i].host_fun == host_fun)
			return &kernels[i];
	return NULL;
}

/* @host_fun's CUfunction, asked of the driver on its first launch; NULL when unknown. */
static CUfunction function_of(const void *host_fun)
{
	struct registered_kernel *k = registered(host_fun);

	if (!k || !driver_ready())
		return NULL;
	if (!k->function && driver.module_get_function(&k->function, NULL, k->device_name) != CUDA_SUCCESS)
		return NULL;
	return k->function;
}

static cudaError_t launch(const void *func, dim3 grid, dim3 block, void **args, size_t shared_mem,
			  cudaStream_t stream)
{
	CUfunction f;

	if (!driver_ready())
		return cudaErrorInitializationError;
	if (driver_unseen())
		return registered(func) ? launch_unseen() : cudaErrorInvalidValue;
	f = function_of(func);
	if (!f)
		return cudaErrorInvalidValue;
	return from_driver(driver.launch_kernel(f, grid.x, grid.y, grid.z, block.x, block.y, block.z,
						(unsigned int)shared_mem, stream, args, NULL));
}

cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
			     cudaStream_t stream)
{
	return launch(func, gridDim, blockDim, args, sharedMem, stream);
}

cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
				  cudaStream_t stream)
{
	return launch(func, gridDim, blockDim, args, sharedMem, stream);
}

static cudaError_t launch_ex(const cudaLaunchConfig_t *config, const void *func, void **args)
{
	CUlaunchConfig cfg;
	CUfunction f;

	if (!config)
		return cudaErrorInvalidValue;
	if (!driver_ready())
		return cudaErrorInitializationError;
	if (driver_unseen())
		return registered(func) ? launch_unseen() : cudaErrorInvalidValue;
	f = function_of(func);
	if (!f)
		return cudaErrorInvalidValue;
	cfg = (CUlaunchConfig){
		.gridDimX = config->gridDim.x, .gridDimY = config->gridDim.y, .gridDimZ = config->gridDim.z,
		.blockDimX = config->blockDim.x, .blockDimY = config->blockDim.y, .blockDimZ = config->blockDim.z,
		.sharedMemBytes = (unsigned int)config->dynamicSmemBytes, .hStream = config->stream,
	};
	return from_driver(driver.launch_kernel_ex(&cfg, f, args, NULL));
}

cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *config, const void *func, void **args)
{
	return launch_ex(config, func, args);
}

cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *config, const void *func, void **args)
{
	return launch_ex(config, func, args);
}

/* nvcc 13's <<<>>>: the kernel's cudaKernel_t (the driver's CUkernel), got once per kernel. */
cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *hostFun)
{
	struct registered_kernel *k = registered(hostFun);

	if (!kernel || !k || !driver_ready())
		return cudaErrorInvalidValue;
	if (!k->kernel && driver.library_get_kernel(&k->kernel, NULL, k->device_name) != CUDA_SUCCESS)
		return cudaErrorInvalidValue;
	*kernel = (cudaKernel_t)k->kernel;
	return cudaSuccess;
}

/* CUDA 12+ takes a CUkernel wherever a CUfunction goes. */
static cudaError_t launch_kernel_handle(cudaKernel_t kernel, dim3 grid, dim3 block, void **args, size_t shared_mem,
					cudaStream_t stream)
{
	if (!kernel || !driver_ready())
		return cudaErrorInvalidValue;
	if (driver_unseen())
		return launch_unseen();
	return from_driver(driver.launch_kernel((CUfunction)kernel, grid.x, grid.y, grid.z, block.x, block.y,
						block.z, (unsigned int)shared_mem, stream, args, NULL));
}

cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
			       cudaStream_t stream)
{
	return launch_kernel_handle(kernel, gridDim, blockDim, args, sharedMem, stream);
}

cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
				    size_t sharedMem, cudaStream_t stream)
{
	return launch_kernel_handle(kernel, gridDim, blockDim, args, sharedMem, stream);
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream)
{
	return driver_ready() ? from_driver(driver.graph_launch((CUgraphExec)graphExec, stream))
			      : cudaErrorInitializationError;
}

cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream)
{
	return cudaGraphLaunch(graphExec, stream);
}

cudaError_t cudaDeviceSynchronize(void)
{
	return driver_ready() ? from_driver(driver.ctx_synchronize()) : cudaErrorInitializationError;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
	return driver_ready() ? from_driver(driver.stream_synchronize(stream)) : cudaErrorInitializationError;
}

cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream)
{
	return cudaStreamSynchronize(stream);
}

cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
	return driver_ready() ? from_driver(driver.event_synchronize((CUevent)event)) : cudaErrorInitializationError;
}
