/*
 * ends.h — the forward pass's two ends as op sequences, beside block.h's
 * transformer block: the input embedding, Gemma 4's per-layer inputs, and
 * the logits. With block.c they are the model's whole math, one step per
 * line; the engine only decides on which side each runs and moves data
 * between sides (engine/forward.c). Like block_run_ops, each is a sequence
 * of submits on one backend's compute queue, over memory of that backend.
 */
#ifndef SW_BACKEND_ENDS_H
#define SW_BACKEND_ENDS_H

#include "backend/backend.h"

/* x = tok_embd[ids] * embd_scale (gemma-facts: the embedding is scaled by
 * sqrt(n_embd), rounded to the activations' type). */
typedef struct embed_args {
    btensor tok_embd;       /* (n_vocab, n_embd) */
    float embd_scale;
    bmem ids;               /* (n_tokens) int32 */
    bmem x;                 /* (n_tokens, n_embd) result */
    uint32_t n_tokens;
} embed_args;

sw_status embed_run_ops(backend *b, const embed_args *a);

/* Gemma 4's per-layer inputs for n tokens after the scaled embedding x
 * (gemma4-facts): ple = (rmsnorm(x·Wproj * n_embd^-1/2, proj_norm per
 * layer) + table[id] * sqrt(n_pl)) * 2^-1/2, assembled token-major in tmp
 * (the table's rows borrowing ple) and then gathered layer-major into ple,
 * each layer's n_tokens rows contiguous, by the order ple_order() writes.
 * The constants are rounded from double, as transformers' Python floats
 * are. */
typedef struct ple_args {
    btensor table;          /* (n_vocab, n_layer * n_pl) */
    btensor proj;           /* (n_layer * n_pl, n_embd) */
    btensor proj_norm;      /* (n_pl) f32 */
    uint32_t n_embd, n_layer, n_pl;
    float norm_eps;
    bmem ids;               /* (n_tokens) int32 */
    bmem x;                 /* (n_tokens, n_embd) the scaled embedding */
    bmem tmp;               /* (n_tokens, n_layer * n_pl) scratch */
    bmem order;             /* (n_tokens * n_layer) int32: ple_order's */
    bmem ple;               /* (n_layer, n_tokens, n_pl) result */
    uint32_t n_tokens;
} ple_args;

/* The gather order of ple_run_ops: row l * n_tokens + t of ple is row
 * t * n_layer + l of tmp. Written by the host into `order`'s memory. */
void ple_order(int32_t *order, uint32_t n_tokens, uint32_t n_layer);

sw_status ple_run_ops(backend *b, const ple_args *a);

/* The n_out rows of x listed in rows, normed by out_norm, through the LM
 * head, soft-capped by final_softcap (0: none) into logits. */
typedef struct logits_args {
    btensor out_norm;       /* (n_embd) f32 */
    btensor lm_head;        /* (n_vocab, n_embd) */
    float norm_eps, final_softcap;
    bmem x;                 /* (n_tokens, n_embd) the residual stream */
    bmem rows;              /* (n_out) int32 */
    bmem h;                 /* (n_out, n_embd) scratch */
    bmem logits;            /* (n_out, n_vocab) result */
    uint32_t n_tokens, n_out;
} logits_args;

sw_status logits_run_ops(backend *b, const logits_args *a);

#endif
