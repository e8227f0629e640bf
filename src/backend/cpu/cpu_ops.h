/*
 * cpu_ops.h — the CPU backend's kernels for Gemma: portable C, f32
 * activations, weights read in their stored type block by block (never
 * dequantized whole up front).
 *
 * Layout: activations are row-major [n_tokens][dim]. A weight matrix view
 * has ne[0] = n_in (contiguous, the row length) and ne[1] = n_out rows,
 * exactly as GGUF stores it (same bytes as PyTorch's [out, in]).
 *
 * Determinism: every kernel gives bit-identical results for any thread
 * count — threads split output rows, never a reduction — because plans
 * must not change logits. No FMA contraction (the build passes
 * -ffp-contract=off).
 */
#ifndef SW_BACKEND_CPU_OPS_H
#define SW_BACKEND_CPU_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/cpu/threadpool.h"
#include "backend/tensor.h"
#include "spillway.h"

/* cpu_matmul's workspace: one slice per thread, for dequantized tiles of
 * rows. Create it once (with the engine), never in the token loop:
 *
 *     cpu_mm_scratch *ws = NULL;
 *     st = cpu_mm_scratch_create(cpu_pool_size(pool), n_ff, &ws);  // widest row
 *     ... cpu_matmul(pool, ws, &w_down, x, y, n_tokens) ...
 *     cpu_mm_scratch_destroy(ws);
 *
 * Not thread-safe: one cpu_matmul at a time per workspace (as per pool). */
typedef struct cpu_mm_scratch cpu_mm_scratch;

/* Workspace for up to n_threads threads and rows of up to max_ne0
 * elements. The caller owns *out. Errors: SW_ERR_ARG (n_threads < 1,
 * max_ne0 == 0, or a size beyond size_t), SW_ERR_OOM_HOST. */
sw_status cpu_mm_scratch_create(int n_threads, uint64_t max_ne0, cpu_mm_scratch **out);

/* exact: matmuls with this workspace take f32 activations over every
 * weight type (the canonical f32 dot of qdot.h); else (the default) block
 * types with an integer kernel (idot.h) quantize the activations to 8 bits
 * per block and dot in integers. */
void cpu_mm_scratch_set_exact(cpu_mm_scratch *ws, bool exact);

/* bf16: matmuls over bf16 weights (rows of whole 32-element blocks) take
 * the activations rounded to bf16 and the canonical bf16 dot of bdot.h
 * (vdpbf16ps on CPUs with AVX-512 BF16; elsewhere the same bits, slowly);
 * exact wins over it. Off by default. */
void cpu_mm_scratch_set_bf16(cpu_mm_scratch *ws, bool bf16);

/* Activation rows the matmuls with this workspace have quantized (or
 * rounded to bf16) so far: what CPU_MM_X_AGAIN saves shows here. 0 for
 * NULL. */
uint64_t cpu_mm_scratch_rows_prepared(const cpu_mm_scratch *ws);

/* Frees the workspace. Accepts NULL. */
void cpu_mm_scratch_destroy(cpu_mm_scratch *ws);

/* Bytes cpu_mm_scratch_create allocates for these arguments (for the
 * planner); 0 for arguments it rejects with SW_ERR_ARG. */
uint64_t cpu_mm_scratch_bytes(int n_threads, uint64_t max_ne0);

/* y[t][r] = sum_c W[r][c] * x[t][c] for t < n_tokens, r < ne[1], c < ne[0].
 * Supports every type quant_dequantize() supports. x: [n_tokens][ne0],
 * y: [n_tokens][ne1]. Uses the pool (may be NULL: single-threaded); thread
 * ith of cpu_pool_size(pool) uses slice ith of ws. ws may be NULL for one
 * token of up to about 12k elements; more tokens need a ws made for at
 * least cpu_pool_size(pool) threads and rows of >= ne[0].
 * Never allocates. Each y[t][r] is the canonical integer dot of idot.h
 * (block types with an integer kernel, unless ws is exact), the canonical
 * bf16 dot of bdot.h (bf16 weights with a bf16 ws), or the canonical f32
 * dot of qdot.h: the same bits for any pool size, batch size, path or
 * ISA.
 * Errors: SW_ERR_UNSUPPORTED for a type without a dequantizer; SW_ERR_ARG
 * for a bad weight view, NULL x or y, or a missing or too small ws. */
sw_status cpu_matmul(cpu_pool *pool, cpu_mm_scratch *ws, const tensor_view *w, const float *x,
                     float *y, uint32_t n_tokens);

/* cpu_matmul for inputs whose magnitude swings along the row (the down
 * projection's: the GeGLU product): the K types take activations with a
 * scale per 32 instead of per 256 (idot.h's fine form); every other type
 * and the exact workspace compute as cpu_matmul does. */
sw_status cpu_matmul_fine(cpu_pool *pool, cpu_mm_scratch *ws, const tensor_view *w,
                          const float *x, float *y, uint32_t n_tokens);

