/*
 * attention.cu — the KV cache and attention over it, for a batch of tokens
 * of any sequences (each attends only to its own sequence's rows).
 *
 * KV append: one thread per element, rounded to the cache type with
 * hd.h's nearest-even conversions (the cpu backend's bits).
 *
 * Attention: one block of AT_WARPS warps per (query head, token). The
 * query's visible keys (kmath.h: causal, sliding window, ring) are dealt
 * to the warps in turn; a warp scores a key (a dot over the head, lanes
 * across dims, one shuffle sum), soft-caps it, and folds it into its own
 * online softmax: running max, running sum, and the weighted value rows
 * in the lanes' registers. The warps' partial results are joined at the
 * end. No context x context matrix and no score vector ever exists, so
 * any context length runs in the same registers and shared memory; the
 * warps work on keys in parallel, so a decode step's few blocks still keep
 * many loads in flight. Softmax in f32; the result differs from the cpu
 * backend's by rounding only (exp order, sums).
 */
#include <cuda_fp16.h>

#include "backend/cuda/cuda_common.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/kmath.h"
#include "backend/cuda/qblock.h"

#define AT_WARPS 8
#define AT_THREADS (32 * AT_WARPS)
#define AT_LANE_DIMS (CK_ATTN_MAX_HD / 32) /* dims a lane holds: d = lane + 32 j */

template <uint32_t KVT>
static __device__ __forceinline__ float kv_load(const void *base, uint64_t i) {
    if (KVT == QB_F32)
        return ((const float *)base)[i];
    const unsigned short u = ((const unsigned short *)base)[i];
    if (KVT == QB_F16)
        return __half2float(__ushort_as_half(u));
    return __uint_as_float((uint32_t)u << 16);
}

template <uint32_t KVT>
static __device__ __forceinline__ void kv_store(void *base, uint64_t i, float f) {
    if (KVT == QB_F32)
        ((float *)base)[i] = f;
    else
        ((unsigned short *)base)[i] =
            (unsigned short)(KVT == QB_F16 ? hd_to_f16(f) : hd_to_bf16(f));
}

template <uint32_t KVT>
__global__ void k_kv_append(const ck_kv kv, const float *k, const float *v, const int32_t *pos,
                            const int32_t *seq, uint32_t n_tokens) {
    const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (uint64_t)n_tokens * kv.row_elems)
        return;
    const uint32_t t = (uint32_t)(i / kv.row_elems), e = (uint32_t)(i % kv.row_elems);
    if (!km_kv_valid(seq[t], pos[t], kv.n_seq, kv.rows, kv.ring))
        return;
    const uint64_t at = km_kv_row(seq[t], pos[t], kv.rows, kv.ring) * kv.row_elems + e;
    kv_store<KVT>(kv.k, at, k[i]);
    kv_store<KVT>(kv.v, at, v[i]);
}

static __device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* Each warp takes keys w, w + AT_WARPS, ... of the query's range in order,
 * with its own running max, sum and output (lane l holds dims l + 32 j);
 * the warps' partial softmaxes are then joined through shared memory. */
