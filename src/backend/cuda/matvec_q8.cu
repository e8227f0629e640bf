/*
 * matvec_q8.cu — the integer decode path: the default numerics of the
 * decode matmuls over the integer weight types (Q4_0, Q5_0, Q8_0, Q4_1,
 * Q5_1, Q4_K, Q5_K, Q6_K), the cpu backend's 8-bit activations and its
 * canonical integer dot (q8dot.h), so a decode step's matmuls give the cpu
 * default's bits. Exact mode (--cpu-dots f32) and the other types keep the
 * f32 kernels of matvec.cu.
 *
 * Two launches per matmul input:
 *   k_q8_quant  one warp per activation block (32 or 256 elements): the
 *               block's max and sums across the warp (exact in any
 *               order), each q as qact.c rounds it, into the backend's
 *               scratch (MV_MAX_TOKENS rows of q8_row_stride bytes);
 *   k_mv_q8     two rows per warp, one canonical-dot chain per thread
 *               (q8_chain: 16 chains a row; for Q4_1/Q5_1 the 8 threads
 *               of set 0 also run the mins' chains, q8_chain_min),
 *               weights read in place once for all tokens with dp4a; the
 *               accumulators join in q8_r8's (q8_r8m's) order through
 *               shuffles.
 * Several matrices over one input (Q, K, V; gate and up) share its
 * quantized rows.
 */
#include "backend/cuda/cuda_common.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/kmath.h"
#include "backend/cuda/q8dot.h"

#define Q8_WARPS 8                 /* warps per block of the kernels here */
#define Q8_ROWS (2 * Q8_WARPS)     /* output rows per block of k_mv_q8 */

uint64_t ck_q8_scratch_bytes(uint64_t max_row_elems) {
    return (uint64_t)MV_MAX_TOKENS * q8_row_stride(32, max_row_elems);
}

bool ck_q8_reads(const ck_q8 *q, const ck_weight *w, uint32_t n_tokens) {
    uint32_t ab;
    return q != NULL && q->scratch != NULL && n_tokens >= 1 && n_tokens <= MV_MAX_TOKENS &&
           q8_type(w->type, &ab) && w->ne0 <= q->max_row;
}

/* ---- activations -------------------------------------------------------------- */

template <uint32_t BLK>
__global__ void __launch_bounds__(32 * Q8_WARPS)
k_q8_quant(const float *x, uint64_t n, uint32_t n_tokens, uint8_t *dst, uint64_t stride) {
    constexpr uint32_t PER = BLK / 32; /* elements per lane */
    const int lane = threadIdx.x & 31;
    const uint64_t nb = n / BLK;
    const uint64_t g = (uint64_t)blockIdx.x * Q8_WARPS + (threadIdx.x >> 5);
    if (g >= nb * n_tokens)
        return;
    const uint64_t t = g / nb, b = g % nb;
    const float *xb = x + t * n + b * BLK;
    uint8_t *row = dst + t * stride;
    float v[PER], amax = 0.0f;
    int finite = 1;
#pragma unroll
    for (uint32_t j = 0; j < PER; j++) {
        v[j] = xb[32 * j + lane];
        const float a = q8_fabs(v[j]);
        finite &= q8_finite(a);
        amax = a > amax ? a : amax;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float other = __shfl_xor_sync(0xffffffffu, amax, o);
        amax = other > amax ? other : amax;
    }
    finite = __all_sync(0xffffffffu, finite);
    float id;
    const float d = q8_block_scale(amax, finite, &id);
    if (lane == 0)
        ((float *)(void *)(row + n))[b] = d;
    int16_t *bs = (int16_t *)(void *)(row + n + 4 * nb);
#pragma unroll
    for (uint32_t j = 0; j < PER; j++) {
        const int q = id == 0.0f ? 0 : q8_round(v[j], id);
        ((int8_t *)row)[b * BLK + 32 * j + lane] = (int8_t)q;
        int s = q; /* the 16 lanes of one group of 16 elements */
#pragma unroll
        for (int o = 8; o > 0; o >>= 1)
            s += __shfl_xor_sync(0xffffffffu, s, o);
        if ((lane & 15) == 0)
            bs[(b * BLK + 32 * j + lane) / 16] = (int16_t)s;
    }
}

