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
 * warps work on keys in parallel. Softmax in f32; the result differs from
 * the cpu backend's by rounding only (exp order, sums).
 *
 * Flash-decoding: a decode step has only n_head x n_tokens such blocks
 * (8 to 64), too few for a GPU's 100+ multiprocessors once the context is
 * long. Then each query's keys are cut into S contiguous parts
 * (kmath.h's km_attn_split), one block each (grid z), which leave their
 * partial max, sum and weighted values in the backend's scratch; a second
 * kernel joins the S parts (km_softmax_join). S = 1 is the kernel above,
 * unchanged.
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
/* The partial results of the S parts of every (token, head): part
 * ((t * n_head + h) * S + z) has its max m, sum l and hd weighted values o
 * (not yet divided by l). */
typedef struct at_parts {
    float *m, *l, *o;
    uint32_t n;        /* S; 1: no parts, the kernel writes out itself */
} at_parts;

template <uint32_t KVT>
__global__ void __launch_bounds__(AT_THREADS)
k_attention(const ck_kv kv, const float *q, float *out, const int32_t *pos, const int32_t *seq,
            uint32_t n_head, uint32_t n_head_kv, uint32_t hd, uint32_t window, float softcap,
            const at_parts parts) {
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
    int64_t i0 = 0, i1 = n;
    km_attn_split(n, parts.n, blockIdx.z, AT_WARPS, &i0, &i1);
    for (int64_t i = i0 + warp; i < i1; i += AT_WARPS) {
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
    const uint64_t part = ((uint64_t)t * n_head + h) * parts.n + blockIdx.z;
    if (parts.n > 1 && threadIdx.x == 0) {
        parts.m[part] = M;
        parts.l[part] = L;
    }
    for (uint32_t d = threadIdx.x; d < hd; d += AT_THREADS) {
        float acc = 0.0f;
#pragma unroll
        for (int w = 0; w < AT_WARPS; w++)
            acc += wo[w][d] * f[w];
        if (parts.n > 1)
            parts.o[part * hd + d] = acc;
        else
            out[qi + d] = n > 0 ? acc / L : 0.0f;
    }
}

/* out = the join of each (token, head)'s S parts; 0 where no key was
 * visible (every part empty). */
__global__ void k_attention_join(const at_parts parts, float *out, uint32_t n_head, uint32_t hd) {
    const uint32_t h = blockIdx.x, t = blockIdx.y, S = parts.n;
    const uint64_t first = ((uint64_t)t * n_head + h) * S;
    float f[CK_ATTN_MAX_SPLITS];
    const float L = km_softmax_join(parts.m + first, parts.l + first, S, f);
    for (uint32_t d = threadIdx.x; d < hd; d += blockDim.x) {
        float acc = 0.0f;
        for (uint32_t z = 0; z < S; z++)
            acc = hd_add(acc, hd_mul(parts.o[(first + z) * hd + d], f[z]));
        out[((uint64_t)t * n_head + h) * hd + d] = L > 0.0f ? hd_div(acc, L) : 0.0f;
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

/* How many parts each query's keys are cut into: enough blocks for two
 * per multiprocessor, at least 256 keys a part (the keys a query can see:
 * the cache's rows, the window, the caller's bound), and what the scratch
 * holds. */
static uint32_t split_count(const ck_attn_split *sp, const ck_kv *kv, uint32_t n_tokens,
                            uint32_t n_head, uint32_t hd, uint32_t window, uint32_t max_keys) {
    if (sp == NULL || sp->scratch == NULL || sp->n_sm == 0)
        return 1;
    const uint64_t blocks = (uint64_t)n_tokens * n_head;
    uint64_t keys = kv->ring ? kv->ring : kv->rows;
    keys = window && window < keys ? window : keys;
    keys = max_keys && max_keys < keys ? max_keys : keys;
    uint64_t S = (2ull * sp->n_sm + blocks - 1) / blocks;
    S = S < keys / 256 ? S : keys / 256;
    S = S < CK_ATTN_MAX_SPLITS ? S : CK_ATTN_MAX_SPLITS;
    const uint64_t fit = sp->bytes / (blocks * (hd + 2) * sizeof(float));
    S = S < fit ? S : fit;
    return S < 2 ? 1 : (uint32_t)S;
}

sw_status ck_attention(cudaStream_t s, const ck_kv *kv, const float *q, float *out,
                       const int32_t *pos, const int32_t *seq, uint32_t n_tokens,
                       uint32_t n_head, uint32_t n_head_kv, uint32_t head_dim,
                       uint32_t window, float softcap, uint32_t max_keys,
                       const ck_attn_split *sp) {
    if (n_tokens == 0 || n_head == 0)
        return SW_OK;
    if (head_dim == 0 || head_dim > CK_ATTN_MAX_HD || n_head_kv == 0 || n_head % n_head_kv)
        return sw_errorf(SW_ERR_UNSUPPORTED, "cuda attention: head_dim %u (at most %d), %u "
                         "heads over %u kv heads", head_dim, CK_ATTN_MAX_HD, n_head, n_head_kv);
    at_parts parts = {NULL, NULL, NULL, split_count(sp, kv, n_tokens, n_head, head_dim, window,
                                                      max_keys)};
    if (parts.n > 1) {
        const uint64_t np = (uint64_t)n_tokens * n_head * parts.n;
        parts.m = sp->scratch;
        parts.l = parts.m + np;
        parts.o = parts.l + np;
    }
    dim3 grid(n_head, n_tokens, parts.n);
    switch (kv->type) {
    case QB_F32:
        k_attention<QB_F32><<<grid, AT_THREADS, 0, s>>>(*kv, q, out, pos, seq, n_head, n_head_kv,
                                                          head_dim, window, softcap, parts);
        break;
    case QB_F16:
        k_attention<QB_F16><<<grid, AT_THREADS, 0, s>>>(*kv, q, out, pos, seq, n_head, n_head_kv,
                                                          head_dim, window, softcap, parts);
        break;
    case QB_BF16:
        k_attention<QB_BF16><<<grid, AT_THREADS, 0, s>>>(*kv, q, out, pos, seq, n_head,
                                                           n_head_kv, head_dim, window, softcap,
                                                           parts);
        break;
    default: return sw_errorf(SW_ERR_UNSUPPORTED, "cuda attention: cache type %u", kv->type);
    }
    SW_CUDA_TRY(cudaGetLastError());
    if (parts.n > 1)
        k_attention_join<<<dim3(n_head, n_tokens), 128, 0, s>>>(parts, out, n_head, head_dim);
    return SW_CUDA_CHECK(cudaGetLastError());
}
