/*
 * act.c — the activations layout (act.h). Arrays follow each other in the
 * order below, each starting 64-byte aligned (a cache line, and enough
 * for any SIMD load), and the total is rounded to the device allocators'
 * 256-byte blocks so a budget of exactly the plan's total fits.
 */
#include "model/act.h"

static uint64_t take(uint64_t *at, uint64_t bytes) {
    uint64_t off = *at;
    *at += (bytes + 63) / 64 * 64;
    return off;
}

void act_layout_init(const model_config *c, uint32_t n_tok, act_layout *L) {
    const uint64_t n = n_tok, F = sizeof(float), I = sizeof(int32_t);
    const uint64_t nq = (uint64_t)c->n_head * c->n_embd_head;
    const uint64_t nkv = (uint64_t)c->n_head_kv * c->n_embd_head;
    uint64_t at = 0;
    L->n_tok = n_tok;
    L->x = take(&at, n * c->n_embd * F);
    L->h = take(&at, n * c->n_embd * F);
    L->q = take(&at, n * nq * F);
    L->att = take(&at, n * nq * F);
    L->k = take(&at, n * nkv * F);
    L->v = take(&at, n * nkv * F);
    L->gate = take(&at, n * c->n_ff * F);
    L->up = take(&at, n * c->n_ff * F);
    L->ids = take(&at, n * I);
    L->pos = take(&at, n * I);
    L->seq = take(&at, n * I);
    L->out_rows = take(&at, n * I);
    const uint64_t pl = n * model_ple_layers(c) * c->n_embd_per_layer;
    L->ple = take(&at, pl * F);
    L->ple_tmp = take(&at, pl * F);
    L->ple_idx = take(&at, n * model_ple_layers(c) * I);
    const uint64_t me = c->n_expert ? n * c->n_embd * F : 0;
    L->moe_r = take(&at, me);
    L->moe_scores = take(&at, n * c->n_expert * F);
    L->moe_ids = take(&at, n * c->n_expert_used * I);
    L->moe_w = take(&at, n * c->n_expert_used * F);
    L->moe_x = take(&at, me);
    L->moe_gu = take(&at, c->n_expert ? n * 2 * c->n_ff_exp * F : 0);
    L->moe_yd = take(&at, me);
    L->moe_out = take(&at, me);
    L->bytes = (at + 255) / 256 * 256;
}