/* n_tokens rows of x (n elements) into the scratch, per `blk`. */
static sw_status quantize(cudaStream_t s, const ck_q8 *q, const float *x, uint64_t n,
                          uint32_t n_tokens, uint32_t blk) {
    const uint64_t warps = n / blk * n_tokens, st = q8_row_stride(blk, n);
    const unsigned grid = (unsigned)((warps + Q8_WARPS - 1) / Q8_WARPS);
    if (blk == 32)
        k_q8_quant<32><<<grid, 32 * Q8_WARPS, 0, s>>>(x, n, n_tokens, q->scratch, st);
    else
        k_q8_quant<256><<<grid, 32 * Q8_WARPS, 0, s>>>(x, n, n_tokens, q->scratch, st);
    return SW_CUDA_CHECK(cudaGetLastError());
}

/* ---- products ------------------------------------------------------------------- */

/* The dot of row `row` of w with NT quantized tokens on the 16 threads of
 * one half-warp (chain = their index): every thread gets the chain's
 * accumulators, and thread 0 of the half the joined results. */
template <uint32_t TYPE, int NT, bool FINE>
static __device__ __forceinline__ void row_q8(const ck_weight w, uint64_t row,
                                              const uint8_t *xq, uint64_t xs, uint32_t chain,
                                              float out[NT]) {
    const uint8_t *r = w.data + row * w.row_bytes;
    q8_chain(TYPE, FINE, r, xq, xs, NT, w.ne0, chain / 8, chain % 8, out);
    float am[NT]; /* the mins' lane chain%8 on set 0's threads; else unused */
    if (q8_has_min(TYPE) && chain < 8)
        q8_chain_min(TYPE, r, xq, xs, NT, w.ne0, chain, am);
    /* q8_r8 through shuffles within the half-warp: s_l = a0 + a1 (chains
     * l, 8 + l; for the min types (a0 + a1) + am), t_j = s_j + s_j+4,
     * then (t0 + t2) + (t1 + t3). */
#pragma unroll
    for (int t = 0; t < NT; t++) {
        float v = out[t];
        v = hd_add(v, __shfl_down_sync(0xffffffffu, v, 8, 16));
        if (q8_has_min(TYPE) && chain < 8)
            v = hd_add(v, am[t]);
        v = hd_add(v, __shfl_down_sync(0xffffffffu, v, 4, 16));
        v = hd_add(v, __shfl_down_sync(0xffffffffu, v, 2, 16));
        out[t] = hd_add(v, __shfl_down_sync(0xffffffffu, v, 1, 16));
    }
}

/* Where a thread's row is: rows past the end still join the shuffles
 * (every lane of the warp must), on row 0, and write nothing. */
static __device__ __forceinline__ uint64_t my_row(uint32_t *chain) {
    *chain = threadIdx.x & 15;
    return (uint64_t)blockIdx.x * Q8_ROWS + (threadIdx.x >> 4);
}

template <uint32_t TYPE, int NT, bool FINE>
__global__ void __launch_bounds__(32 * Q8_WARPS)
k_mv_q8(const ck_weight w, const uint8_t *xq, uint64_t xs, float *y, uint32_t n_tokens) {
    uint32_t chain;
    const uint64_t row = my_row(&chain);
    float acc[NT];
    row_q8<TYPE, NT, FINE>(w, row < w.ne1 ? row : 0, xq, xs, chain, acc);
    if (chain == 0 && row < w.ne1) {
#pragma unroll
        for (int t = 0; t < NT; t++)
            if (t < (int)n_tokens)
                y[(uint64_t)t * w.ne1 + row] = acc[t];
    }
}

