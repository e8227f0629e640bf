/*
 * ends.c — the embedding, Gemma 4's per-layer inputs and the logits as
 * submits (ends.h), one step per line, in the style of block.c. The
 * results are the bits engine/forward.c produced when these steps were
 * its own; the forward goldens and plan-identity tests hold them there.
 */
#include "backend/ends.h"

#include <math.h>

#include "util/error.h"

sw_status embed_run_ops(backend *b, const embed_args *a) {
    const uint64_t n_embd = a->tok_embd.ne0;
    BOP_SUBMIT(b, (bop){.kind = BOP_GET_ROWS,
                        .u.get_rows = {.w = a->tok_embd, .ids = a->ids, .out = a->x,
                                       .n = a->n_tokens}});
    BOP_SUBMIT(b, (bop){.kind = BOP_SCALE,
                        .u.scale = {.x = a->x, .s = a->embd_scale, .n = a->n_tokens * n_embd}});
    return SW_OK;
}

void ple_order(int32_t *order, uint32_t n_tokens, uint32_t n_layer) {
    for (uint32_t l = 0; l < n_layer; l++)
        for (uint32_t t = 0; t < n_tokens; t++)
            order[(uint64_t)l * n_tokens + t] = (int32_t)((uint64_t)t * n_layer + l);
}

sw_status ple_run_ops(backend *b, const ple_args *a) {
    const uint32_t n = a->n_tokens, L = a->n_layer, P = a->n_pl;
    const uint64_t all = (uint64_t)n * L * P;
    BOP_SUBMIT(b, (bop){.kind = BOP_MATMUL,
                        .u.matmul = {.w = a->proj, .x = a->x, .y = a->tmp, .n_tokens = n}});
    BOP_SUBMIT(b, (bop){.kind = BOP_SCALE,
                        .u.scale = {.x = a->tmp, .s = (float)pow(a->n_embd, -0.5), .n = all}});
    BOP_SUBMIT(b, (bop){.kind = BOP_RMSNORM,
                        .u.rmsnorm = {.x = a->tmp, .w = a->proj_norm, .y = a->tmp, .n = P,
                                      .n_rows = n * L, .eps = a->norm_eps}});
    BOP_SUBMIT(b, (bop){.kind = BOP_GET_ROWS,
                        .u.get_rows = {.w = a->table, .ids = a->ids, .out = a->ple, .n = n}});
    BOP_SUBMIT(b, (bop){.kind = BOP_SCALE,
                            .u.scale = {.x = a->ple, .s = (float)sqrt(P), .n = all}});
    BOP_SUBMIT(b, (bop){.kind = BOP_ADD, .u.add = {.x = a->tmp, .y = a->ple, .n = all}});
    BOP_SUBMIT(b, (bop){.kind = BOP_SCALE,
                        .u.scale = {.x = a->tmp, .s = (float)pow(2.0, -0.5), .n = all}});
    BOP_SUBMIT(b, (bop){.kind = BOP_GATHER,
                        .u.gather = {.src = a->tmp, .idx = a->order, .dst = a->ple, .n = n * L,
                                     .n_src = n * L, .cols = P}});
    return SW_OK;
}

sw_status logits_run_ops(backend *b, const logits_args *a) {
    const uint32_t n_embd = (uint32_t)a->lm_head.ne0;
    const uint64_t n_vocab = a->lm_head.ne1;
    BOP_SUBMIT(b, (bop){.kind = BOP_GATHER,
                        .u.gather = {.src = a->x, .idx = a->rows, .dst = a->h, .n = a->n_out,
                                     .n_src = a->n_tokens, .cols = n_embd}});
    BOP_SUBMIT(b, (bop){.kind = BOP_RMSNORM,
                        .u.rmsnorm = {.x = a->h, .w = a->out_norm, .y = a->h, .n = n_embd,
                                      .n_rows = a->n_out, .eps = a->norm_eps}});
    BOP_SUBMIT(b, (bop){.kind = BOP_MATMUL,
                        .u.matmul = {.w = a->lm_head, .x = a->h, .y = a->logits,
                                     .n_tokens = a->n_out}});
    if (a->final_softcap != 0.0f)
        BOP_SUBMIT(b, (bop){.kind = BOP_SOFTCAP,
                            .u.softcap = {.x = a->logits, .cap = a->final_softcap,
                                          .n = (uint64_t)a->n_out * n_vocab}});
    return SW_OK;
}