template <uint32_t KVT>
__global__ void __launch_bounds__(AT_THREADS)
k_attention(const ck_kv kv, const float *q, float *out, const int32_t *pos, const int32_t *seq,
            uint32_t n_head, uint32_t n_head_kv, uint32_t hd, uint32_t window, float softcap) {
    __shared__ float wm[AT_WARPS], wl[AT_WARPS];
    __shared__ float wo[AT_WARPS][CK_ATTN_MAX_HD];
    const uint32_t h = blockIdx.x, t = blockIdx.y;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const uint64_t qi = ((uint64_t)t * n_head + h) * hd;
    const int32_t p = pos[t], sq = seq[t];
    int64_t first = 0, n = 0;
    if (km_kv_valid(sq, p, kv.n_seq, kv.rows, kv.ring))
        n = km_attn_range(p, window, kv.ring, &first);
    const uint64_t kv_off = (uint64_t)(h / (n_head / n_head_kv)) * hd;
    float qr[AT_LANE_DIMS], o[AT_LANE_DIMS];
#pragma unroll
    for (int j = 0; j < AT_LANE_DIMS; j++) {
        const uint32_t d = (uint32_t)lane + 32u * j;
        qr[j] = d < hd ? q[qi + d] : 0.0f;
        o[j] = 0.0f;
    }
    float m = -INFINITY, l = 0.0f;
    for (int64_t i = warp; i < n; i += AT_WARPS) {
        const uint64_t base = km_kv_row(sq, (int32_t)(first + i), kv.rows, kv.ring) *
                              kv.row_elems + kv_off;
        float s = 0.0f;
#pragma unroll
        for (int j = 0; j < AT_LANE_DIMS; j++) {
            const uint32_t d = (uint32_t)lane + 32u * j;
            if (d < hd)
                s = fmaf(qr[j], kv_load<KVT>(kv.k, base + d), s);
        }
        s = warp_sum(s);
        if (softcap != 0.0f)
            s = km_softcap(s, softcap);
        const float scale = km_softmax_rescale(&m, s);
        const float e = expf(s - m);
        l = l * scale + e;
#pragma unroll
        for (int j = 0; j < AT_LANE_DIMS; j++) {
            const uint32_t d = (uint32_t)lane + 32u * j;
            if (d < hd)
                o[j] = fmaf(e, kv_load<KVT>(kv.v, base + d), o[j] * scale);
        }
    }
    if (lane == 0) {
        wm[warp] = m;
        wl[warp] = l;
    }
#pragma unroll
    for (int j = 0; j < AT_LANE_DIMS; j++) {
        const uint32_t d = (uint32_t)lane + 32u * j;
        if (d < hd)
            wo[warp][d] = o[j];
    }
    __syncthreads();
    float M = -INFINITY, L = 0.0f, f[AT_WARPS];
#pragma unroll
    for (int w = 0; w < AT_WARPS; w++)
        M = fmaxf(M, wm[w]);
#pragma unroll
    for (int w = 0; w < AT_WARPS; w++) {
        f[w] = wm[w] == -INFINITY ? 0.0f : expf(wm[w] - M);
        L += wl[w] * f[w];
    }
    for (uint32_t d = threadIdx.x; d < hd; d += AT_THREADS) {
        float acc = 0.0f;
#pragma unroll
        for (int w = 0; w < AT_WARPS; w++)
            acc += wo[w][d] * f[w];
        out[qi + d] = n > 0 ? acc / L : 0.0f;
    }
}

sw_status ck_kv_append(cudaStream_t s, const ck_kv *kv, const float *k, const float *v,
                       const int32_t *pos, const int32_t *seq, uint32_t n_tokens) {
    const uint64_t n = (uint64_t)n_tokens * kv->row_elems;
    if (n == 0)
        return SW_OK;
    const unsigned blocks = (unsigned)((n + 255) / 256);
    switch (kv->type) {
    case QB_F32: k_kv_append<QB_F32><<<blocks, 256, 0, s>>>(*kv, k, v, pos, seq, n_tokens); break;
    case QB_F16: k_kv_append<QB_F16><<<blocks, 256, 0, s>>>(*kv, k, v, pos, seq, n_tokens); break;
    case QB_BF16:
        k_kv_append<QB_BF16><<<blocks, 256, 0, s>>>(*kv, k, v, pos, seq, n_tokens);
        break;
    default: return sw_errorf(SW_ERR_UNSUPPORTED, "cuda kv append: cache type %u", kv->type);
    }
    return SW_CUDA_CHECK(cudaGetLastError());
}

sw_status ck_attention(cudaStream_t s, const ck_kv *kv, const float *q, float *out,
                       const int32_t *pos, const int32_t *seq, uint32_t n_tokens,
                       uint32_t n_head, uint32_t n_head_kv, uint32_t head_dim,
                       uint32_t window, float softcap) {
    if (n_tokens == 0 || n_head == 0)
        return SW_OK;
    if (head_dim == 0 || head_dim > CK_ATTN_MAX_HD || n_head_kv == 0 || n_head % n_head_kv)
        return sw_errorf(SW_ERR_UNSUPPORTED, "cuda attention: head_dim %u (at most %d), %u "
                         "heads over %u kv heads", head_dim, CK_ATTN_MAX_HD, n_head, n_head_kv);
    dim3 grid(n_head, n_tokens);
    switch (kv->type) {
    case QB_F32:
        k_attention<QB_F32><<<grid, AT_THREADS, 0, s>>>(*kv, q, out, pos, seq, n_head,
                                                          n_head_kv, head_dim, window, softcap);
        break;
    case QB_F16:
        k_attention<QB_F16><<<grid, AT_THREADS, 0, s>>>(*kv, q, out, pos, seq, n_head,
                                                          n_head_kv, head_dim, window, softcap);
        break;
    case QB_BF16:
        k_attention<QB_BF16><<<grid, AT_THREADS, 0, s>>>(*kv, q, out, pos, seq, n_head,
                                                           n_head_kv, head_dim, window, softcap);
        break;
    default: return sw_errorf(SW_ERR_UNSUPPORTED, "cuda attention: cache type %u", kv->type);
    }
    return SW_CUDA_CHECK(cudaGetLastError());
}