/* Up to CK_MV_MULTI matrices over one input, rows concatenated. */
template <uint32_t TYPE, int NT>
__global__ void __launch_bounds__(32 * Q8_WARPS)
k_mv_q8_multi(const ck_mv_multi mm, const uint8_t *xq, uint64_t xs, uint32_t n_tokens) {
    uint32_t chain;
    uint64_t row = my_row(&chain);
    int m = 0;
    while (m < mm.n - 1 && row >= mm.w[m].ne1)
        row -= mm.w[m++].ne1;
    const bool live = row < mm.w[m].ne1;
    float acc[NT];
    row_q8<TYPE, NT, false>(mm.w[m], live ? row : 0, xq, xs, chain, acc);
    if (chain == 0 && live) {
#pragma unroll
        for (int t = 0; t < NT; t++)
            if (t < (int)n_tokens)
                mm.y[m][(uint64_t)t * mm.w[m].ne1 + row] = acc[t];
    }
}

/* Gate and up, GeGLU on the way out (the cpu's ops in their order). */
template <uint32_t TYPE, int NT>
__global__ void __launch_bounds__(32 * Q8_WARPS)
k_mv_q8_geglu(const ck_weight wg, const ck_weight wu, const uint8_t *xq, uint64_t xs,
              float *gate, uint32_t n_tokens) {
    uint32_t chain;
    const uint64_t row = my_row(&chain), r = row < wg.ne1 ? row : 0;
    float g[NT], u[NT];
    row_q8<TYPE, NT, false>(wg, r, xq, xs, chain, g);
    row_q8<TYPE, NT, false>(wu, r, xq, xs, chain, u);
    if (chain == 0 && row < wg.ne1) {
#pragma unroll
        for (int t = 0; t < NT; t++)
            if (t < (int)n_tokens)
                gate[(uint64_t)t * wg.ne1 + row] = km_geglu(g[t], u[t]);
    }
}

/* ---- dispatch ------------------------------------------------------------------------ */

#define Q8_TYPES(X) X(QB_Q4_0) X(QB_Q5_0) X(QB_Q8_0) X(QB_Q4_1) X(QB_Q5_1) X(QB_Q4_K) \
    X(QB_Q5_K) X(QB_Q6_K)

typedef void (*mv_fn)(const ck_weight, const uint8_t *, uint64_t, float *, uint32_t);
typedef void (*mvm_fn)(const ck_mv_multi, const uint8_t *, uint64_t, uint32_t);
typedef void (*mvg_fn)(const ck_weight, const ck_weight, const uint8_t *, uint64_t, float *,
                       uint32_t);

/* The kernels are instantiated for 1, 2, 4 and 8 tokens; a call runs the
 * smallest that holds n (the extra rows read are the scratch's, unused). */
#define Q8_PICK_NT(K, ...) \
    (n <= 1 ? K<__VA_ARGS__, 1> : n <= 2 ? K<__VA_ARGS__, 2> : n <= 4 ? K<__VA_ARGS__, 4> \
                                                                     : K<__VA_ARGS__, 8>)

static mv_fn pick(uint32_t type, bool fine, uint32_t n) {
    switch (type) {
#define CASE(T)                                                                        \
    case T:                                                                            \
        if (fine)                                                                      \
            return n <= 1 ? k_mv_q8<T, 1, true> : n <= 2 ? k_mv_q8<T, 2, true>         \
                 : n <= 4 ? k_mv_q8<T, 4, true> : k_mv_q8<T, 8, true>;                 \
        return n <= 1 ? k_mv_q8<T, 1, false> : n <= 2 ? k_mv_q8<T, 2, false>           \
             : n <= 4 ? k_mv_q8<T, 4, false> : k_mv_q8<T, 8, false>;
        Q8_TYPES(CASE)
#undef CASE
    default: return NULL;
    }
}

static mvm_fn pick_multi(uint32_t type, uint32_t n) {
    switch (type) {
#define CASE(T) case T: return Q8_PICK_NT(k_mv_q8_multi, T);
        Q8_TYPES(CASE)
#undef CASE
    default: return NULL;
    }
}

