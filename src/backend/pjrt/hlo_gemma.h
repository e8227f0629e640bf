/*
 * hlo_gemma.h — Gemma's pieces as StableHLO (on hlo.h): reading the
 * backend's flat byte arrays as typed tensors and writing them back, and
 * RMSNorm, matmul, RoPE, GeGLU, soft-capping and attention over a KV cache
 * of many sequences, in f32 with the formulas of the cpu kernels
 * (backend/cpu): the same angles, the same masks.
 */
#ifndef SW_BACKEND_PJRT_HLO_GEMMA_H
#define SW_BACKEND_PJRT_HLO_GEMMA_H

#include "backend/backend.h"
#include "backend/pjrt/hlo.h"

/* Bytes per element of a weight or cache type the PJRT backend reads
 * natively (F32, F16, BF16); 0 for any other type. */
uint32_t hg_type_size(uint32_t type);
const char *hg_type_elt(uint32_t type);   /* "f32", "f16", "bf16" */

/* The first n elements of byte-array value `a` as a (n) tensor of elt
 * ("f32", "i32", "bf16", "f16"). */
int hg_load(hlo *h, int a, const char *elt, int64_t n);
/* A value of any shape as a flat ui8 byte array. */
int hg_store(hlo *h, int v);
/* A weight matrix (rows, cols) of `type` from byte-array value a, as f32. */
int hg_weight(hlo *h, int a, uint32_t type, int64_t rows, int64_t cols);

int hg_rmsnorm(hlo *h, int x, int w, float eps);          /* x (T, N), w (N); w < 0: none */
int hg_matmul(hlo *h, int x, int w);                      /* x (T, K), w (R, K) -> (T, R) */
/* x (T, H*hd), pos (T) i32; the first n_pairs pairs turn (0: all). */
int hg_rope(hlo *h, int x, int pos, uint32_t n_heads, uint32_t head_dim, float base,
            float freq_scale, uint32_t n_pairs);
int hg_geglu(hlo *h, int gate, int up);
int hg_softcap(hlo *h, int x, float cap);
int hg_scale(hlo *h, int x, float s);

/* Attention: rows cache rows of the caches k, v ((n_seq*rows, n_kv*hd) of
 * the cache type, as stored), q (T, n_head*hd) f32. Returns (T, n_head*hd). */
typedef struct hg_attn {
    uint32_t n_head, n_head_kv, head_dim;
    uint32_t rows, ring, n_seq, window;
    float softcap;
} hg_attn;
int hg_attention(hlo *h, const hg_attn *a, int q, int k, int v, int pos, int seq);

/* Cache rows of (seq[t], pos[t]) replaced by x (T, n_kv*hd) f32, rounded to
 * the cache's type; cache is (n_seq*rows, n_kv*hd) of that type. */
int hg_cache_put(hlo *h, int cache, int x, int pos, int seq, uint32_t rows, uint32_t ring);

/* Gemma 4's router after its projection (bop_moe_route): scores (T, E)
 * f32, scale (E) f32 -> *ids (T, k) i32 and *weights (T, k) f32. */
void hg_moe_route(hlo *h, int scores, int scale, uint32_t k, int *ids, int *weights);

/* Gemma 4's experts (bop_moe_experts): x (T, D) f32, ids and weights
 * (T, k), the stored 3-D weights as byte arrays (gate_up: E matrices of
 * 2F rows of D; down: E of D rows of F) -> (T, D). */
typedef struct hg_experts {
    int gate_up, down;         /* byte-array values */
    uint32_t type;             /* their stored type */
    int64_t n_expert, n_embd, n_ff;
} hg_experts;
int hg_moe_experts(hlo *h, const hg_experts *w, int x, int ids, int weights);

#endif
