/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The part of the CUDA runtime API the GPU tests use, copied from NVIDIA's
 * headers of CUDA 13.0 (/usr/local/cuda-13.0/include, CUDART_VERSION 13000):
 *  - driver_types.h: cudaError's first values (199-217), the handle typedefs
 *    cudaStream_t (2998), cudaEvent_t (3003), cudaKernel_t (3048, a CUkernel),
 *    cudaGraphExec_t (3555), cudaLaunchConfig_t (4018-4025);
 *  - vector_types.h: dim3 (576, 595);
 *  - cuda_runtime_api.h: cudaDeviceSynchronize (352), cudaSetDevice (1659),
 *    cudaStreamSynchronize (2320), cudaEventSynchronize (2951),
 *    cudaLaunchKernel (3766), cudaLaunchKernelExC (3829), cudaGraphLaunch
 *    (12660), and the _ptsz names per-thread default streams use (185-227);
 *  - crt/host_runtime.h: __cudaRegisterFunction (246), which nvcc's code calls
 *    at start for each kernel (host stub, device name);
 *  - crt/device_functions.h: __cudaGetKernel and __cudaLaunchKernel(_ptsz)
 *    (2930-2948), which nvcc 13's <<<>>> calls (crt/host_runtime.h:140).
 * The exported names were checked against libcudart.so.13's dynamic symbols.
 * The same prototypes are public in the Rust bindings generated from these
 * headers, e.g. https://docs.rs/singe-cuda-sys/latest/singe_cuda_sys/runtime/fn.cudaLaunchKernelExC.html
 * and .../fn.cudaLaunchKernel.html.  Where the toolkit is installed,
 * tests/gpu.mk compiles the stand-in runtime against cuda_runtime_api.h as
 * well (FAKE_CUDA_CHECK): the compiler checks what C can see of these (the
 * __cuda* ones are declared in C++-only headers).
 */
#ifndef CUDART_API_H
#define CUDART_API_H

#include <stddef.h>
#include "cuda_api.h"

#ifdef FAKE_CUDA_CHECK
#include <cuda_runtime_api.h>
#else
typedef enum cudaError {
	cudaSuccess = 0,
	cudaErrorInvalidValue = 1,
	cudaErrorInitializationError = 3,
} cudaError_t;

typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;
typedef struct CUkern_st *cudaKernel_t;
typedef struct CUgraphExec_st *cudaGraphExec_t;

struct dim3 {
	unsigned int x, y, z;
};
typedef struct dim3 dim3;

typedef struct cudaLaunchAttribute_st cudaLaunchAttribute;

typedef struct cudaLaunchConfig_st {
	dim3 gridDim;
	dim3 blockDim;
	size_t dynamicSmemBytes;
	cudaStream_t stream;
	cudaLaunchAttribute *attrs;
	unsigned int numAttrs;
} cudaLaunchConfig_t;
#endif

typedef struct uint3 uint3;

cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
			     cudaStream_t stream);
cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
				  cudaStream_t stream);
cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *config, const void *func, void **args);
cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *config, const void *func, void **args);
cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream);
cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream);
void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun, const char *deviceName,
			    int thread_limit, uint3 *tid, uint3 *bid, dim3 *bDim, dim3 *gDim, int *wSize);
cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *hostFun);
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
			       cudaStream_t stream);
cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
				    size_t sharedMem, cudaStream_t stream);

#endif /* CUDART_API_H */
