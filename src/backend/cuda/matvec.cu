/*
 * matvec.cu — decode matrix products: y[t] = W x[t] for up to
 * MV_MAX_TOKENS tokens, reading W's quantized blocks in place (a streamed
 * layer is never dequantized into a copy), once for all the tokens.
 *
 * One warp per output row: lane l decodes slots l, l + 32, ... of the row
 * (qblock.h: 8 weights from a few adjacent bytes; the lanes of a warp read
 * one stretch of the row together), multiplies them into a running sum
 * per token, and a butterfly of shuffles adds the 32 partial sums. The
 * order of every addition depends only on the row length, never on the
 * token count, so a token's result is the same alone or in a batch.
 * Decoding is the cost here, not arithmetic: the kernel is bound by the
 * bytes of W (HBM), which is what the planner's device rate models.
 *
 * k_matvec_ref is the naive reference (one thread per output, element by
 * element), kept for debugging (SPILLWAY_CUDA_MATVEC=ref).
 */
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_common.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/kmath.h"
#include "backend/cuda/qblock.h"
#include "backend/cuda/rowdot.h"

bool ck_type_supported(uint32_t type) {
    uint32_t e, b;
    qb_geometry(type, &e, &b);
    return e > 0;
}

template <uint32_t TYPE, int NT>
__global__ void __launch_bounds__(32 * MV_WARPS)
k_matvec(const ck_weight w, const float *x, float *y, uint32_t n_tokens) {
    const int lane = threadIdx.x & 31;
    const uint64_t row = (uint64_t)blockIdx.x * MV_WARPS + (threadIdx.x >> 5);
    if (row >= w.ne1)
        return;
    float acc[NT];
#pragma unroll
    for (int t = 0; t < NT; t++)
        acc[t] = 0.0f;
    row_partial<TYPE, NT>(w, row, x, n_tokens, lane, acc);
    if (lane == 0) {
#pragma unroll
        for (int t = 0; t < NT; t++)
            if (t < (int)n_tokens)
                y[(uint64_t)t * w.ne1 + row] = acc[t];
    }
}

/* Gate and up rows together, GeGLU on the way out (same bits as apart). */
template <uint32_t TYPE, int NT>
__global__ void __launch_bounds__(32 * MV_WARPS)
k_matvec_geglu(const ck_weight wg, const ck_weight wu, const float *x, float *gate,
               uint32_t n_tokens) {
    const int lane = threadIdx.x & 31;
    const uint64_t row = (uint64_t)blockIdx.x * MV_WARPS + (threadIdx.x >> 5);
    if (row >= wg.ne1)
        return;
    float g[NT], u[NT];
#pragma unroll
    for (int t = 0; t < NT; t++)
        g[t] = u[t] = 0.0f;
    row_partial<TYPE, NT>(wg, row, x, n_tokens, lane, g);
    row_partial<TYPE, NT>(wu, row, x, n_tokens, lane, u);
    if (lane == 0) {
#pragma unroll
        for (int t = 0; t < NT; t++)
            if (t < (int)n_tokens)
                gate[(uint64_t)t * wg.ne1 + row] = km_geglu(g[t], u[t]);
    }
}

/* Up to CK_MV_MULTI matrices of one type over the same x, one launch: row
 * r of the concatenation is row r - off[m] of matrix m (Q, K and V). Each
 * row's sums are those of k_matvec. */
template <uint32_t TYPE, int NT>
__global__ void __launch_bounds__(32 * MV_WARPS)
k_matvec_multi(const ck_mv_multi mm, const float *x, uint32_t n_tokens) {
    const int lane = threadIdx.x & 31;
    uint64_t row = (uint64_t)blockIdx.x * MV_WARPS + (threadIdx.x >> 5);
    int m = 0;
    while (m < mm.n && row >= mm.w[m].ne1)
        row -= mm.w[m++].ne1;
    if (m == mm.n)
        return;
    float acc[NT];
#pragma unroll
    for (int t = 0; t < NT; t++)
        acc[t] = 0.0f;
    row_partial<TYPE, NT>(mm.w[m], row, x, n_tokens, lane, acc);
    if (lane == 0) {
#pragma unroll
        for (int t = 0; t < NT; t++)
            if (t < (int)n_tokens)
                mm.y[m][(uint64_t)t * mm.w[m].ne1 + row] = acc[t];
    }
}

