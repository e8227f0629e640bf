/*
 * moe.cu — Gemma 4's mixture of experts on the device: the router's top k
 * after its projection (kmath.h's km_moe_route_row, one thread per token)
 * and the experts, reading the stored 3-D weights in place (rowdot.h's
 * warp per row, any weight type).
 *
 * The experts run in k passes; pass r takes each token's r-th smallest
 * expert id, so every token adds its experts' weighted outputs in
 * ascending id, as the cpu backend (and transformers) do: per pass, one
 * launch for the chosen expert's gate and up rows, GeGLU in place, one
 * launch for its down rows added into the output. The scratch is the
 * op's gu (n_tokens, 2 n_ff_exp); nothing is gathered or copied.
 *
 * With an expert cache (BOP_MOE_CACHED) the weights hold n_slot experts:
 * expert e reads matrix slot_of[e], or (-1, computed on the host) adds
 * row y_row[t k + j] of y in its place, in the same ascending order.
 */
#include "backend/cuda/cuda_common.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/kmath.h"
#include "backend/cuda/rowdot.h"

#define MOE_MAX_K 32

__global__ void k_moe_route(const float *scores, const float *scale, uint32_t n_tokens,
                            uint32_t n_expert, uint32_t k, int32_t *ids, float *weights) {
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n_tokens)
        return;
    km_moe_route_row(scores + (uint64_t)t * n_expert, scale, n_expert, k, ids + (uint64_t)t * k,
                     weights + (uint64_t)t * k);
}

/* Where each expert's matrices are: slot_of NULL, expert e is matrix e;
 * else matrix slot_of[e], or -1: its outputs are rows of y (y_row). */
typedef struct moe_cache {
    const int32_t *slot_of, *y_row;
    const float *y;
} moe_cache;

/* The matrix of token t's rank-th smallest expert id (-1: its rows come
 * from y), that routing's weight and its index t k + j. */
static __device__ __forceinline__ int32_t ranked(const int32_t *ids, const float *weights,
                                                 const moe_cache c, uint32_t t, uint32_t k,
                                                 uint32_t rank, float *w, uint64_t *tj) {
    const uint32_t j = km_moe_slot_by_rank(ids + (uint64_t)t * k, k, rank);
    *tj = (uint64_t)t * k + j;
    *w = weights[*tj];
    return c.slot_of ? c.slot_of[ids[*tj]] : ids[*tj];
}

/* This warp's row of the expert of token blockIdx.y's rank-th smallest id
 * (experts of rows_per rows each), times that token's x (x_stride floats
 * apart): the sum, in lane 0; *wt: the expert's routing weight; *mat
 * its matrix (-1: a row of y stands in, *tj says which). false when the
 * warp has no row. */
template <uint32_t TYPE>
static __device__ __forceinline__ bool expert_row(const ck_weight w, uint64_t rows_per,
                                                  const float *x, uint64_t x_stride,
                                                  const int32_t *ids, const float *weights,
                                                  const moe_cache c, uint32_t k, uint32_t rank,
                                                  uint64_t *row, float *sum, float *wt,
                                                  int32_t *mat, uint64_t *tj) {
    const uint32_t t = blockIdx.y;
    *row = (uint64_t)blockIdx.x * MV_WARPS + (threadIdx.x >> 5);
    if (*row >= rows_per)
        return false;
    const int32_t e = ranked(ids, weights, c, t, k, rank, wt, tj);
    *mat = e;
    *sum = 0.0f;
    if (e < 0 && c.slot_of != NULL) /* computed on the host */
        return true;
    /* an id outside the weight (a corrupt router output) reads nothing */
    if (e < 0 || (uint64_t)e >= w.ne1 / rows_per)
        return false;
    float acc[1] = {0.0f};
    row_partial<TYPE, 1>(w, (uint64_t)e * rows_per + *row, x + (uint64_t)t * x_stride, 1,
                         (int)(threadIdx.x & 31), acc);
    *sum = acc[0];
    return true;
}

/* gu[t] = expert e's gate and up rows times x[t] (2 ff values). */
template <uint32_t TYPE>
__global__ void __launch_bounds__(32 * MV_WARPS)
k_moe_gate_up(const ck_weight w, uint64_t rows_per, const float *x, const int32_t *ids,
              const float *weights, const moe_cache c, uint32_t k, uint32_t rank, float *gu) {
    uint64_t row, tj;
    float sum, wt;
    int32_t mat;
    if (expert_row<TYPE>(w, rows_per, x, w.ne0, ids, weights, c, k, rank, &row, &sum, &wt,
                         &mat, &tj) &&
        mat >= 0 && (threadIdx.x & 31) == 0)
        gu[(uint64_t)blockIdx.y * rows_per + row] = sum;
}

