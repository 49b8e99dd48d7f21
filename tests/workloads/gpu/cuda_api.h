/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The part of the CUDA driver API the GPU tests use, copied from NVIDIA's
 * cuda.h of CUDA 13.0 (/usr/local/cuda/include/cuda.h, CUDA_VERSION 13000):
 * the handle typedefs (lines 282-302), CUresult's first values (2511-2535),
 * CUlaunchConfig (2349-2360) and the prototypes of cuInit (5207),
 * cuCtxSynchronize (6621), cuCtxSynchronize_v2 (6653), cuModuleGetFunction
 * (7532), cuLibraryGetKernel (8048), cuKernelGetFunction (8136),
 * cuStreamSynchronize (15795), cuEventSynchronize (16102), cuLaunchKernel
 * (17537), cuLaunchKernelEx (17820), cuGraphLaunch (21075) and the
 * per-thread-default-stream forms (_ptsz, 25744-25797), whose exported names
 * were checked against the dynamic symbols of the toolkit's stub libcuda.so.
 * Copied so that the tests build without the toolkit; where cuda.h is
 * installed, tests/gpu.mk builds the stand-in library against it as well
 * (FAKE_CUDA_CHECK), so that the compiler checks these prototypes against
 * NVIDIA's.  CUlaunchAttribute is left incomplete: only a pointer to it is used.
 */
#ifndef CUDA_API_H
#define CUDA_API_H

#ifdef FAKE_CUDA_CHECK
#include <cuda.h>
#else
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUlib_st *CUlibrary;
typedef struct CUkern_st *CUkernel;
typedef struct CUevent_st *CUevent;
typedef struct CUstream_st *CUstream;
typedef struct CUgraphExec_st *CUgraphExec;

typedef enum cudaError_enum {
	CUDA_SUCCESS = 0,
	CUDA_ERROR_INVALID_VALUE = 1,
	CUDA_ERROR_NOT_INITIALIZED = 3,
} CUresult;

typedef struct CUlaunchAttribute_st CUlaunchAttribute;

typedef struct CUlaunchConfig_st {
	unsigned int gridDimX;
	unsigned int gridDimY;
	unsigned int gridDimZ;
	unsigned int blockDimX;
	unsigned int blockDimY;
	unsigned int blockDimZ;
	unsigned int sharedMemBytes;
	CUstream hStream;
	CUlaunchAttribute *attrs;
	unsigned int numAttrs;
} CUlaunchConfig;
#endif

/* The exported names, as the driver exports them (cuda.h's #defines map _ptsz only under per-thread streams). */
CUresult cuInit(unsigned int Flags);
CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name);
CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name);
CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel);
CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
			unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
			unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra);
CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
			     unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
			     unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra);
CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra);
CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra);
CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream);
CUresult cuGraphLaunch_ptsz(CUgraphExec hGraph, CUstream hStream);
CUresult cuCtxSynchronize(void);
CUresult cuCtxSynchronize_v2(CUcontext ctx);
CUresult cuStreamSynchronize(CUstream hStream);
CUresult cuStreamSynchronize_ptsz(CUstream hStream);
CUresult cuEventSynchronize(CUevent hEvent);

#endif /* CUDA_API_H */
