/*
 * act.h — the activations buffer of one side (host or device): the arrays
 * a forward pass over up to n_tok tokens reads and writes, carved out of
 * one allocation. The planner counts act_layout.bytes ("activations") and
 * the engine allocates exactly that and points each array at its offset,
 * so the two cannot drift apart.
 *
 * Per token: the residual stream x, the branch h, q and the attention
 * output (n_head*hd), k and v (n_head_kv*hd), gate and up (n_ff), and the
 * int32 metadata: token id, position, sequence, and the rows whose logits
 * are wanted; Gemma 4's per-layer inputs. Attention's softmax rows are kernel scratch (a GPU keeps
 * them on chip; the cpu backend owns its own), not activations.
 */
#ifndef SW_MODEL_ACT_H
#define SW_MODEL_ACT_H

#include <stdint.h>

#include "model/config.h"

typedef struct act_layout {
    uint32_t n_tok;          /* most tokens per forward */
    uint64_t x, h;           /* byte offsets: (n_tok, n_embd) f32 */
    uint64_t q, att;         /* (n_tok, n_head * hd) */
    uint64_t k, v;           /* (n_tok, n_head_kv * hd) */
    uint64_t gate, up;       /* (n_tok, n_ff) */
    uint64_t ids, pos, seq;  /* (n_tok) int32 */
    uint64_t out_rows;       /* (n_tok) int32: rows of x whose logits are wanted */
    /* Gemma 4's per-layer inputs (empty without): ple holds each layer's
     * (n, n_pl) rows one layer after another for a forward of n tokens;
     * ple_tmp the same values token-major as they are assembled; ple_idx
     * (n_tok * n_layer) int32 the rows that turn one into the other */
    uint64_t ple, ple_tmp, ple_idx;
    /* Gemma 4's experts (empty without; block.h's block_acts says what) */
    uint64_t moe_r, moe_scores, moe_ids, moe_w, moe_x, moe_gu, moe_yd, moe_out;
    uint64_t bytes;          /* the whole buffer, a multiple of 256 */
} act_layout;

void act_layout_init(const model_config *c, uint32_t n_tok, act_layout *out);

#endif
