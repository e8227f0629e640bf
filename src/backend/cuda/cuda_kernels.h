/*
 * cuda_kernels.h — the CUDA backend's kernel launchers, for its own .cu
 * files (C++ with CUDA types; never included from C). One family per file:
 *   matvec.cu       decode products (up to MV_MAX_TOKENS tokens), reading
 *                   quantized blocks in place; the SIMT reference for any n
 *   matvec_q8.cu    the same over 8-bit activations with integer dots
 *                   (the default for the integer types)
 *   gemm.cu         prefill and batched products on tensor cores (TF32 mma
 *                   through WMMA, a dequantized tile in shared memory)
 *   attention.cu    KV append and attention over a batch of sequences
 *   elementwise.cu  get_rows, rmsnorm, rope, geglu, add, scale, softcap,
 *                   gather, and the fused steps of the block entry
 *   moe.cu          Gemma 4's mixture of experts: the router's top k and
 *                   the experts, reading the stored 3-D weights in place
 * Every launcher enqueues on `s` and returns the launch's status (a bad
 * configuration or a sticky error from earlier work), never waiting.
 * Pointers are device memory; shapes were validated by cuda_ops.cu.
 */
#ifndef SW_BACKEND_CUDA_KERNELS_H
#define SW_BACKEND_CUDA_KERNELS_H

#include <stdint.h>

#include <cuda_runtime.h>

extern "C" {
#include "spillway.h"
}

/* Most tokens the matvec kernels take in one pass; more go to the GEMM
 * (or, in exact mode, through the matvec in groups of this many). */
#define MV_MAX_TOKENS 8

/* How matmuls with more than MV_MAX_TOKENS tokens run. */
typedef enum ck_gemm_mode {
    CK_GEMM_TF32X3,  /* tensor cores, each operand split in two TF32 parts:
                      * three products, near-f32 accuracy (the default) */
    CK_GEMM_TF32,    /* tensor cores, one TF32 product (fastest, ~1e-3) */
    CK_GEMM_SIMT     /* the matvec kernels in groups of 8 tokens: f32 FMA,
                      * the same bits for any batch (exact mode) */
} ck_gemm_mode;

/* A weight in device memory: ne1 rows of ne0 elements of `type`. */
typedef struct ck_weight {
    const uint8_t *data;
    uint32_t type;
    uint64_t ne0, ne1, row_bytes;
} ck_weight;

/* Every weight type the kernels read (qblock.h's ids), for X-macros. */
#define CK_FOR_EACH_TYPE(X)                                                                \
    X(QB_F32) X(QB_F16) X(QB_BF16) X(QB_Q4_0) X(QB_Q4_1) X(QB_Q5_0) X(QB_Q5_1) X(QB_Q8_0) \
    X(QB_Q2_K) X(QB_Q3_K) X(QB_Q4_K) X(QB_Q5_K) X(QB_Q6_K)
#define CK_LIST_TYPE(T) T,

/* Whether the kernels read `type` (qblock.h); rows must hold a multiple
 * of 8 elements. */
bool ck_type_supported(uint32_t type);

/* Once per backend: kernel attributes (the GEMM's shared memory). */
sw_status ck_gemm_init(void);

/* y[t][r] = sum_c w[r][c] x[t][c] for t < n_tokens. */
sw_status ck_matmul(cudaStream_t s, const ck_weight *w, const float *x, float *y,
                    uint32_t n_tokens, ck_gemm_mode mode);
/* The decode kernel alone (n_tokens <= MV_MAX_TOKENS). */
sw_status ck_matvec(cudaStream_t s, const ck_weight *w, const float *x, float *y,
                    uint32_t n_tokens);
/* The tensor-core kernel alone (any n_tokens >= 1). */
sw_status ck_gemm(cudaStream_t s, const ck_weight *w, const float *x, float *y,
                  uint32_t n_tokens, bool split);
