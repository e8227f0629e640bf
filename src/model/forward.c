/*
 * forward.c — one Gemma forward pass (forward.h). Steps follow the model
 * facts one line each; every Gemma 1/2/3 difference is a config field
 * (qk_norm, post_norms, softcaps, sliding window, per-layer RoPE base).
 */
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_ops.h"
#include "model/forward.h"
#include "util/error.h"

sw_status forward_scratch_create(const model_config *c, uint32_t n_batch, uint32_t n_ctx,
                                 int n_threads, forward_scratch *s) {
    memset(s, 0, sizeof *s);
    size_t nq = (size_t)c->n_head * c->n_embd_head;
    size_t nkv = (size_t)c->n_head_kv * c->n_embd_head;
    size_t per_token = 2 * c->n_embd + 2 * nq + 2 * nkv + 2 * (size_t)c->n_ff;
    size_t floats = per_token * n_batch + (size_t)n_threads * n_ctx + n_batch;
    s->arena = malloc(floats * sizeof(float));
    if (s->arena == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for activations (%.1f MiB)",
                         (double)floats * 4 / 1048576.0);
    float *p = s->arena;
    s->n_batch = n_batch;
    s->x = p;    p += (size_t)n_batch * c->n_embd;
    s->h = p;    p += (size_t)n_batch * c->n_embd;
    s->q = p;    p += (size_t)n_batch * nq;
    s->att = p;  p += (size_t)n_batch * nq;
    s->k = p;    p += (size_t)n_batch * nkv;
    s->v = p;    p += (size_t)n_batch * nkv;
    s->gate = p; p += (size_t)n_batch * c->n_ff;
    s->up = p;   p += (size_t)n_batch * c->n_ff;
    s->attn_scratch = p; p += (size_t)n_threads * n_ctx;
    s->pos = (int32_t *)(void *)p;
    return SW_OK;
}

void forward_scratch_free(forward_scratch *s) {
    if (s == NULL)
        return;
    free(s->arena);
    memset(s, 0, sizeof *s);
}

/* RMSNorm each head_dim slice of (n_tokens, n_heads * hd) with w (hd). */
static void norm_heads(float *x, const float *w, uint32_t n_tokens, uint32_t n_heads,
                       uint32_t hd, float eps) {
    cpu_rmsnorm(x, w, x, hd, n_tokens * n_heads, eps);
}

/* Copies this chunk's keys/values into the layer's cache rows. */
static void kv_store(kv_layer *l, const float *k, const float *v, const int32_t *pos,
                     uint32_t n_tokens, uint32_t row_floats) {
    for (uint32_t t = 0; t < n_tokens; t++) {
        size_t row = (size_t)kv_row(l, (uint32_t)pos[t]) * row_floats;
        memcpy(l->k + row, k + (size_t)t * row_floats, row_floats * sizeof(float));
        memcpy(l->v + row, v + (size_t)t * row_floats, row_floats * sizeof(float));
    }
}

static sw_status attention_block(const forward_args *a, uint32_t il) {
    const model_config *c = a->config;
    const layer_weights *w = &a->weights->layers[il];
    forward_scratch *s = a->scratch;
    kv_layer *kvl = &a->kv->layers[il];
    uint32_t n = a->n_tokens, hd = c->n_embd_head;
    bool local = model_layer_is_local(c, il);
    float base = local ? c->rope_base_local : c->rope_base_global;
    float fscale = local ? c->rope_scale_local : c->rope_scale_global;
    sw_status st;

    cpu_rmsnorm(s->x, w->attn_norm, s->h, c->n_embd, n, c->norm_eps);
    if ((st = cpu_matmul(a->pool, &w->wq, s->h, s->q, n)) != SW_OK ||
        (st = cpu_matmul(a->pool, &w->wk, s->h, s->k, n)) != SW_OK ||
        (st = cpu_matmul(a->pool, &w->wv, s->h, s->v, n)) != SW_OK)
        return st;
    if (c->qk_norm) {
        norm_heads(s->q, w->q_norm, n, c->n_head, hd, c->norm_eps);
        norm_heads(s->k, w->k_norm, n, c->n_head_kv, hd, c->norm_eps);
    }
    cpu_rope(s->q, s->pos, n, c->n_head, hd, base, fscale);
    cpu_rope(s->k, s->pos, n, c->n_head_kv, hd, base, fscale);
    cpu_scale(s->q, (uint64_t)n * c->n_head * hd, c->query_scale);
    kv_store(kvl, s->k, s->v, s->pos, n, a->kv->row_floats);
    cpu_attn_args aa = {
        .q = s->q, .k = kvl->k, .v = kvl->v, .out = s->att, .q_pos = s->pos,
        .n_tokens = n, .n_head = c->n_head, .n_head_kv = c->n_head_kv, .head_dim = hd,
        .kv_ring = kvl->ring, .window = local ? c->sliding_window : 0,
        .softcap = c->attn_softcap, .scratch = s->attn_scratch,
    };
    cpu_attention(a->pool, &aa);
    if ((st = cpu_matmul(a->pool, &w->wo, s->att, s->h, n)) != SW_OK)
        return st;
    if (c->post_norms)
        cpu_rmsnorm(s->h, w->post_attn_norm, s->h, c->n_embd, n, c->norm_eps);
    cpu_add(s->x, s->h, (uint64_t)n * c->n_embd);
    return SW_OK;
}