/* The reference: one thread per (token, row), element by element. */
template <uint32_t TYPE>
__global__ void k_matvec_ref(const ck_weight w, const float *x, float *y, uint32_t n_tokens) {
    const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (uint64_t)n_tokens * w.ne1)
        return;
    const uint64_t t = i / w.ne1, row = i % w.ne1;
    const uint8_t *r = w.data + row * w.row_bytes;
    float acc = 0.0f;
    for (uint64_t g = 0; g < w.ne0 / 8; g++) {
        float wt[8];
        uint64_t e0, e1;
        qb_row_slot(TYPE, r, g, wt, &e0, &e1);
        acc = dot8(wt, x + t * w.ne0, e0, e1, acc);
    }
    y[t * w.ne1 + row] = acc;
}

/* ---- dispatch over types and token counts ---------------------------------- */

typedef void (*mv_kernel)(const ck_weight, const float *, float *, uint32_t);
typedef void (*mvg_kernel)(const ck_weight, const ck_weight, const float *, float *, uint32_t);
typedef void (*mvm_kernel)(const ck_mv_multi, const float *, uint32_t);

template <uint32_t TYPE>
static mv_kernel pick_nt(uint32_t n) {
    return n <= 1 ? k_matvec<TYPE, 1> : n <= 2 ? k_matvec<TYPE, 2>
         : n <= 4 ? k_matvec<TYPE, 4> : k_matvec<TYPE, 8>;
}

template <uint32_t TYPE>
static mvg_kernel pick_geglu_nt(uint32_t n) {
    return n <= 1 ? k_matvec_geglu<TYPE, 1> : n <= 2 ? k_matvec_geglu<TYPE, 2>
         : n <= 4 ? k_matvec_geglu<TYPE, 4> : k_matvec_geglu<TYPE, 8>;
}

template <uint32_t TYPE>
static mvm_kernel pick_multi_nt(uint32_t n) {
    return n <= 1 ? k_matvec_multi<TYPE, 1> : n <= 2 ? k_matvec_multi<TYPE, 2>
         : n <= 4 ? k_matvec_multi<TYPE, 4> : k_matvec_multi<TYPE, 8>;
}

static mvm_kernel pick_multi(uint32_t type, uint32_t n) {
    switch (type) {
#define CASE(T) case T: return pick_multi_nt<T>(n);
        CK_FOR_EACH_TYPE(CASE)
#undef CASE
    default: return NULL;
    }
}

static mv_kernel pick(uint32_t type, uint32_t n) {
    switch (type) {
#define CASE(T) case T: return pick_nt<T>(n);
        CK_FOR_EACH_TYPE(CASE)
#undef CASE
    default: return NULL;
    }
}

static mvg_kernel pick_geglu(uint32_t type, uint32_t n) {
    switch (type) {
#define CASE(T) case T: return pick_geglu_nt<T>(n);
        CK_FOR_EACH_TYPE(CASE)
#undef CASE
    default: return NULL;
    }
}

static mv_kernel pick_ref(uint32_t type) {
    switch (type) {
#define CASE(T) case T: return k_matvec_ref<T>;
        CK_FOR_EACH_TYPE(CASE)
#undef CASE
    default: return NULL;
    }
}

/* SPILLWAY_CUDA_MATVEC=ref selects the reference kernel (debugging). */
static bool use_reference(void) {
    static int cached = -1;
    if (cached < 0) {
        const char *v = getenv("SPILLWAY_CUDA_MATVEC");
        cached = v != NULL && strcmp(v, "ref") == 0;
    }
    return cached == 1;
}

static unsigned blocks_for(uint64_t rows) {
    return (unsigned)((rows + MV_WARPS - 1) / MV_WARPS);
}

