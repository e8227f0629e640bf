/*
 * cuda_backend.h — the CUDA backend's constructor, as plain C (no CUDA
 * types), for backend/registry.c. Implemented in cuda/cuda_backend.cu.
 */
#ifndef SW_BACKEND_CUDA_BACKEND_H
#define SW_BACKEND_CUDA_BACKEND_H

#include "backend/backend.h"
#include "backend/backend_params.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An NVIDIA GPU (the first visible one) behind backend.h: p->capacity_bytes
 * is the budget (0: the free memory at creation); exact_dots makes every
 * matmul the f32 SIMT kernels (no tensor cores, the same bits for any
 * batch); per_op hides the block entry. Errors: SW_ERR_NO_DEVICE (no
 * driver, an old driver, no device: what to do), SW_ERR_ARG (a bad
 * SPILLWAY_CUDA_GEMM), SW_ERR_DEVICE, SW_ERR_OOM_HOST. */
sw_status backend_cuda_create(const backend_params *p, backend **out);

#ifdef __cplusplus
}
#endif

#endif
