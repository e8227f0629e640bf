/*
 * block.c — block_run_ops(): one Gemma block (block.h) as a sequence of
 * submits, one step per line, in the order of gemma-facts §1.1. Every
 * Gemma 1/2/3 difference is a field (qk_norm, post_norms, softcap, window,
 * RoPE base and scale), never a branch on the architecture. A backend with
 * a fused `block` entry must match these bits.
 */
#include "backend/block.h"

#include <math.h>

#include "util/error.h"

static sw_status norm(backend *b, bmem x, const btensor *w, bmem y, uint32_t n,
                      uint32_t rows, float eps) {
    BOP_SUBMIT(b, (bop){.kind = BOP_RMSNORM,
                        .u.rmsnorm = {.x = x, .w = *w, .y = y, .n = n, .n_rows = rows,
                                      .eps = eps}});
    return SW_OK;
}

static sw_status matmul_as(backend *b, const btensor *w, bmem x, bmem y, uint32_t n,
                           bool fine, bool x_again) {
    BOP_SUBMIT(b, (bop){.kind = BOP_MATMUL,
                        .u.matmul = {.w = *w, .x = x, .y = y, .n_tokens = n, .fine = fine,
                                     .x_again = x_again}});
    return SW_OK;
}

static sw_status matmul(backend *b, const btensor *w, bmem x, bmem y, uint32_t n) {
    return matmul_as(b, w, x, y, n, false, false);
}

/* A matmul right after one over the same x (the shared input of Q, K and
 * V, of gate and up): the backend may reuse what it made of x. */
static sw_status matmul_again(backend *b, const btensor *w, bmem x, bmem y, uint32_t n) {
    return matmul_as(b, w, x, y, n, false, true);
}

static sw_status rope(backend *b, const block_args *a, bmem x, uint32_t n_heads) {
    BOP_SUBMIT(b, (bop){.kind = BOP_ROPE,
                        .u.rope = {.x = x, .pos = a->act.pos, .n_tokens = a->n_tokens,
                                   .n_heads = n_heads, .head_dim = a->shape->head_dim,
                                   .base = a->rope_base, .freq_scale = a->rope_scale,
                                   .n_pairs = a->shape->rope_pairs}});
    return SW_OK;
}

static sw_status scale(backend *b, bmem x, uint64_t n, float s) {
    BOP_SUBMIT(b, (bop){.kind = BOP_SCALE, .u.scale = {.x = x, .s = s, .n = n}});
    return SW_OK;
}

/* k and v from h: v from the key projection (k_eq_v) or its own, and
 * normed per head without a weight (v_norm), before k's norm and RoPE. */
static sw_status keys_values(backend *b, const block_args *a) {
    const block_shape *s = a->shape;
    const block_acts *t = &a->act;
    const uint32_t n = a->n_tokens, rows = n * s->n_head_kv;
    SW_TRY(matmul_again(b, &a->w[BW_K], t->h, t->k, n));
    bmem v_src = t->k;
    if (!s->k_eq_v) {
        SW_TRY(matmul_again(b, &a->w[BW_V], t->h, t->v, n));
        v_src = t->v;
    }
    if (s->v_norm) /* into v: with k_eq_v, k stays for its own norm */
        return norm(b, v_src, &(btensor){0}, t->v, s->head_dim, rows, s->norm_eps);
    if (s->k_eq_v)
        return sw_errorf(SW_ERR_UNSUPPORTED, "keys as values without the value norm");
    return SW_OK;
}

static sw_status add(backend *b, bmem x, bmem y, uint64_t n) {
    BOP_SUBMIT(b, (bop){.kind = BOP_ADD, .u.add = {.x = x, .y = y, .n = n}});
    return SW_OK;
}

