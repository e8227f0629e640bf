/*
 * rowdot.h — the warp-per-row dot product of the decode kernels (CUDA
 * only): a row of a weight in its stored type (qblock.h) against f32
 * activations, shared by matvec.cu and moe.cu so a row's sum is formed
 * the same way wherever it is read.
 */
#ifndef SW_BACKEND_CUDA_ROWDOT_H
#define SW_BACKEND_CUDA_ROWDOT_H

#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/qblock.h"

#define MV_WARPS 8 /* rows per block of 256 threads */

/* Adds w · x[e0 .. e0+3, e1 .. e1+3] to acc: two 16-byte loads (x is
 * 16-byte aligned, checked at submit, and runs start at multiples of 4). */
static __device__ __forceinline__ float dot8(const float w[8], const float *x, uint64_t e0,
                                             uint64_t e1, float acc) {
    const float4 a = __ldg((const float4 *)(x + e0)), b = __ldg((const float4 *)(x + e1));
    acc = fmaf(w[0], a.x, acc);
    acc = fmaf(w[1], a.y, acc);
    acc = fmaf(w[2], a.z, acc);
    acc = fmaf(w[3], a.w, acc);
    acc = fmaf(w[4], b.x, acc);
    acc = fmaf(w[5], b.y, acc);
    acc = fmaf(w[6], b.z, acc);
    return fmaf(w[7], b.w, acc);
}

static __device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* The partial sums of one lane over row `row` of w, for NT tokens. */
template <uint32_t TYPE, int NT>
static __device__ __forceinline__ void row_partial(const ck_weight w, uint64_t row,
                                                   const float *x, uint32_t n_tokens,
                                                   int lane, float acc[NT]) {
    uint32_t elems, bytes;
    qb_geometry(TYPE, &elems, &bytes);
    const uint8_t *r = w.data + row * w.row_bytes;
    const uint64_t n_slots = w.ne0 / 8, spb = elems / 8;
    /* unrolled so that several slots' loads are in flight per lane */
#pragma unroll 4
    for (uint64_t g = (uint64_t)lane; g < n_slots; g += 32) {
        float wt[8];
        uint32_t a, c;
        const uint64_t blk = g / spb;
        qb_slot(TYPE, r + blk * bytes, (uint32_t)(g % spb), wt, &a, &c);
        const uint64_t e0 = blk * elems + a, e1 = blk * elems + c;
#pragma unroll
        for (int t = 0; t < NT; t++)
            if (t < (int)n_tokens)
                acc[t] = dot8(wt, x + (uint64_t)t * w.ne0, e0, e1, acc[t]);
    }
#pragma unroll
    for (int t = 0; t < NT; t++)
        acc[t] = warp_sum(acc[t]);
}

#endif
