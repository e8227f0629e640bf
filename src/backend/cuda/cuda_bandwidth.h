/*
 * cuda_bandwidth.h — what doctor measures on a CUDA device, as plain C (no
 * CUDA types), for backend/registry.c: link bandwidth from pinned and
 * pageable host memory, device memory bandwidth, the prefill matmul's rate
 * and the cost of one op. Implemented in cuda/bandwidth.cu and cuda/flops.cu.
 *
 * Only registry.c includes this, and only when the CUDA backend is built.
 * Each call selects `device`, allocates what it needs, frees it and
 * restores the caller's current device. Thread-safe (CUDA runtime is).
 */
#ifndef SW_BACKEND_CUDA_BANDWIDTH_H
#define SW_BACKEND_CUDA_BANDWIDTH_H

#include <stdint.h>

#include "spillway.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Copies of up to `bytes` (capped at a quarter of the device's free memory,
 * rounded down to whole MiB), best of a few after a warm-up:
 *   *pinned_Bps      host -> device from cudaMallocHost memory
 *   *pageable_Bps    host -> device from malloc memory
 *   *device_mem_Bps  device -> device, counting bytes read plus written
 * All three are 0 on failure. Errors: SW_ERR_ARG, SW_ERR_NO_DEVICE (no
 * such device), SW_ERR_OOM_DEVICE (under 1 MiB free for the test; names
 * the device and the free memory), SW_ERR_OOM_HOST (host buffers),
 * SW_ERR_DEVICE (any CUDA failure, with the call and file:line). */
sw_status cuda_measure_h2d(int device, uint64_t bytes, double *pinned_Bps,
                           double *pageable_Bps, double *device_mem_Bps);

/* The rate of the backend's own prefill matmul (ck_gemm: tensor cores,
 * TF32x3) on `device`, in flop/s: a 4096 x 4096 bf16 weight times 512
 * tokens, best of a few. *flops is 0 on failure.
 * Errors: SW_ERR_ARG, SW_ERR_NO_DEVICE, SW_ERR_OOM_HOST, SW_ERR_DEVICE. */
sw_status cuda_measure_flops(int device, double *flops);

/* Seconds per op of back-to-back launches of an empty kernel on one
 * stream, host submission included (the best of a few runs): the least an
 * op costs, which bounds a small model's decode. *op_s is 0 on failure.
 * Errors: SW_ERR_ARG, SW_ERR_NO_DEVICE, SW_ERR_DEVICE. */
sw_status cuda_measure_launch(int device, double *op_s);

/* The backend's decode matvec (ck_matvec, one token) over about `bytes` of
 * weights (capped at a quarter of free memory) of each decode type
 * (type_decode_type(i)), in weight bytes per second, best of a few: the
 * rates the planner divides a resident or streamed layer's bytes of each
 * type by. All 0 on failure. Errors: SW_ERR_ARG, SW_ERR_NO_DEVICE,
 * SW_ERR_OOM_HOST, SW_ERR_DEVICE. */
sw_status cuda_measure_decode(int device, uint64_t bytes,
                              double Bps[SW_DOCTOR_DECODE_TYPES]);

#ifdef __cplusplus
}
#endif

#endif