static sw_status attention_half(backend *b, const block_args *a) {
    const block_shape *s = a->shape;
    const block_acts *t = &a->act;
    const btensor *w = a->w;
    uint32_t n = a->n_tokens, hd = s->head_dim;

    SW_TRY(norm(b, t->x, &w[BW_ATTN_NORM], t->h, s->n_embd, n, s->norm_eps));
    SW_TRY(matmul(b, &w[BW_Q], t->h, t->q, n));
    if (!s->kv_shared)
        SW_TRY(keys_values(b, a));
    if (s->qk_norm) {
        SW_TRY(norm(b, t->q, &w[BW_Q_NORM], t->q, hd, n * s->n_head, s->norm_eps));
        if (!s->kv_shared)
            SW_TRY(norm(b, t->k, &w[BW_K_NORM], t->k, hd, n * s->n_head_kv, s->norm_eps));
    }
    SW_TRY(rope(b, a, t->q, s->n_head));
    if (!s->kv_shared)
        SW_TRY(rope(b, a, t->k, s->n_head_kv));
    if (s->query_scale != 1.0f) /* Gemma 4 normalizes q instead */
        SW_TRY(scale(b, t->q, (uint64_t)n * s->n_head * hd, s->query_scale));
    if (!s->kv_shared)
        BOP_SUBMIT(b, (bop){.kind = BOP_KV_APPEND,
                            .u.kv_append = {.k = t->k, .v = t->v, .pos = t->pos, .seq = t->seq,
                                            .cache = a->kv, .n_tokens = n}});
    BOP_SUBMIT(b, (bop){.kind = BOP_ATTENTION,
                        .u.attention = {.q = t->q, .out = t->att,
                                        .pos = t->apos.buf != NULL ? t->apos : t->pos,
                                        .seq = t->seq,
                                        .cache = a->kv, .n_tokens = n, .n_head = s->n_head,
                                        .n_head_kv = s->n_head_kv, .head_dim = hd,
                                        .window = a->window, .softcap = s->attn_softcap,
                                        .max_keys = a->max_keys}});
    SW_TRY(matmul(b, &w[BW_O], t->att, t->h, n));
    if (s->post_norms)
        SW_TRY(norm(b, t->h, &w[BW_POST_ATTN_NORM], t->h, s->n_embd, n, s->norm_eps));
    return add(b, t->x, t->h, (uint64_t)n * s->n_embd);
}

/* Gemma 4's experts beside the MLP, into moe_out: routed by the residual
 * (normed without a weight, times the router's scale and n_embd^-1/2),
 * fed rmsnorm(x, ffn_norm_2), their sum normed by post_ffw_norm_2. The
 * routing and the experts' input (block_run_route), the experts, the
 * norm (block_run_experts_norm). */
sw_status block_run_route(backend *b, const block_args *a) {
    const block_shape *s = a->shape;
    const block_acts *t = &a->act;
    const btensor *w = a->w;
    const uint32_t n = a->n_tokens, k = s->n_expert_used;
    SW_TRY(norm(b, t->x, &w[BW_ROUTER_SCALE], t->moe_r, s->n_embd, n, s->norm_eps));
    SW_TRY(scale(b, t->moe_r, (uint64_t)n * s->n_embd, (float)pow(s->n_embd, -0.5)));
    SW_TRY(matmul(b, &w[BW_ROUTER], t->moe_r, t->moe_scores, n));
    BOP_SUBMIT(b, (bop){.kind = BOP_MOE_ROUTE,
                        .u.moe_route = {.scores = t->moe_scores, .ids = t->moe_ids,
                                        .weights = t->moe_w, .expert_scale = w[BW_EXPERT_SCALE],
                                        .n_tokens = n, .n_expert = s->n_expert, .k = k}});
    return norm(b, t->x, &w[BW_FFN_NORM_2], t->moe_x, s->n_embd, n, s->norm_eps);
}

sw_status block_run_experts_norm(backend *b, const block_args *a) {
    const block_acts *t = &a->act;
    return norm(b, t->moe_out, &a->w[BW_POST_FFW_NORM_2], t->moe_out, a->shape->n_embd,
                a->n_tokens, a->shape->norm_eps);
}

static sw_status experts(backend *b, const block_args *a) {
    const block_shape *s = a->shape;
    const block_acts *t = &a->act;
    const btensor *w = a->w;
    SW_TRY(block_run_route(b, a));
    BOP_SUBMIT(b, (bop){.kind = BOP_MOE_EXPERTS,
                        .u.moe_experts = {.gate_up = w[BW_GATE_UP_EXPS], .down = w[BW_DOWN_EXPS],
                                          .x = t->moe_x, .ids = t->moe_ids, .weights = t->moe_w,
                                          .out = t->moe_out, .xg = t->moe_r, .gu = t->moe_gu,
                                          .yd = t->moe_yd, .n_tokens = a->n_tokens,
                                          .n_expert = s->n_expert, .k = s->n_expert_used}});
    return block_run_experts_norm(b, a);
}

