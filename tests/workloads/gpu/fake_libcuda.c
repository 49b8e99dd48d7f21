// SPDX-License-Identifier: GPL-2.0
/*
 * A stand-in libcuda.so.1 for the GPU profiler's tests (no GPU here): the
 * CUDA driver's entry points with their real names and signatures (see
 * cuda_api.h: copied from NVIDIA's cuda.h of CUDA 13.0, and checked against
 * it when it is installed), each doing a small known amount of work:
 *  - cuInit sleeps FAKE_CUDA_INIT_MS (default 300) ms, as a real driver's
 *    initialization takes a while (0.1 s to seconds): aperture attaches to a
 *    process that loads the library later on its next tick (~100 ms);
 *  - a launch (cuLaunchKernel, cuLaunchKernelEx, their _ptsz forms,
 *    cuGraphLaunch) spins FAKE_CUDA_LAUNCH_US (default 20) us on the CPU, the
 *    order of a real launch call (2-5 us in NVIDIA's figures, more with a
 *    full queue) and long enough to measure;
 *  - a synchronize call sleeps FAKE_CUDA_SYNC_US (default 5000) us, the CPU
 *    waiting for the GPU;
 *  - cuModuleGetFunction / cuLibraryGetKernel hand out a new handle per call
 *    (the name is kept behind it); cuKernelGetFunction another handle.
 * Built with frame pointers (tests/gpu.mk).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../wl.h"
#include "cuda_api.h"

/* What a handle points to: enough to be a distinct, valid address. */
struct fake_handle {
	char name[256];
};

static long env_long(const char *name, long dflt)
{
	const char *v = getenv(name);

	return v && *v ? strtol(v, NULL, 10) : dflt;
}

static void spin_us(long us)
{
	uint64_t end = now_ns(CLOCK_MONOTONIC) + us * 1000LL;

	while (now_ns(CLOCK_MONOTONIC) < end)
		;
}

static void sleep_us(long us)
{
	struct timespec ts = { us / 1000000, us % 1000000 * 1000 };

	while (nanosleep(&ts, &ts))
		;
}

static CUresult launch(const void *f)
{
	if (!f)
		return CUDA_ERROR_INVALID_VALUE;
	spin_us(env_long("FAKE_CUDA_LAUNCH_US", 20));
	return CUDA_SUCCESS;
}

static CUresult synchronize(void)
{
	sleep_us(env_long("FAKE_CUDA_SYNC_US", 5000));
	return CUDA_SUCCESS;
}

static void *new_handle(const char *name)
{
	struct fake_handle *h = calloc(1, sizeof(*h));

	if (h && name)
		strncpy(h->name, name, sizeof(h->name) - 1);
	return h;
}

CUresult cuInit(unsigned int Flags)
{
	sleep_us(env_long("FAKE_CUDA_INIT_MS", 300) * 1000);
	return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
	if (!hfunc || !name)
		return CUDA_ERROR_INVALID_VALUE;
	*hfunc = new_handle(name);
	return *hfunc ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
	if (!pKernel || !name)
		return CUDA_ERROR_INVALID_VALUE;
	*pKernel = new_handle(name);
	return *pKernel ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
	if (!pFunc || !kernel)
		return CUDA_ERROR_INVALID_VALUE;
	*pFunc = new_handle(((struct fake_handle *)kernel)->name);
	return *pFunc ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
			unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
			unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra)
{
	return launch(f);
}

CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
			     unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
			     unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra)
{
	return launch(f);
}

CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)
{
	return config ? launch(f) : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)
{
	return config ? launch(f) : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
	return launch(hGraphExec);
}

CUresult cuGraphLaunch_ptsz(CUgraphExec hGraph, CUstream hStream)
{
	return launch(hGraph);
}

CUresult cuCtxSynchronize(void)
{
	return synchronize();
}

CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
	return synchronize();
}

CUresult cuStreamSynchronize(CUstream hStream)
{
	return synchronize();
}

CUresult cuStreamSynchronize_ptsz(CUstream hStream)
{
	return synchronize();
}

CUresult cuEventSynchronize(CUevent hEvent)
{
	return synchronize();
}