static mvg_fn pick_geglu(uint32_t type, uint32_t n) {
    switch (type) {
#define CASE(T) case T: return Q8_PICK_NT(k_mv_q8_geglu, T);
        Q8_TYPES(CASE)
#undef CASE
    default: return NULL;
    }
}

/* The activations' block for `type` (fine: per 32 for the K types too). */
static uint32_t act_block(uint32_t type, bool fine) {
    uint32_t ab = 0;
    (void)q8_type(type, &ab);
    return fine ? 32 : ab;
}

static unsigned grid_for(uint64_t rows) { return (unsigned)((rows + Q8_ROWS - 1) / Q8_ROWS); }

sw_status ck_matvec_q8(cudaStream_t s, const ck_q8 *q, const ck_weight *w, const float *x,
                       float *y, uint32_t n, bool fine) {
    mv_fn k = pick(w->type, fine, n);
    if (k == NULL || !ck_q8_reads(q, w, n))
        return sw_errorf(SW_ERR_UNSUPPORTED, "cuda q8 matvec: type %u, %llu columns, %u tokens",
                         w->type, (unsigned long long)w->ne0, n);
    if (w->ne1 == 0)
        return SW_OK;
    const uint32_t blk = act_block(w->type, fine);
    SW_TRY(quantize(s, q, x, w->ne0, n, blk));
    k<<<grid_for(w->ne1), 32 * Q8_WARPS, 0, s>>>(*w, q->scratch, q8_row_stride(blk, w->ne0), y,
                                                n);
    return SW_CUDA_CHECK(cudaGetLastError());
}

sw_status ck_matvec_multi_q8(cudaStream_t s, const ck_q8 *q, const ck_mv_multi *mm,
                             const float *x, uint32_t n) {
    uint64_t rows = 0;
    for (int m = 0; m < mm->n; m++) {
        if (mm->w[m].type != mm->w[0].type || mm->w[m].ne0 != mm->w[0].ne0 ||
            !ck_q8_reads(q, &mm->w[m], n))
            return sw_errorf(SW_ERR_UNSUPPORTED, "cuda q8 matvec: one launch needs one "
                             "integer type and row length");
        rows += mm->w[m].ne1;
    }
    mvm_fn k = mm->n >= 1 && mm->n <= CK_MV_MULTI ? pick_multi(mm->w[0].type, n) : NULL;
    if (k == NULL)
        return sw_errorf(SW_ERR_UNSUPPORTED, "cuda q8 matvec: %d matrices", mm->n);
    if (rows == 0)
        return SW_OK;
    const uint32_t blk = act_block(mm->w[0].type, false);
    SW_TRY(quantize(s, q, x, mm->w[0].ne0, n, blk));
    k<<<grid_for(rows), 32 * Q8_WARPS, 0, s>>>(*mm, q->scratch,
                                              q8_row_stride(blk, mm->w[0].ne0), n);
    return SW_CUDA_CHECK(cudaGetLastError());
}

sw_status ck_matvec_geglu_q8(cudaStream_t s, const ck_q8 *q, const ck_weight *wg,
                             const ck_weight *wu, const float *x, float *gate, uint32_t n) {
    mvg_fn k = pick_geglu(wg->type, n);
    if (k == NULL || wg->type != wu->type || wg->ne1 != wu->ne1 || wg->ne0 != wu->ne0 ||
        !ck_q8_reads(q, wg, n))
        return sw_errorf(SW_ERR_UNSUPPORTED, "cuda q8 matvec+geglu: types %u/%u, %u tokens",
                         wg->type, wu->type, n);
    if (wg->ne1 == 0)
        return SW_OK;
    const uint32_t blk = act_block(wg->type, false);
    SW_TRY(quantize(s, q, x, wg->ne0, n, blk));
    k<<<grid_for(wg->ne1), 32 * Q8_WARPS, 0, s>>>(*wg, *wu, q->scratch,
                                                 q8_row_stride(blk, wg->ne0), gate, n);
    return SW_CUDA_CHECK(cudaGetLastError());
}
