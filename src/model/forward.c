/*
 * forward.c — one Gemma forward pass (forward.h). Steps follow the model
 * facts one line each; every Gemma 1/2/3 difference is a config field
 * (qk_norm, post_norms, softcaps, sliding window, per-layer RoPE base), and
 * every op goes through the backend of the side the layer runs on.
 */

#include "model/forward.h"
#include "quant/quantize.h"
#include "util/error.h"

/* Floats of the per-token activations plus the attention rows and the
 * positions (int32, counted as floats). */
static uint64_t scratch_floats(const model_config *c, uint32_t n_batch, uint32_t n_ctx,
                               uint32_t n_threads) {
    uint64_t nq = (uint64_t)c->n_head * c->n_embd_head;
    uint64_t nkv = (uint64_t)c->n_head_kv * c->n_embd_head;
    uint64_t per_token = 2ull * c->n_embd + 2 * nq + 2 * nkv + 2ull * c->n_ff;
    return per_token * n_batch + (uint64_t)n_threads * n_ctx + n_batch;
}

uint64_t forward_scratch_bytes(const model_config *c, uint32_t n_batch, uint32_t n_ctx,
                               uint32_t n_threads) {
    /* Rounded like every device buffer, so a budget of exactly the plan's
     * total fits an allocator that aligns blocks to 256 bytes. */
    uint64_t bytes = scratch_floats(c, n_batch, n_ctx, n_threads) * sizeof(float);
    return (bytes + 255) / 256 * 256;
}

void forward_scratch_init(const model_config *c, uint32_t n_batch, uint32_t n_ctx,
                          uint32_t n_threads, void *mem, forward_scratch *s) {
    size_t nq = (size_t)c->n_head * c->n_embd_head;
    size_t nkv = (size_t)c->n_head_kv * c->n_embd_head;
    float *p = mem;
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
}

/* Moves the residual stream (and positions) to the side about to compute. */
static sw_status move_stream(const forward_args *a, int from, int to) {
    const forward_side *src = &a->side[from], *dst = &a->side[to];
    uint64_t x_bytes = (uint64_t)a->n_tokens * a->config->n_embd * sizeof(float);
    uint64_t pos_bytes = (uint64_t)a->n_tokens * sizeof(int32_t);
    sw_status st;
    if (to == SIDE_HOST) {
        st = src->be->vt->copy_to_host(src->be, dst->scratch.x, src->scratch.x, x_bytes);
        return st;
    }
    if ((st = dst->be->vt->copy_to_device(dst->be, dst->scratch.x, src->scratch.x,
                                          x_bytes)) != SW_OK ||
        (st = dst->be->vt->copy_to_device(dst->be, dst->scratch.pos, src->scratch.pos,
                                          pos_bytes)) != SW_OK)
        return st;
    return SW_OK;
}

/* Writes this chunk's keys/values into the layer's cache rows in the
 * cache's type (F32: a plain copy; F16/BF16: rounded to nearest even). The
 * rows live on the same side as the layer, so this is device-local work
 * done in the backend's own memory (host memory for cpu and sim). The
 * conversion cannot fail: the type was checked when the cache was made. */
static void kv_store(const kv_cache *kv, kv_layer *l, const float *k, const float *v,
                     const int32_t *pos, uint32_t n_tokens) {
    const uint32_t n = kv->row_elems;
    for (uint32_t t = 0; t < n_tokens; t++) {
        size_t off = (size_t)kv_row(l, (uint32_t)pos[t]) * kv->row_bytes;
        (void)quant_quantize(kv->type, k + (size_t)t * n, (char *)l->k + off, n);
        (void)quant_quantize(kv->type, v + (size_t)t * n, (char *)l->v + off, n);
    }
}