static sw_status ffn_block(const forward_args *a, uint32_t il) {
    const model_config *c = a->config;
    const layer_weights *w = &a->weights->layers[il];
    forward_scratch *s = a->scratch;
    uint32_t n = a->n_tokens;
    sw_status st;

    cpu_rmsnorm(s->x, w->ffn_norm, s->h, c->n_embd, n, c->norm_eps);
    if ((st = cpu_matmul(a->pool, &w->w_gate, s->h, s->gate, n)) != SW_OK ||
        (st = cpu_matmul(a->pool, &w->w_up, s->h, s->up, n)) != SW_OK)
        return st;
    cpu_geglu(s->gate, s->up, s->gate, (uint64_t)n * c->n_ff);
    if ((st = cpu_matmul(a->pool, &w->w_down, s->gate, s->h, n)) != SW_OK)
        return st;
    if (c->post_norms)
        cpu_rmsnorm(s->h, w->post_ffw_norm, s->h, c->n_embd, n, c->norm_eps);
    cpu_add(s->x, s->h, (uint64_t)n * c->n_embd);
    return SW_OK;
}

/* Final norm and LM head for the rows that need logits. */
static sw_status logits_block(const forward_args *a) {
    const model_config *c = a->config;
    forward_scratch *s = a->scratch;
    uint32_t first = a->all_logits ? 0 : a->n_tokens - 1;
    uint32_t rows = a->n_tokens - first;
    float *x = s->x + (size_t)first * c->n_embd;
    cpu_rmsnorm(x, a->weights->output_norm, s->h, c->n_embd, rows, c->norm_eps);
    sw_status st = cpu_matmul(a->pool, &a->weights->output, s->h, a->logits, rows);
    if (st != SW_OK)
        return st;
    cpu_softcap(a->logits, (uint64_t)rows * c->n_vocab, c->final_softcap);
    return SW_OK;
}

static sw_status check_args(const forward_args *a) {
    const model_config *c = a->config;
    if (a->n_tokens == 0 || a->n_tokens > a->scratch->n_batch)
        return sw_errorf(SW_ERR_ARG, "chunk of %u tokens (1..%u allowed)", a->n_tokens,
                         a->scratch->n_batch);
    if ((uint64_t)a->pos0 + a->n_tokens > a->kv->n_ctx)
        return sw_errorf(SW_ERR_ARG, "context full: positions %u..%u exceed the context of "
                         "%u tokens", a->pos0, a->pos0 + a->n_tokens - 1, a->kv->n_ctx);
    for (uint32_t t = 0; t < a->n_tokens; t++)
        if (a->ids[t] < 0 || (uint32_t)a->ids[t] >= c->n_vocab)
            return sw_errorf(SW_ERR_ARG, "token id %d is outside the vocabulary (0..%u)",
                             a->ids[t], c->n_vocab - 1);
    return SW_OK;
}

sw_status model_forward(const forward_args *a) {
    const model_config *c = a->config;
    forward_scratch *s = a->scratch;
    uint32_t n = a->n_tokens;
    sw_status st = check_args(a);
    if (st != SW_OK)
        return st;
    for (uint32_t t = 0; t < n; t++)
        s->pos[t] = (int32_t)(a->pos0 + t);

    if ((st = cpu_get_rows(&a->weights->tok_embd, a->ids, n, s->x)) != SW_OK)
        return st;
    cpu_scale(s->x, (uint64_t)n * c->n_embd, c->embd_scale);
    if (a->hook)
        a->hook(a->hook_user, -1, s->x, n, c->n_embd);
    for (uint32_t il = 0; il < c->n_layer; il++) {
        if ((st = attention_block(a, il)) != SW_OK || (st = ffn_block(a, il)) != SW_OK)
            return st;
        if (a->hook)
            a->hook(a->hook_user, (int)il, s->x, n, c->n_embd);
    }
    return a->logits ? logits_block(a) : SW_OK;
}