/* Several matrices of one type and row length over the same x in one
 * launch (Q, K and V at decode): y[m] = w[m] x, the same bits as one
 * ck_matvec each. n_tokens <= MV_MAX_TOKENS. */
#define CK_MV_MULTI 3
typedef struct ck_mv_multi {
    ck_weight w[CK_MV_MULTI];
    float *y[CK_MV_MULTI];
    int n;
} ck_mv_multi;
sw_status ck_matvec_multi(cudaStream_t s, const ck_mv_multi *mm, const float *x,
                          uint32_t n_tokens);

/* gate[t][r] = gelu_tanh(wg[r]·x[t]) * (wu[r]·x[t]) for n_tokens <=
 * MV_MAX_TOKENS: the gate and up products and GeGLU in one pass (same
 * type); the same bits as ck_matvec twice and ck_geglu. */
sw_status ck_matvec_geglu(cudaStream_t s, const ck_weight *wg, const ck_weight *wu,
                          const float *x, float *gate, uint32_t n_tokens);

/* The integer decode path (matvec_q8.cu): 8-bit activations and the cpu
 * backend's canonical integer dot (q8dot.h), the same bits as the cpu
 * default, for the types q8_type() names. scratch holds MV_MAX_TOKENS
 * quantized rows of up to max_row elements (ck_q8_scratch_bytes). */
typedef struct ck_q8 {
    uint8_t *scratch;
    uint64_t max_row;
} ck_q8;
uint64_t ck_q8_scratch_bytes(uint64_t max_row_elems);
/* Whether the integer path takes w with n_tokens (q NULL: it is off). */
bool ck_q8_reads(const ck_q8 *q, const ck_weight *w, uint32_t n_tokens);
/* As ck_matvec; fine: activations quantized per 32 (the down projection). */
sw_status ck_matvec_q8(cudaStream_t s, const ck_q8 *q, const ck_weight *w, const float *x,
                       float *y, uint32_t n_tokens, bool fine);
sw_status ck_matvec_multi_q8(cudaStream_t s, const ck_q8 *q, const ck_mv_multi *mm,
                             const float *x, uint32_t n_tokens);
sw_status ck_matvec_geglu_q8(cudaStream_t s, const ck_q8 *q, const ck_weight *wg,
                             const ck_weight *wu, const float *x, float *gate,
                             uint32_t n_tokens);

/* out[t] = row ids[t] of w (dequantized); ids outside [0, ne1) give zeros. */
sw_status ck_get_rows(cudaStream_t s, const ck_weight *w, const int32_t *ids, uint32_t n,
                      float *out);
/* y = x / sqrt(mean(x^2) + eps) * w per row of n (sum of squares in f64);
 * w NULL: no multiplier. */
sw_status ck_rmsnorm(cudaStream_t s, const float *x, const float *w, float *y, uint32_t n,
                     uint32_t n_rows, float eps);
/* Rotate-half RoPE of x (n_tokens, n_heads, head_dim) at pos[t], of the
 * pairs i < n_pairs (0: all). */
sw_status ck_rope(cudaStream_t s, float *x, const int32_t *pos, uint32_t n_tokens,
                  uint32_t n_heads, uint32_t head_dim, float base, float freq_scale,
                  uint32_t n_pairs);
sw_status ck_geglu(cudaStream_t s, const float *gate, const float *up, float *out, uint64_t n);
sw_status ck_add(cudaStream_t s, float *x, const float *y, uint64_t n);
sw_status ck_scale(cudaStream_t s, float *x, uint64_t n, float f);
sw_status ck_softcap(cudaStream_t s, float *x, uint64_t n, float cap);
/* dst[i] = src[idx[i]] (rows of cols); an index outside [0, n_src) gives zeros. */
sw_status ck_gather(cudaStream_t s, const float *src, uint32_t n_src, const int32_t *idx,
                    uint32_t n, uint32_t cols, float *dst);

/* Gemma 4's router (moe.cu): scores (n_tokens, n_expert) -> ids and
 * weights (n_tokens, k) as cpu_moe_route; scale (n_expert). */