static sw_status attention_block(const forward_args *a, backend *be, forward_scratch *s,
                                 const layer_weights *w, uint32_t il) {
    const backend_vtable *op = be->vt;
    const model_config *c = a->config;
    kv_layer *kvl = &a->kv->layers[il];
    uint32_t n = a->n_tokens, hd = c->n_embd_head;
    bool local = model_layer_is_local(c, il);
    float base = local ? c->rope_base_local : c->rope_base_global;
    float fscale = local ? c->rope_scale_local : c->rope_scale_global;
    sw_status st;

    op->rmsnorm(be, s->x, w->attn_norm, s->h, c->n_embd, n, c->norm_eps);
    if ((st = op->matmul(be, &w->wq, s->h, s->q, n)) != SW_OK ||
        (st = op->matmul(be, &w->wk, s->h, s->k, n)) != SW_OK ||
        (st = op->matmul(be, &w->wv, s->h, s->v, n)) != SW_OK)
        return st;
    if (c->qk_norm) {
        op->rmsnorm(be, s->q, w->q_norm, s->q, hd, n * c->n_head, c->norm_eps);
        op->rmsnorm(be, s->k, w->k_norm, s->k, hd, n * c->n_head_kv, c->norm_eps);
    }
    op->rope(be, s->q, s->pos, n, c->n_head, hd, base, fscale);
    op->rope(be, s->k, s->pos, n, c->n_head_kv, hd, base, fscale);
    op->scale(be, s->q, (uint64_t)n * c->n_head * hd, c->query_scale);
    kv_store(a->kv, kvl, s->k, s->v, s->pos, n);
    attn_args aa = {
        .q = s->q, .k = kvl->k, .v = kvl->v, .kv_type = a->kv->type, .out = s->att,
        .q_pos = s->pos,
        .n_tokens = n, .n_head = c->n_head, .n_head_kv = c->n_head_kv, .head_dim = hd,
        .kv_ring = kvl->ring, .window = local ? c->sliding_window : 0,
        .softcap = c->attn_softcap, .scratch = s->attn_scratch,
    };
    op->attention(be, &aa);
    if ((st = op->matmul(be, &w->wo, s->att, s->h, n)) != SW_OK)
        return st;
    if (c->post_norms)
        op->rmsnorm(be, s->h, w->post_attn_norm, s->h, c->n_embd, n, c->norm_eps);
    op->add(be, s->x, s->h, (uint64_t)n * c->n_embd);
    return SW_OK;
}

static sw_status ffn_block(const forward_args *a, backend *be, forward_scratch *s,
                           const layer_weights *w) {
    const backend_vtable *op = be->vt;
    const model_config *c = a->config;
    uint32_t n = a->n_tokens;
    sw_status st;

    op->rmsnorm(be, s->x, w->ffn_norm, s->h, c->n_embd, n, c->norm_eps);
    if ((st = op->matmul(be, &w->w_gate, s->h, s->gate, n)) != SW_OK ||
        (st = op->matmul(be, &w->w_up, s->h, s->up, n)) != SW_OK)
        return st;
    op->geglu(be, s->gate, s->up, s->gate, (uint64_t)n * c->n_ff);
    if ((st = op->matmul(be, &w->w_down, s->gate, s->h, n)) != SW_OK)
        return st;
    if (c->post_norms)
        op->rmsnorm(be, s->h, w->post_ffw_norm, s->h, c->n_embd, n, c->norm_eps);
    op->add(be, s->x, s->h, (uint64_t)n * c->n_embd);
    return SW_OK;
}

/* Final norm and LM head for the rows that need logits, on lm_side. */
static sw_status logits_block(const forward_args *a) {
    const model_config *c = a->config;
    backend *be = a->side[a->lm_side].be;
    forward_scratch *s = &a->side[a->lm_side].scratch;
    uint32_t first = a->all_logits ? 0 : a->n_tokens - 1;
    uint32_t rows = a->n_tokens - first;
    float *out = a->lm_side == SIDE_HOST ? a->logits : a->logits_dev;
    be->vt->rmsnorm(be, s->x + (size_t)first * c->n_embd, a->output_norm, s->h, c->n_embd,
                    rows, c->norm_eps);
    sw_status st = be->vt->matmul(be, a->lm_head, s->h, out, rows);
    if (st != SW_OK)
        return st;
    be->vt->softcap(be, out, (uint64_t)rows * c->n_vocab, c->final_softcap);
    if (a->lm_side == SIDE_HOST)
        return SW_OK;
    return be->vt->copy_to_host(be, a->logits, out,
                                (uint64_t)rows * c->n_vocab * sizeof(float));
}