/* cpu_matmul_as's flags. */
enum {
    CPU_MM_FINE = 1,    /* as cpu_matmul_fine */
    /* x holds what it held in the previous call with this workspace (the
     * same pointer and n_tokens, unchanged since): the shared input of Q,
     * K and V, or of gate and up. Where the workspace still holds those
     * tokens prepared in the form this weight's kernel takes (all of them
     * fit one chunk: up to 64), they are not prepared again;
     * the results are the same bits either way. */
    CPU_MM_X_AGAIN = 2
};

/* cpu_matmul with flags (CPU_MM_*). */
sw_status cpu_matmul_as(cpu_pool *pool, cpu_mm_scratch *ws, const tensor_view *w,
                        const float *x, float *y, uint32_t n_tokens, unsigned flags);

/* Decode's experts: one token against n_mat matrices of one shape and
 * type (w[i]; x[i] its input row, y[i] its n_rows outputs), the rows of
 * all of them shared over the pool's threads in one pass: the kernels and
 * the bits of n_mat cpu_matmul calls of one token, with one hand-off to
 * the threads instead of n_mat. Only cpu_matmul's integer path: *done
 * false (nothing written) where it would take another (exact or bf16
 * dots, a type without integer kernels), for the caller to go one by one.
 * Errors: cpu_matmul's; SW_ERR_ARG for matrices that differ. */
enum { CPU_MM_MULTI_MAX = 64 };
sw_status cpu_matmul_rows_multi(cpu_pool *pool, cpu_mm_scratch *ws, const tensor_view *w,
                                uint32_t n_mat, const float *const *x, float *const *y,
                                bool *done);

/* Gemma 4's router after its projection (backend.h's BOP_MOE_ROUTE):
 * for each of n_tokens rows of scores (n_expert), ids and weights (k each)
 * get the k largest softmax probabilities (descending, ties to the lower
 * id) divided by their sum and times expert_scale[id]. Errors: SW_ERR_ARG
 * for k outside 1..n_expert. */
sw_status cpu_moe_route(const float *scores, const float *expert_scale, uint32_t n_tokens,
                        uint32_t n_expert, uint32_t k, int32_t *ids, float *weights);

/* BOP_MOE_EXPERTS's operands as host pointers; gate_up and down are views
 * of n_expert matrices each (ne[1] = rows of all of them). */
typedef struct cpu_moe_args {
    const tensor_view *gate_up, *down;
    const float *x, *weights;
    const int32_t *ids;
    float *out, *xg, *gu, *yd;
    uint32_t n_tokens, n_expert, k;
    /* BOP_MOE_CACHED (slot_of non-NULL): gate_up and down hold n_slot
     * matrices; expert e is slot slot_of[e], or (-1) elsewhere, its rows in
     * y at y_row[t * k + j]; accumulate: into out, else into y */
    const int32_t *slot_of, *y_row;
    float *y;
    uint32_t n_slot;
    bool accumulate;
} cpu_moe_args;

/* out = the experts' weighted sum per token (BOP_MOE_EXPERTS, and
 * BOP_MOE_CACHED with slot_of), with the pool and workspace of
 * cpu_matmul. Errors: SW_ERR_ARG for weights that are not n_expert (n_slot)
 * matrices of matching shapes; cpu_matmul's. */
sw_status cpu_moe_experts(cpu_pool *pool, cpu_mm_scratch *ws, const cpu_moe_args *a);

/* out[t][:] = row ids[t] of W (dequantized to f32), t < n. Row length ne0.
 * Errors: SW_ERR_ARG for an id >= ne1; SW_ERR_UNSUPPORTED. */
sw_status cpu_get_rows(const tensor_view *w, const int32_t *ids, uint32_t n, float *out);

/* y = x / sqrt(mean(x^2) + eps) * w, per row of length n, n_rows rows;
 * w holds the full multiplier (GGUF norms already include Gemma's +1);
 * w NULL: no multiplier (Gemma 4's value norm). x and y may alias. */
void cpu_rmsnorm(const float *x, const float *w, float *y, uint32_t n, uint32_t n_rows,
                 float eps);

/* Rotate-half (NEOX) RoPE in place on x: [n_tokens][n_heads][head_dim];
 * token t has position pos[t]; angle_i = pos * freq_scale * base^(-2i/hd)
 * for the pairs (i, i + hd/2) with i < n_pairs (0: all; Gemma 4's full
 * layers turn a quarter of them, the rest keep their values). */
void cpu_rope(float *x, const int32_t *pos, uint32_t n_tokens, uint32_t n_heads,
              uint32_t head_dim, float base, float freq_scale, uint32_t n_pairs);

/* out[i] = gelu_tanh(gate[i]) * up[i], i < n, in PyTorch's operation
 * order with vmath.h's tanh (within 2 ulp of tanh; the same bits in every
 * instruction set). out may alias gate. */
void cpu_geglu(const float *gate, const float *up, float *out, uint64_t n);