sw_status ck_matvec(cudaStream_t s, const ck_weight *w, const float *x, float *y,
                    uint32_t n_tokens) {
    if (n_tokens == 0 || w->ne1 == 0)
        return SW_OK;
    if (use_reference()) {
        mv_kernel k = pick_ref(w->type);
        const uint64_t n = (uint64_t)n_tokens * w->ne1;
        if (k == NULL)
            return sw_errorf(SW_ERR_UNSUPPORTED, "cuda matvec: type %u", w->type);
        k<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(*w, x, y, n_tokens);
        return SW_CUDA_CHECK(cudaGetLastError());
    }
    mv_kernel k = pick(w->type, n_tokens);
    if (k == NULL || n_tokens > MV_MAX_TOKENS)
        return sw_errorf(SW_ERR_UNSUPPORTED, "cuda matvec: type %u with %u tokens", w->type,
                         n_tokens);
    k<<<blocks_for(w->ne1), 32 * MV_WARPS, 0, s>>>(*w, x, y, n_tokens);
    return SW_CUDA_CHECK(cudaGetLastError());
}

sw_status ck_matvec_geglu(cudaStream_t s, const ck_weight *wg, const ck_weight *wu,
                          const float *x, float *gate, uint32_t n_tokens) {
    mvg_kernel k = pick_geglu(wg->type, n_tokens);
    if (k == NULL || wg->type != wu->type || n_tokens > MV_MAX_TOKENS || wg->ne1 != wu->ne1)
        return sw_errorf(SW_ERR_UNSUPPORTED, "cuda matvec+geglu: types %u/%u with %u tokens",
                         wg->type, wu->type, n_tokens);
    if (n_tokens == 0 || wg->ne1 == 0)
        return SW_OK;
    k<<<blocks_for(wg->ne1), 32 * MV_WARPS, 0, s>>>(*wg, *wu, x, gate, n_tokens);
    return SW_CUDA_CHECK(cudaGetLastError());
}

sw_status ck_matvec_multi(cudaStream_t s, const ck_mv_multi *mm, const float *x,
                          uint32_t n_tokens) {
    uint64_t rows = 0;
    for (int m = 0; m < mm->n; m++) {
        if (mm->w[m].type != mm->w[0].type || mm->w[m].ne0 != mm->w[0].ne0)
            return sw_errorf(SW_ERR_UNSUPPORTED, "cuda matvec: one launch needs one type and "
                             "row length");
        rows += mm->w[m].ne1;
    }
    mvm_kernel k = pick_multi(mm->w[0].type, n_tokens);
    if (k == NULL || mm->n < 1 || mm->n > CK_MV_MULTI || n_tokens > MV_MAX_TOKENS)
        return sw_errorf(SW_ERR_UNSUPPORTED, "cuda matvec: %d matrices of type %u with %u "
                         "tokens", mm->n, mm->w[0].type, n_tokens);
    if (n_tokens == 0 || rows == 0)
        return SW_OK;
    k<<<blocks_for(rows), 32 * MV_WARPS, 0, s>>>(*mm, x, n_tokens);
    return SW_CUDA_CHECK(cudaGetLastError());
}

sw_status ck_matmul(cudaStream_t s, const ck_weight *w, const float *x, float *y,
                    uint32_t n_tokens, ck_gemm_mode mode) {
    if (n_tokens <= MV_MAX_TOKENS || use_reference())
        return ck_matvec(s, w, x, y, n_tokens);
    if (mode != CK_GEMM_SIMT)
        return ck_gemm(s, w, x, y, n_tokens, mode == CK_GEMM_TF32X3);
    /* Exact mode: groups of 8 tokens through the decode kernel, so every
     * token's sums are the same as alone. */
    for (uint32_t t0 = 0; t0 < n_tokens; t0 += MV_MAX_TOKENS) {
        uint32_t n = n_tokens - t0 < MV_MAX_TOKENS ? n_tokens - t0 : MV_MAX_TOKENS;
        SW_TRY(ck_matvec(s, w, x + (uint64_t)t0 * w->ne0, y + (uint64_t)t0 * w->ne1, n));
    }
    return SW_OK;
}