static sw_status check_args(const forward_args *a) {
    const model_config *c = a->config;
    uint32_t n_batch = a->side[SIDE_HOST].scratch.n_batch;
    if (a->n_tokens == 0 || a->n_tokens > n_batch)
        return sw_errorf(SW_ERR_ARG, "chunk of %u tokens (1..%u allowed)", a->n_tokens,
                         n_batch);
    if ((uint64_t)a->pos0 + a->n_tokens > a->kv->n_ctx)
        return sw_errorf(SW_ERR_ARG, "context full: positions %u..%u exceed the context of "
                         "%u tokens", a->pos0, a->pos0 + a->n_tokens - 1, a->kv->n_ctx);
    for (uint32_t t = 0; t < a->n_tokens; t++)
        if (a->ids[t] < 0 || (uint32_t)a->ids[t] >= c->n_vocab)
            return sw_errorf(SW_ERR_ARG, "token id %d is outside the vocabulary (0..%u)",
                             a->ids[t], c->n_vocab - 1);
    return SW_OK;
}

/* Calls the hook with the stream in host memory. */
static sw_status run_hook(const forward_args *a, int layer, int side) {
    if (a->hook == NULL)
        return SW_OK;
    const forward_side *host = &a->side[SIDE_HOST];
    if (side != SIDE_HOST) {
        const forward_side *dev = &a->side[side];
        uint64_t bytes = (uint64_t)a->n_tokens * a->config->n_embd * sizeof(float);
        sw_status st = dev->be->vt->copy_to_host(dev->be, host->scratch.h, dev->scratch.x,
                                                 bytes);
        if (st != SW_OK)
            return st;
        a->hook(a->hook_user, layer, host->scratch.h, a->n_tokens, a->config->n_embd);
        return SW_OK;
    }
    a->hook(a->hook_user, layer, host->scratch.x, a->n_tokens, a->config->n_embd);
    return SW_OK;
}

static sw_status run_layers(const forward_args *a, int *side) {
    sw_status st;
    for (uint32_t il = 0; il < a->config->n_layer; il++) {
        const layer_weights *w = NULL;
        int want = SIDE_HOST;
        if ((st = a->layers.acquire(a->layers.user, il, &w, &want)) != SW_OK)
            return st;
        if (want != *side && (st = move_stream(a, *side, want)) != SW_OK)
            return st;
        *side = want;
        backend *be = a->side[want].be;
        forward_scratch *s = &a->side[want].scratch;
        st = attention_block(a, be, s, w, il);
        if (st == SW_OK)
            st = ffn_block(a, be, s, w);
        a->layers.release(a->layers.user, il);
        if (st != SW_OK || (st = run_hook(a, (int)il, want)) != SW_OK)
            return st;
    }
    return SW_OK;
}

sw_status model_forward(const forward_args *a) {
    const model_config *c = a->config;
    forward_side *host = &a->side[SIDE_HOST];
    uint32_t n = a->n_tokens;
    int side = SIDE_HOST;
    sw_status st = check_args(a);
    if (st != SW_OK)
        return st;
    for (uint32_t t = 0; t < n; t++)
        host->scratch.pos[t] = (int32_t)(a->pos0 + t);

    /* The embedding is a lookup of n rows: always on the host. */
    if ((st = host->be->vt->get_rows(host->be, &a->host_weights->tok_embd, a->ids, n,
                                     host->scratch.x)) != SW_OK)
        return st;
    host->be->vt->scale(host->be, host->scratch.x, (uint64_t)n * c->n_embd, c->embd_scale);
    if ((st = run_hook(a, -1, SIDE_HOST)) != SW_OK || (st = run_layers(a, &side)) != SW_OK)
        return st;
    if (a->logits == NULL)
        return SW_OK;
    if (side != a->lm_side && (st = move_stream(a, side, a->lm_side)) != SW_OK)
        return st;
    return logits_block(a);
}