/* x[i] = cap * tanh(x[i] / cap), i < n (no-op when cap == 0), with
 * vmath.h's tanh. */
void cpu_softcap(float *x, uint64_t n, float cap);

/* cpu_geglu, cpu_rmsnorm and cpu_softcap over the pool's threads when
 * the work is large (same bits as the single-threaded kernels). pool may
 * be NULL. */
void cpu_geglu_mt(cpu_pool *pool, const float *gate, const float *up, float *out, uint64_t n);
void cpu_rmsnorm_mt(cpu_pool *pool, const float *x, const float *w, float *y, uint32_t n,
                    uint32_t n_rows, float eps);
void cpu_softcap_mt(cpu_pool *pool, float *x, uint64_t n, float cap);

/* x[i] += y[i]. */
void cpu_add(float *x, const float *y, uint64_t n);

/* x[i] *= s. */
void cpu_scale(float *x, uint64_t n, float s);

/* Attention for n_tokens new queries against a KV history.
 *   q:   [n_tokens][n_head][head_dim] (already RoPE'd and scaled)
 *   k,v: the cache, [n_kv_rows][n_head_kv][head_dim] elements of kv_type
 *        (F32, F16 or BF16; zero-initialised args mean F32); row of
 *        position p is at index (p % kv_ring) when kv_ring > 0, else p.
 *        F16/BF16 elements are widened exactly to f32 as they are read, so
 *        the result equals the F32 path over the widened values, bit for
 *        bit, on every kernel set.
 *   q_pos[t]: absolute position of query t; it sees keys at positions
 *        p <= q_pos[t] and, when window > 0, q_pos[t] - p < window.
 *   q_seq[t]: its sequence (NULL: all 0); sequence s's rows start at row
 *        s * seq_rows (positions index within them as above).
 *   softcap: 0 for none; else scores = cap*tanh(scores/cap) before masking.
 *   out: [n_tokens][n_head][head_dim].
 * Query head h uses kv head h / (n_head / n_head_kv). Softmax in f32.
 * scratch: at least (max visible keys) floats per thread — sized by the
 * caller as n_threads * (kv_ring ? kv_ring : n_ctx). Thread ith of
 * cpu_pool_size(pool) uses scratch[ith*S .. ith*S + S), where S is the
 * most keys any query of this call sees: min(q_pos+1, window if > 0,
 * kv_ring if > 0). Visibility is clamped to the ring: a ring holds only
 * the last kv_ring positions (a ring smaller than the window is a
 * planning error; asserted in debug builds). */
typedef struct cpu_attn_args {
    const float *q;
    const void *k, *v;
    uint32_t kv_type;     /* SW_TYPE_F32 (0), SW_TYPE_F16 or SW_TYPE_BF16 */
    float *out;
    const int32_t *q_pos;
    const int32_t *q_seq; /* NULL: every query in sequence 0 */
    uint32_t seq_rows;    /* rows per sequence (with q_seq) */
    uint32_t n_tokens, n_head, n_head_kv, head_dim;
    uint32_t kv_ring;     /* 0: linear cache indexed by position */
    uint32_t window;      /* 0: global attention */
    float softcap;
    float *scratch;
    uint64_t scratch_floats; /* its size; 0: the minimum above. With room
                              * for a KV group's scores per thread, the
                              * group's heads read each key and value once */
    float *block;            /* NULL, or block_floats for prefill's block
                              * units (several tokens' queries over each
                              * widened key and value): an equal share per
                              * thread; used where a share holds a block */
    uint64_t block_floats;
} cpu_attn_args;

/* The block scratch the cpu backend gives attention, per thread (512 KiB:
 * blocks of 8 tokens of a KV group of 4 over about 3,500 keys, of 2 tokens
 * over 14,000; longer ranges take the per-token units). */
enum { CPU_ATTN_BLOCK_FLOATS = 1 << 17 };
void cpu_attention(cpu_pool *pool, const cpu_attn_args *a);

/* Writes the keys and values of n_tokens tokens (k, v: (n_tokens,
 * row_elems) f32) into cache rows: token t goes to row seq[t] * seq_rows +
 * (ring ? pos[t] % ring : pos[t]) of k_cache / v_cache, rounded to `type`
 * (F32: copied; F16/BF16: nearest even). seq NULL means sequence 0. */
void cpu_kv_append(const float *k, const float *v, const int32_t *pos, const int32_t *seq,
                   uint32_t n_tokens, uint32_t row_elems, uint32_t type, uint32_t seq_rows,
                   uint32_t ring, void *k_cache, void *v_cache);

/* dst[i][:] = src[idx[i]][:] for i < n, rows of `cols` floats; src has
 * n_src rows. Errors: SW_ERR_ARG for an index outside [0, n_src). */
sw_status cpu_gather_rows(const float *src, uint32_t n_src, const int32_t *idx, uint32_t n,
                          uint32_t cols, float *dst);

#endif
