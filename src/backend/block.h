/*
 * block.h — one Gemma transformer block as backends see it: its weights by
 * role, its shape and quirks as plain fields, its KV cache, and the
 * activations it reads and writes, all in one backend's memory.
 *
 * The block (gemma-facts §1.1), for a batch of n_tokens tokens of any
 * sequences (metadata pos/seq, int32 per token):
 *   h = rmsnorm(x, attn_norm)
 *   q, k, v = h·Wq, h·Wk, h·Wv;  qk_norm: rmsnorm per head (q_norm, k_norm)
 *   rope(q), rope(k) at (rope_base, rope_scale);  q *= query_scale
 *   cache[seq, pos] = k, v;  att = attention(q, cache; causal per sequence,
 *   window, attn_softcap);  h = att·Wo;  post_norms: h = rmsnorm(h, post_attn_norm)
 *   x += h
 *   h = rmsnorm(x, ffn_norm);  gate, up = h·Wgate, h·Wup;  gate = gelu_tanh(gate)*up
 *   h = gate·Wdown;  post_norms: h = rmsnorm(h, post_ffw_norm);  x += h
 * Gemma 4 (gemma4-facts): v_norm: v = rmsnorm(v) per head (no weight);
 * k_eq_v: v = k before k's norm and RoPE; kv_shared: no k, v or append,
 * attention over the cache given; RoPE turns rope_pairs pairs; then, with
 * per-layer inputs, g = gelu_tanh(x·Wple_gate) * ple, h = rmsnorm(g·Wple_proj,
 * ple_norm), x += h; and x *= layer_scale. With experts, the FFN's h is
 * rmsnorm(h, post_ffw_norm_1) + rmsnorm(experts(rmsnorm(x, ffn_norm_2)),
 * post_ffw_norm_2), routed by rmsnorm(x) * router_scale * n_embd^-1/2,
 * before post_ffw_norm.
 * block_run_ops() issues exactly these steps as ops; a backend's `block`
 * entry must give the same bits as that sequence on the same kernels.
 */
#ifndef SW_BACKEND_BLOCK_H
#define SW_BACKEND_BLOCK_H

#include "backend/backend.h"
#include "backend/block_weight.h"

/* One block's shape and quirks (Gemma 1-3: the same for every block;
 * Gemma 4's differ by attention type and KV sharing). */
typedef struct block_shape {
    uint32_t n_embd, n_ff, n_head, n_head_kv, head_dim;
    float norm_eps;
    float query_scale;
    float attn_softcap;   /* 0: none */
    bool qk_norm;
    bool post_norms;
    bool v_norm;          /* v = rmsnorm(v) per head, no weight */
    bool k_eq_v;          /* no Wv: v is the key projection (before k's norm and RoPE) */
    bool kv_shared;       /* no K/V of its own: attends over `kv`, another layer's cache */
    uint32_t rope_pairs;  /* pairs RoPE turns (0: all) */
    uint32_t n_pl;        /* per-layer embedding width; 0: none */
    uint32_t n_expert, n_expert_used; /* experts beside the MLP; 0: none */
} block_shape;

/* One side's activations for up to its n_tok tokens (engine-owned). */
typedef struct block_acts {
    bmem x;              /* (n_tok, n_embd) residual stream, updated in place */
    bmem h;              /* (n_tok, n_embd) normed input / branch output */
    bmem q, att;         /* (n_tok, n_head * hd) */
    bmem k, v;           /* (n_tok, n_head_kv * hd) */
    bmem gate, up;       /* (n_tok, n_ff) */
    bmem ple;            /* (n_tok, n_pl): this layer's per-layer input (Gemma 4) */
    /* Gemma 4's experts: the router's input (then the gathered rows) and
     * scores, the chosen ids and weights, the experts' input, their
     * gate/up and down scratch, and their output */
    bmem moe_r, moe_scores, moe_ids, moe_w, moe_x, moe_gu, moe_yd, moe_out;
    bmem pos, seq;       /* (n_tok) int32: position and sequence of each token */
    /* (n_tok) int32: the positions attention masks by, where they differ
     * from pos (a Gemma 4 assistant's query, RoPE'd at the position after
     * the last key it may see); buf NULL: pos. The engine's own forwards
     * leave it unset. */
    bmem apos;
} block_acts;

/* Which part of a block a call runs: all of it, or (Gemma 4's experts
 * computed elsewhere) up to the dense MLP's norm, then from the experts'
 * output in act.moe_out on. */
typedef enum block_phase { BLOCK_WHOLE = 0, BLOCK_TO_EXPERTS, BLOCK_FROM_EXPERTS } block_phase;

typedef struct block_args {
    const block_shape *shape;
    btensor w[BW_COUNT];   /* absent norms have n_bytes 0 */
    bkv kv;
    uint32_t window;       /* 0: global attention */
    float rope_base, rope_scale;
    float layer_scale;     /* the output's multiplier; 0: none */
    block_acts act;
    uint32_t n_tokens;
    block_phase phase;
    uint32_t max_keys;     /* a bound on the keys any query sees (the largest
                            * position + 1); 0: unknown. A hint: flash-
                            * decoding sizes its split by it (cuda) */
} block_args;

/* Every operand of a block (a->phase of it), as bop_for_each_mem gives an
 * op's: the one description of the memory a block reads and writes, which
 * block_run_ops' ops touch exactly (test_block_operands checks it). Each
 * operand's `what` says which it is; the order is fixed and is that of a
 * block program's arguments: the residual x; the dense MLP's output h and
 * the experts' output (from outside: BLOCK_FROM_EXPERTS; h is a result of
 * BLOCK_TO_EXPERTS); the per-layer input; the weights by role; the caches;
 * positions and sequences; then the block's scratch. */
typedef enum block_operand {
    BO_X, BO_H, BO_MOE_OUT, BO_PLE,
    BO_KV_K, BO_KV_V, BO_POS, BO_SEQ, BO_APOS,
    BO_Q, BO_ATT, BO_K, BO_V, BO_GATE, BO_UP,
    BO_MOE_R, BO_MOE_SCORES, BO_MOE_IDS, BO_MOE_W, BO_MOE_X, BO_MOE_GU, BO_MOE_YD,
    BO_WEIGHT,                  /* + role: weight `role` */
    BO_COUNT = BO_WEIGHT + BW_COUNT
} block_operand;

sw_status block_for_each_mem(block_args *a, mem_operand_fn fn, void *user);

/* Whether the block (a->phase of it) reads weight `role`: the flags and
 * phase that decide it, and a present tensor (n_bytes != 0). */
bool block_reads_weight(const block_args *a, block_weight role);

/* The block (a->phase of it) as a sequence of submits on b's compute
 * queue. */
sw_status block_run_ops(backend *b, const block_args *a);

/* Only the experts (router, experts, their norm) of a, from act.x into
 * act.moe_out: what another side computes between BLOCK_TO_EXPERTS and
 * BLOCK_FROM_EXPERTS. Errors: SW_ERR_ARG for a layer without experts. */
sw_status block_run_experts(backend *b, const block_args *a);

/* Its parts, for experts computed in a cache (engine/expert_cache.c): the
 * routing (act.moe_ids, moe_w) and the experts' input (act.moe_x); then,
 * after the experts wrote act.moe_out, their norm. */
sw_status block_run_route(backend *b, const block_args *a);
sw_status block_run_experts_norm(backend *b, const block_args *a);

#endif