sw_status ck_moe_route(cudaStream_t s, const float *scores, const float *scale,
                       uint32_t n_tokens, uint32_t n_expert, uint32_t k, int32_t *ids,
                       float *weights);
/* Gemma 4's experts over n_tokens rows of x (n_embd): gate_up is n_expert
 * matrices of 2 n_ff_exp rows (gate, then up), down n_expert of n_embd
 * rows of n_ff_exp; out[t] = the sum, in ascending expert id, of each
 * routed expert's output times its weight. gu: (n_tokens, 2 n_ff_exp)
 * scratch. With slot_of (an expert cache, BOP_MOE_CACHED): the weights
 * hold n_slot matrices, expert e's is slot_of[e], or -1: its output for
 * routing (t, j) is row y_row[t k + j] of y. */
typedef struct ck_moe {
    ck_weight gate_up, down;
    const float *x, *weights;
    const int32_t *ids;
    float *out, *gu;
    uint32_t n_tokens, n_expert, k;
    const int32_t *slot_of, *y_row;   /* NULL: no cache */
    const float *y;
    uint32_t n_slot;
} ck_moe;
sw_status ck_moe_experts(cudaStream_t s, const ck_moe *m);

/* One layer's cache as the kernels see it (bkv with device pointers). */
typedef struct ck_kv {
    void *k, *v;
    uint32_t type;       /* QB_F32, QB_F16 or QB_BF16 */
    uint32_t row_elems, rows, ring, n_seq;
} ck_kv;

/* Rows (seq[t], pos[t]) of the cache = k[t], v[t] in its type; tokens
 * naming no row are skipped. */
sw_status ck_kv_append(cudaStream_t s, const ck_kv *kv, const float *k, const float *v,
                       const int32_t *pos, const int32_t *seq, uint32_t n_tokens);
/* Causal (windowed, soft-capped) attention of q (n_tokens, n_head, hd)
 * over each token's sequence: an online softmax per warp over the keys it
 * is dealt, joined at the end; never a context x context matrix.
 * head_dim <= CK_ATTN_MAX_HD. */
#define CK_ATTN_MAX_HD 512
/* Flash-decoding's scratch (attention.cu): where a query's keys are cut
 * into parts, their partial results; NULL or n_sm 0: never cut. max_keys:
 * a bound on the keys a query sees (0: unknown), which sizes the cut. */
#define CK_ATTN_MAX_SPLITS 32
#define CK_ATTN_SPLIT_BYTES (2u << 20)
typedef struct ck_attn_split {
    float *scratch;
    uint64_t bytes;
    uint32_t n_sm;       /* the device's multiprocessors */
} ck_attn_split;
sw_status ck_attention(cudaStream_t s, const ck_kv *kv, const float *q, float *out,
                       const int32_t *pos, const int32_t *seq, uint32_t n_tokens,
                       uint32_t n_head, uint32_t n_head_kv, uint32_t head_dim,
                       uint32_t window, float softcap, uint32_t max_keys,
                       const ck_attn_split *sp);

/* The block entry's fused steps (elementwise.cu), each the same arithmetic
 * as the ops it replaces, in their order:
 * per (token, head): [rmsnorm with qn] -> rope -> [* scale] for q and k,
 * then k and v into the cache. */
sw_status ck_qk_prep(cudaStream_t s, float *q, float *k, const float *v, const float *q_norm,
                     const float *k_norm, float eps, const int32_t *pos, const int32_t *seq,
                     uint32_t n_tokens, uint32_t n_head, uint32_t n_head_kv,
                     uint32_t head_dim, float base, float freq_scale, float query_scale,
                     const ck_kv *kv);
/* Per row: [h = rmsnorm(h, post)]; x += h; [h = rmsnorm(x, next)]. */
sw_status ck_residual(cudaStream_t s, float *x, float *h, const float *post_norm,
                      const float *next_norm, uint32_t n, uint32_t n_rows, float eps);

#endif
