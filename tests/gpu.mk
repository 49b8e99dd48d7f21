# SPDX-License-Identifier: GPL-2.0
# Fixtures for tests/profilers/80-gpu.t: a stand-in CUDA driver (libcuda.so.1) and
# runtime (libcudart.so.12), in a directory of their own that only
# LD_LIBRARY_PATH points to, a program that dlopens the driver and one linked
# against the runtime.  Included by tests/Makefile (cwd tests/, B = build).  Where the
# CUDA toolkit's cuda.h is installed the library is also compiled against it,
# which checks the copied prototypes (workloads/gpu/cuda_api.h) against NVIDIA's.
GPU_SRC    := workloads/gpu
GPU_CUDA_H := $(wildcard /usr/local/cuda/include/cuda.h)

.PHONY: gpu gpu-check
all: gpu
gpu: $(B)/gpu/libcuda.so.1 $(B)/gpu/libcudart.so.12 $(B)/gpuapp $(B)/gpurtapp $(if $(GPU_CUDA_H),gpu-check)

$(B)/gpu/libcuda.so.1: $(GPU_SRC)/fake_libcuda.c $(GPU_SRC)/cuda_api.h workloads/wl.h gpu.mk | $(B)
	@mkdir -p $(B)/gpu
	$(CC) $(WCFLAGS) -fPIC -shared -Wl,-soname,libcuda.so.1 -o $@ $<

# The runtime loads the driver with dlopen on its first call, as NVIDIA's does.
$(B)/gpu/libcudart.so.12: $(GPU_SRC)/fake_libcudart.c $(GPU_SRC)/cudart_api.h $(GPU_SRC)/cuda_api.h workloads/wl.h gpu.mk | $(B)
	@mkdir -p $(B)/gpu
	$(CC) $(WCFLAGS) -fPIC -shared -Wl,-soname,libcudart.so.12 -o $@ $< -ldl

# Linked as `nvcc --cudart shared` links: the runtime is found at run time through LD_LIBRARY_PATH.
$(B)/gpurtapp: $(GPU_SRC)/gpurtapp.c $(GPU_SRC)/cudart_api.h $(GPU_SRC)/cuda_api.h workloads/wl.h $(B)/gpu/libcudart.so.12 gpu.mk | $(B)
	$(CC) $(WCFLAGS) -o $@ $< -L$(B)/gpu -l:libcudart.so.12

$(B)/gpuapp: $(GPU_SRC)/gpuapp.c $(GPU_SRC)/cuda_api.h gpu.mk | $(B)
	$(CC) $(WCFLAGS) -o $@ $< -ldl

# Compile only: the prototypes must agree with cuda.h's (a mismatch is an error).
gpu-check: $(GPU_SRC)/fake_libcuda.c $(GPU_SRC)/fake_libcudart.c $(GPU_SRC)/cuda_api.h $(GPU_SRC)/cudart_api.h
	$(CC) -fsyntax-only -Wall -Werror -DFAKE_CUDA_CHECK -I$(dir $(GPU_CUDA_H)) $(GPU_SRC)/fake_libcuda.c
	$(CC) -fsyntax-only -Wall -Werror -DFAKE_CUDA_CHECK -I$(dir $(GPU_CUDA_H)) $(GPU_SRC)/fake_libcudart.c