/* Each row of gu: its first ff values become gelu(gate) * up. */
__global__ void k_moe_geglu(float *gu, uint32_t n_tokens, uint64_t ff) {
    const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (uint64_t)n_tokens * ff)
        return;
    float *row = gu + i / ff * 2 * ff;
    row[i % ff] = km_geglu(row[i % ff], row[ff + i % ff]);
}

/* out[t] += weight * (expert e's down rows times the GeGLU of gu[t]). */
template <uint32_t TYPE>
__global__ void __launch_bounds__(32 * MV_WARPS)
k_moe_down(const ck_weight w, uint64_t rows_per, const float *gu, const int32_t *ids,
           const float *weights, const moe_cache c, uint32_t k, uint32_t rank, float *out) {
    uint64_t row, tj;
    float sum, wt;
    int32_t mat;
    if (expert_row<TYPE>(w, rows_per, gu, 2 * w.ne0, ids, weights, c, k, rank, &row, &sum,
                         &wt, &mat, &tj) &&
        (threadIdx.x & 31) == 0) {
        if (mat < 0) /* computed on the host: its row of y */
            sum = c.y[(uint64_t)c.y_row[tj] * rows_per + row];
        float *o = out + (uint64_t)blockIdx.y * rows_per + row;
        *o = hd_add(*o, hd_mul(sum, wt));
    }
}

typedef void (*gu_kernel)(const ck_weight, uint64_t, const float *, const int32_t *,
                          const float *, const moe_cache, uint32_t, uint32_t, float *);

static gu_kernel pick_gate_up(uint32_t type) {
    switch (type) {
#define CASE(T) case T: return k_moe_gate_up<T>;
        CK_FOR_EACH_TYPE(CASE)
#undef CASE
    default: return NULL;
    }
}

static gu_kernel pick_down(uint32_t type) {
    switch (type) {
#define CASE(T) case T: return k_moe_down<T>;
        CK_FOR_EACH_TYPE(CASE)
#undef CASE
    default: return NULL;
    }
}

sw_status ck_moe_route(cudaStream_t s, const float *scores, const float *scale,
                       uint32_t n_tokens, uint32_t n_expert, uint32_t k, int32_t *ids,
                       float *weights) {
    if (k == 0 || k > n_expert)
        return sw_errorf(SW_ERR_ARG, "cuda moe route: %u of %u experts per token", k,
                         n_expert);
    if (n_tokens == 0)
        return SW_OK;
    k_moe_route<<<(n_tokens + 63) / 64, 64, 0, s>>>(scores, scale, n_tokens, n_expert, k, ids,
                                                     weights);
    return SW_CUDA_CHECK(cudaGetLastError());
}

sw_status ck_moe_experts(cudaStream_t s, const ck_moe *m) {
    const uint64_t E = m->n_expert, D = m->gate_up.ne0, ff = m->down.ne0;
    gu_kernel gk = pick_gate_up(m->gate_up.type), dk = pick_down(m->down.type);
    if (gk == NULL || dk == NULL)
        return sw_errorf(SW_ERR_UNSUPPORTED, "cuda moe experts: types %u/%u",
                         m->gate_up.type, m->down.type);
    const uint64_t n_mat = m->slot_of ? m->n_slot : E;
    if (E == 0 || m->k == 0 || m->k > MOE_MAX_K || m->k > E || n_mat == 0 ||
        m->gate_up.ne1 != n_mat * 2 * ff || m->down.ne1 != n_mat * D || ff % 4 != 0)
        return sw_errorf(SW_ERR_ARG, "cuda moe experts: %llu experts of %llu x %llu, %u per "
                         "token", (unsigned long long)E, (unsigned long long)ff,
                         (unsigned long long)D, m->k);
    if (m->n_tokens == 0)
        return SW_OK;
    SW_TRY(SW_CUDA_CHECK(cudaMemsetAsync(m->out, 0, m->n_tokens * D * sizeof(float), s)));
    const dim3 g_gu((unsigned)((2 * ff + MV_WARPS - 1) / MV_WARPS), m->n_tokens);
    const dim3 g_dn((unsigned)((D + MV_WARPS - 1) / MV_WARPS), m->n_tokens);
    const uint64_t n_gl = (uint64_t)m->n_tokens * ff;
    const moe_cache c = {m->slot_of, m->y_row, m->y};
    for (uint32_t rank = 0; rank < m->k; rank++) {
        gk<<<g_gu, 32 * MV_WARPS, 0, s>>>(m->gate_up, 2 * ff, m->x, m->ids, m->weights, c,
                                          m->k, rank, m->gu);
        k_moe_geglu<<<(unsigned)((n_gl + 255) / 256), 256, 0, s>>>(m->gu, m->n_tokens, ff);
        dk<<<g_dn, 32 * MV_WARPS, 0, s>>>(m->down, D, m->gu, m->ids, m->weights, c, m->k,
                                          rank, m->out);
    }
    return SW_CUDA_CHECK(cudaGetLastError());
}