/* The dense MLP into h (with experts beside it, normed by
 * post_ffw_norm_1). */
static sw_status ffn_dense(backend *b, const block_args *a) {
    const block_shape *s = a->shape;
    const block_acts *t = &a->act;
    const btensor *w = a->w;
    uint32_t n = a->n_tokens;

    SW_TRY(norm(b, t->x, &w[BW_FFN_NORM], t->h, s->n_embd, n, s->norm_eps));
    SW_TRY(matmul(b, &w[BW_GATE], t->h, t->gate, n));
    SW_TRY(matmul_again(b, &w[BW_UP], t->h, t->up, n));
    BOP_SUBMIT(b, (bop){.kind = BOP_GEGLU, .u.geglu = {.gate = t->gate, .up = t->up,
                                                       .out = t->gate,
                                                       .n = (uint64_t)n * s->n_ff}});
    /* The GeGLU product spans orders of magnitude within a row. */
    SW_TRY(matmul_as(b, &w[BW_DOWN], t->gate, t->h, n, true, false));
    if (s->n_expert)
        SW_TRY(norm(b, t->h, &w[BW_POST_FFW_NORM_1], t->h, s->n_embd, n, s->norm_eps));
    return SW_OK;
}

/* The rest of the FFN: the experts' output (computed here, or already in
 * moe_out) added to h, the post-FFN norm and the residual. */
static sw_status ffn_rest(backend *b, const block_args *a) {
    const block_shape *s = a->shape;
    const block_acts *t = &a->act;
    uint32_t n = a->n_tokens;
    if (s->n_expert) {
        if (a->phase != BLOCK_FROM_EXPERTS)
            SW_TRY(experts(b, a));
        SW_TRY(add(b, t->h, t->moe_out, (uint64_t)n * s->n_embd));
    }
    if (s->post_norms)
        SW_TRY(norm(b, t->h, &a->w[BW_POST_FFW_NORM], t->h, s->n_embd, n, s->norm_eps));
    return add(b, t->x, t->h, (uint64_t)n * s->n_embd);
}

/* Gemma 4's per-layer input: g = gelu_tanh(x·Wgate) * ple (in the gate
 * buffer), h = rmsnorm(g·Wproj, ple_norm), x += h. */
static sw_status ple_part(backend *b, const block_args *a) {
    const block_shape *s = a->shape;
    const block_acts *t = &a->act;
    const btensor *w = a->w;
    const uint32_t n = a->n_tokens;
    SW_TRY(matmul(b, &w[BW_PLE_GATE], t->x, t->gate, n));
    BOP_SUBMIT(b, (bop){.kind = BOP_GEGLU, .u.geglu = {.gate = t->gate, .up = t->ple,
                                                       .out = t->gate,
                                                       .n = (uint64_t)n * s->n_pl}});
    SW_TRY(matmul(b, &w[BW_PLE_PROJ], t->gate, t->h, n));
    SW_TRY(norm(b, t->h, &w[BW_PLE_NORM], t->h, s->n_embd, n, s->norm_eps));
    return add(b, t->x, t->h, (uint64_t)n * s->n_embd);
}

sw_status block_run_experts(backend *b, const block_args *a) {
    if (a->shape->n_expert == 0)
        return sw_errorf(SW_ERR_ARG, "block: experts of a layer without experts");
    return experts(b, a);
}

sw_status block_run_ops(backend *b, const block_args *a) {
    if (a->phase != BLOCK_FROM_EXPERTS) {
        SW_TRY(attention_half(b, a));
        SW_TRY(ffn_dense(b, a));
        if (a->phase == BLOCK_TO_EXPERTS)
            return SW_OK;
    }
    SW_TRY(ffn_rest(b, a));
    if (a->shape->n_pl)
        SW_TRY(ple_part(b, a));
    if (a->layer_scale != 0.0f)
        SW_TRY(scale(b, a->act.x, (uint64_t)a->n_tokens * a->shape->n_embd, a->layer_scale));
    return SW_OK;
}
