/*
 * assist.c — a Gemma 4 assistant over its target's caches (assist.h).
 *
 * Where it runs: the side of the target's two cache layers it reads (both
 * on the device, or both in host memory). On the device its weights are
 * copied into one buffer at creation (its layers packed as the target's
 * are, then its projections, output norm and head), beside one buffer of
 * activations; on the host they are read where they lie. Each step is a
 * handful of ops on that backend: the projection in, its layers
 * (block_run_ops, attention masked at the position before the query's),
 * the output norm, the projection out and the head. The embedding of the
 * token is the target's, looked up on the host; a centroid-masked head
 * scores its chosen tokens on the host, from the normed rows.
 */
#include <stdlib.h>
#include <string.h>

#include "backend/block.h"
#include "backend/ends.h"
#include "engine/assist.h"
#include "engine/engine_internal.h"
#include "engine/pack.h"
#include "quant/dequant.h"
#include "quant/types.h"
#include "util/error.h"
#include "util/topk.h"

/* The activations beyond act_layout's, after it in the same buffer. */
typedef struct assist_layout {
    act_layout act;                /* the assistant's own widths, n_rows tokens */
    uint64_t in, hid, out, apos;   /* (n, 2 H_t), (n, H_t), (n, V or C) f32; (n) int32 */
    uint64_t bytes;
} assist_layout;

/* Where each weight sits in the device copy (offsets), or nothing (host). */
typedef struct assist_weights_layout {
    layer_pack packs[MODEL_MAX_LAYERS];
    uint64_t layer_at[MODEL_MAX_LAYERS];
    uint64_t pre, post, norm, head;  /* head: the dense head or the centroids */
    uint64_t bytes;
} assist_weights_layout;

struct engine_assist {
    sw_engine *t;
    model_config c;                /* the assistant's */
    model_weights w;
    tensor_view pre, post, centroids, order;
    side_id side;
    backend *be;
    uint32_t kv_layer[2];          /* the target's cache layers read: [0] full, [1] sliding */
    uint32_t n_rows, n_vocab, n_embd_t, n_out;  /* n_out: V (dense) or C */
    assist_layout L;
    backend_buf *wbuf, *abuf;      /* device copies (NULL on the host side) */
    uint8_t *host_acts;            /* host side: the activations */
    backend_event *done;
    dev_layer *layers;             /* (n_layer) views on the side */
    btensor b_pre, b_post, b_norm, b_head;
    block_acts acts;
    /* host scratch */
    int32_t *ids, *pos, *seq, *apos; /* (n_rows) */
    float *emb, *in, *h, *out;     /* (n, H_t), (n, 2 H_t), (n, H_a), (n, n_out) */
    float *row;                    /* (H_a) a dequantized head row */
    uint32_t *top;                 /* (top_k) chosen centroids */
    float *sel;                    /* (top_k * tokens per centroid) their tokens' logits */
};

static uint64_t take(uint64_t *at, uint64_t bytes) {
    const uint64_t here = *at;
    *at += (bytes + 255) & ~(uint64_t)255;
    return here;
}

static void layout_init(const model_config *c, uint32_t n_rows, uint32_t n_embd_t,
                        uint32_t n_out, assist_layout *L) {
    const uint64_t n = n_rows, F = sizeof(float);
    act_layout_init(c, n_rows, &L->act);
    uint64_t at = L->act.bytes;
    L->in = take(&at, n * 2 * n_embd_t * F);
    L->hid = take(&at, n * n_embd_t * F);
    L->out = take(&at, n * n_out * F);
    L->apos = take(&at, n * sizeof(int32_t));
    L->bytes = at;
}

/* The target's last full and last sliding layer that keep a cache: what
 * transformers' Gemma 4 stores for an assistant ("store" layers). */
static sw_status cache_layers(const model_config *t, uint32_t out[2]) {
    out[0] = out[1] = UINT32_MAX;
    for (uint32_t il = 0; il < t->n_layer; il++)
        if (model_layer_owns_kv(t, il))
            out[model_layer_is_local(t, il) ? 1 : 0] = il;
    return SW_OK;
}

/* The assistant's tensors outside its layers. */
static sw_status bind_extra(const gguf_file *f, const model_config *c, uint32_t n_embd_t,
                            tensor_view *pre, tensor_view *post, tensor_view *centroids,
                            tensor_view *order) {
    static const char *const names[4] = {"mtp.pre_proj.weight", "mtp.post_proj.weight",
                                         "mtp.centroids.weight", "mtp.token_order"};
    tensor_view *views[4] = {pre, post, centroids, order};
    const uint64_t shape[4][2] = {{2ull * n_embd_t, c->n_embd},
                                  {c->n_embd, n_embd_t},
                                  {c->n_embd, c->n_centroid},
                                  {c->n_vocab, 1}};
    for (int i = 0; i < 4; i++) {
        memset(views[i], 0, sizeof *views[i]);
        if (i >= 2 && c->n_centroid == 0)
            continue;
        const gguf_tensor *t = gguf_find_tensor(f, names[i]);
        if (t == NULL)
            return sw_errorf(SW_ERR_FORMAT, "the assistant has no tensor '%s'", names[i]);
        const uint64_t ne1 = t->n_dims > 1 ? t->ne[1] : 1;
        if (t->ne[0] != shape[i][0] || ne1 != shape[i][1] || (i == 3 && t->type != SW_TYPE_F32))
            return sw_errorf(SW_ERR_FORMAT, "the assistant's '%s' has shape [%llu, %llu], "
                             "expected [%llu, %llu]", names[i], (unsigned long long)t->ne[0],
                             (unsigned long long)ne1, (unsigned long long)shape[i][0],
                             (unsigned long long)shape[i][1]);
        *views[i] = (tensor_view){.name = names[i], .type = t->type, .n_dims = t->n_dims,
                                  .ne = {t->ne[0], ne1, 1, 1}, .n_bytes = t->n_bytes,
                                  .data = t->data};
    }
    if (c->n_centroid && c->n_vocab % c->n_centroid != 0)
        return sw_errorf(SW_ERR_FORMAT, "the assistant's %u tokens do not split into its %u "
                         "centroids", c->n_vocab, c->n_centroid);
    for (uint32_t i = 0; order->data != NULL && i < c->n_vocab; i++) {
        const float v = ((const float *)order->data)[i];
        if (!(v >= 0.0f && v < (float)c->n_vocab))
            return sw_errorf(SW_ERR_FORMAT, "the assistant's token ordering holds %g, not a "
                             "token id", (double)v);
    }
    return SW_OK;
}

/* That model is an assistant for target e, and where it would run. */
static sw_status check_pair(const sw_engine *e, const model_config *a, uint32_t kv[2],
                            side_id *side) {
    const model_config *t = &e->config;
    if (strcmp(t->arch, "gemma4") != 0)
        return sw_errorf(SW_ERR_ARG, "a Gemma 4 assistant drafts for a Gemma 4 target; this "
                         "target is %s", t->arch);
    if (a->backbone_embd != t->n_embd)
        return sw_errorf(SW_ERR_ARG, "the assistant was made for a target %u wide (its "
                         "backbone_hidden_size); this target is %u wide: not its assistant",
                         a->backbone_embd, t->n_embd);
    if (a->n_vocab != t->n_vocab)
        return sw_errorf(SW_ERR_ARG, "the assistant's vocabulary has %u tokens, the "
                         "target's %u: not its assistant", a->n_vocab, t->n_vocab);
    cache_layers(t, kv);
    for (uint32_t il = 0; il < a->n_layer; il++) {
        const bool local = model_layer_is_local(a, il);
        const uint32_t src = kv[local ? 1 : 0];
        if (src == UINT32_MAX)
            return sw_errorf(SW_ERR_ARG, "the assistant's layer %u attends over a %s cache; "
                             "the target has none", il, local ? "sliding" : "full");
        if (model_layer_n_head_kv(a, il) != model_layer_n_head_kv(t, src) ||
            model_layer_head_dim(a, il) != model_layer_head_dim(t, src))
            return sw_errorf(SW_ERR_ARG, "the assistant's layer %u reads %u KV heads of %u; "
                             "the target's layer %u keeps %u of %u: not its assistant", il,
                             model_layer_n_head_kv(a, il), model_layer_head_dim(a, il), src,
                             model_layer_n_head_kv(t, src), model_layer_head_dim(t, src));
    }
    if (a->sliding_window > t->sliding_window)
        return sw_errorf(SW_ERR_ARG, "the assistant's sliding window (%u) is wider than the "
                         "target's (%u), whose cache keeps only that", a->sliding_window,
                         t->sliding_window);
    const bool dev[2] = {kv[0] != UINT32_MAX && e->plan->kv_tier[kv[0]] == TIER_DEVICE,
                         kv[1] != UINT32_MAX && e->plan->kv_tier[kv[1]] == TIER_DEVICE};
    if (kv[0] != UINT32_MAX && kv[1] != UINT32_MAX && dev[0] != dev[1])
        return sw_errorf(SW_ERR_ARG, "the target's layers %u and %u, whose caches the "
                         "assistant reads, keep them on different sides (device and host): "
                         "place the two alike (--place)", kv[0], kv[1]);
    *side = dev[0] || dev[1] ? SIDE_DEVICE : SIDE_HOST;
    return SW_OK;
}

static void weights_layout(const engine_assist *a, assist_weights_layout *W) {
    uint64_t at = 0;
    for (uint32_t il = 0; il < a->c.n_layer; il++) {
        layer_pack_build(&a->c, il, &a->w.layers[il], &W->packs[il]);
        W->layer_at[il] = at;
        at += W->packs[il].total_bytes;
    }
    const tensor_view *head = a->c.n_centroid ? &a->centroids : &a->w.output;
    W->pre = take(&at, a->pre.n_bytes);
    W->post = take(&at, a->post.n_bytes);
    W->norm = take(&at, a->w.output_norm.n_bytes);
    W->head = take(&at, head->n_bytes);
    W->bytes = at;
}

static btensor view_at(const tensor_view *v, bmem at) {
    return (btensor){.name = v->name, .type = v->type, .ne0 = v->ne[0],
                     .ne1 = v->n_dims > 1 ? v->ne[1] : 1, .n_bytes = v->n_bytes, .mem = at};
}

/* The assistant's config, weights and extras from its model; *a zeroed. */
static sw_status open_model(engine_assist *a, const sw_model *model) {
    SW_TRY(model_config_assistant_from_gguf(model->gguf, &a->c));
    SW_TRY(model_weights_bind(model->gguf, &a->c, &a->w));
    return SW_OK;
}

sw_status sw_assistant_device_bytes(const sw_model *model, uint32_t n_rows, uint64_t *bytes) {
    if (model == NULL || bytes == NULL)
        return sw_errorf(SW_ERR_ARG, "sw_assistant_device_bytes: NULL argument");
    *bytes = 0;
    engine_assist *a = calloc(1, sizeof *a);
    assist_weights_layout *W = malloc(sizeof *W);
    sw_status st = a == NULL || W == NULL ? sw_errorf(SW_ERR_OOM_HOST, "out of host memory")
                                          : SW_OK;
    if (st == SW_OK && (st = open_model(a, model)) == SW_OK &&
        (st = bind_extra(model->gguf, &a->c, a->c.backbone_embd, &a->pre, &a->post,
                         &a->centroids, &a->order)) == SW_OK) {
        weights_layout(a, W);
        layout_init(&a->c, n_rows ? n_rows : 1, a->c.backbone_embd,
                    a->c.n_centroid ? a->c.n_centroid : a->c.n_vocab, &a->L);
        *bytes = W->bytes + a->L.bytes;
    }
    if (a != NULL)
        model_weights_free(&a->w);
    free(W);
    free(a);
    return st;
}

/* Device side: one buffer of weights, uploaded now, and one of
 * activations. */
static sw_status load_device(engine_assist *a) {
    assist_weights_layout *W = malloc(sizeof *W);
    if (W == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for the assistant");
    weights_layout(a, W);
    backend *be = a->be;
    const tensor_view *head = a->c.n_centroid ? &a->centroids : &a->w.output;
    sw_status st = be->vt->alloc(be, W->bytes, "the assistant's weights", &a->wbuf);
    for (uint32_t il = 0; st == SW_OK && il < a->c.n_layer; il++) {
        const layer_pack *p = &W->packs[il];
        const bmem base = {a->wbuf, W->layer_at[il]};
        for (uint32_t i = 0; st == SW_OK && i < p->n_items; i++)
            st = be->vt->copy_h2d(be, BQ_COPY, bmem_at(base, p->items[i].offset),
                                  p->items[i].src, p->items[i].bytes);
        layer_pack_bind(&a->w.layers[il], p, base, a->layers[il].w);
    }
    const struct { const tensor_view *v; uint64_t at; btensor *b; } g[4] = {
        {&a->pre, W->pre, &a->b_pre}, {&a->post, W->post, &a->b_post},
        {&a->w.output_norm, W->norm, &a->b_norm}, {head, W->head, &a->b_head}};
    for (int i = 0; st == SW_OK && i < 4; i++) {
        st = be->vt->copy_h2d(be, BQ_COPY, (bmem){a->wbuf, g[i].at}, g[i].v->data,
                              g[i].v->n_bytes);
        *g[i].b = view_at(g[i].v, (bmem){a->wbuf, g[i].at});
    }
    free(W);
    if (st == SW_OK)
        st = be->vt->sync(be); /* the host copies are the mapping's: no wait needed, but
                                * a failed upload is reported here, not mid-draft */
    if (st == SW_OK)
        st = be->vt->alloc(be, a->L.bytes, "the assistant's activations", &a->abuf);
    if (st == SW_OK)
        st = be->vt->event_create(be, &a->done);
    return st;
}

static void load_host(engine_assist *a) {
    backend_buf *hm = a->be->vt->host_memory(a->be);
    const tensor_view *head = a->c.n_centroid ? &a->centroids : &a->w.output;
    for (uint32_t il = 0; il < a->c.n_layer; il++)
        layer_bind_host(&a->w.layers[il], hm, a->layers[il].w);
    a->b_pre = btensor_of_host(&a->pre, hm);
    a->b_post = btensor_of_host(&a->post, hm);
    a->b_norm = btensor_of_host(&a->w.output_norm, hm);
    a->b_head = btensor_of_host(head, hm);
}

static void carve(engine_assist *a, bmem base) {
    const act_layout *L = &a->L.act;
    a->acts = (block_acts){
        .x = bmem_at(base, L->x), .h = bmem_at(base, L->h), .q = bmem_at(base, L->q),
        .att = bmem_at(base, L->att), .k = bmem_at(base, L->k), .v = bmem_at(base, L->v),
        .gate = bmem_at(base, L->gate), .up = bmem_at(base, L->up),
        .pos = bmem_at(base, L->pos), .seq = bmem_at(base, L->seq),
        .apos = bmem_at(base, a->L.apos)};
}

sw_status engine_assist_create(sw_engine *target, const sw_model *model, uint32_t n_rows,
                               engine_assist **out) {
    *out = NULL;
    if (target == NULL || model == NULL || n_rows == 0)
        return sw_errorf(SW_ERR_ARG, "engine_assist_create: NULL argument or no rows");
    engine_assist *a = calloc(1, sizeof *a);
    if (a == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for the assistant");
    a->t = target;
    sw_status st = open_model(a, model);
    if (st == SW_OK)
        st = check_pair(target, &a->c, a->kv_layer, &a->side);
    if (st == SW_OK)
        st = bind_extra(model->gguf, &a->c, target->config.n_embd, &a->pre, &a->post,
                        &a->centroids, &a->order);
    if (st != SW_OK) {
        engine_assist_destroy(a);
        return st;
    }
    const uint64_t H = target->config.n_embd, Ha = a->c.n_embd;
    a->n_rows = n_rows;
    a->n_vocab = a->c.n_vocab;
    a->n_embd_t = (uint32_t)H;
    a->n_out = a->c.n_centroid ? a->c.n_centroid : a->c.n_vocab;
    a->be = target->side[a->side].be;
    layout_init(&a->c, n_rows, (uint32_t)H, a->n_out, &a->L);
    a->layers = calloc(a->c.n_layer, sizeof *a->layers);
    a->ids = malloc(4ull * n_rows * sizeof *a->ids);
    a->emb = malloc(n_rows * H * sizeof(float));
    a->in = malloc(n_rows * 2 * H * sizeof(float));
    a->h = malloc(n_rows * Ha * sizeof(float));
    a->out = malloc((uint64_t)n_rows * a->n_out * sizeof(float));
    a->row = malloc(Ha * sizeof(float));
    a->top = malloc((a->c.centroid_top_k + 1) * sizeof *a->top);
    a->sel = malloc(((uint64_t)a->c.centroid_top_k * (a->c.n_centroid ? a->c.n_vocab /
                                                                          a->c.n_centroid
                                                                    : 0) + 1) * sizeof *a->sel);
    if (a->layers == NULL || a->ids == NULL || a->emb == NULL || a->in == NULL ||
        a->h == NULL || a->out == NULL || a->row == NULL || a->top == NULL || a->sel == NULL) {
        engine_assist_destroy(a);
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for the assistant");
    }
    a->pos = a->ids + n_rows;
    a->seq = a->pos + n_rows;
    a->apos = a->seq + n_rows;
    if (a->side == SIDE_DEVICE) {
        st = load_device(a);
        if (st == SW_OK)
            carve(a, (bmem){a->abuf, 0});
    } else {
        load_host(a);
        a->host_acts = aligned_alloc(256, a->L.bytes);
        if (a->host_acts == NULL)
            st = sw_errorf(SW_ERR_OOM_HOST, "out of host memory for the assistant's "
                           "activations");
        else
            carve(a, (bmem){a->be->vt->host_memory(a->be), (uint64_t)(uintptr_t)a->host_acts});
    }
    if (st != SW_OK) {
        engine_assist_destroy(a);
        return st;
    }
    *out = a;
    return SW_OK;
}

void engine_assist_destroy(engine_assist *a) {
    if (a == NULL)
        return;
    if (a->be != NULL && (a->wbuf != NULL || a->abuf != NULL)) {
        (void)a->be->vt->sync(a->be);
        a->be->vt->free(a->be, a->wbuf);
        a->be->vt->free(a->be, a->abuf);
    }
    if (a->done != NULL)
        a->be->vt->event_destroy(a->be, a->done);
    model_weights_free(&a->w);
    free(a->host_acts);
    free(a->layers);
    free(a->ids);
    free(a->emb);
    free(a->in);
    free(a->h);
    free(a->out);
    free(a->row);
    free(a->top);
    free(a->sel);
    free(a);
}

uint32_t engine_assist_n_embd(const engine_assist *a) {
    return a->n_embd_t;
}

uint32_t engine_assist_n_vocab(const engine_assist *a) {
    return a->n_vocab;
}

/* ---- a step ------------------------------------------------------------------ */

/* The input rows on the host: the target's scaled embedding of each token
 * beside its hidden row. */
static sw_status inputs(engine_assist *a, const assist_row *rows, uint32_t n) {
    sw_engine *e = a->t;
    backend *host = e->host;
    backend_buf *hm = host->vt->host_memory(host);
    const uint64_t H = a->n_embd_t;
    const embed_args em = {.tok_embd = e->tok_embd, .embd_scale = e->config.embd_scale,
                           .ids = {hm, (uint64_t)(uintptr_t)a->ids},
                           .x = {hm, (uint64_t)(uintptr_t)a->emb}, .n_tokens = n};
    SW_TRY(embed_run_ops(host, &em));
    for (uint32_t i = 0; i < n; i++) {
        memcpy(a->in + i * 2 * H, a->emb + i * H, H * sizeof(float));
        memcpy(a->in + i * 2 * H + H, rows[i].hidden, H * sizeof(float));
    }
    return SW_OK;
}

static sw_status matmul(backend *be, const btensor *w, bmem x, bmem y, uint32_t n) {
    BOP_SUBMIT(be, (bop){.kind = BOP_MATMUL,
                         .u.matmul = {.w = *w, .x = x, .y = y, .n_tokens = n}});
    return SW_OK;
}

/* The assistant's layers, as the target's blocks with every cache the
 * target's. */
static sw_status layers(engine_assist *a, uint32_t n) {
    const model_config *c = &a->c;
    for (uint32_t il = 0; il < c->n_layer; il++) {
        const bool local = model_layer_is_local(c, il);
        const tensor_view *ls = &a->w.layers[il].t[BW_LAYER_SCALE];
        block_shape shape = {
            .n_embd = c->n_embd, .n_ff = model_layer_n_ff(c, il), .n_head = c->n_head,
            .n_head_kv = model_layer_n_head_kv(c, il), .head_dim = model_layer_head_dim(c, il),
            .norm_eps = c->norm_eps, .query_scale = c->query_scale,
            .attn_softcap = c->attn_softcap, .qk_norm = c->qk_norm, .post_norms = c->post_norms,
            .v_norm = c->v_norm, .kv_shared = true,
            .rope_pairs = local ? 0 : c->rope_pairs_global};
        block_args args = {
            .shape = &shape, .kv = a->t->kv[a->kv_layer[local ? 1 : 0]],
            .window = local ? c->sliding_window : 0,
            .rope_base = local ? c->rope_base_local : c->rope_base_global,
            .rope_scale = local ? c->rope_scale_local : c->rope_scale_global,
            .layer_scale = ls->data != NULL ? *(const float *)ls->data : 0.0f,
            .act = a->acts, .n_tokens = n, .phase = BLOCK_WHOLE};
        memcpy(args.w, a->layers[il].w, sizeof args.w);
        SW_TRY(block_run_ops(a->be, &args));
    }
    return SW_OK;
}

/* The centroid-masked head of one normed row h into logits (n_vocab):
 * the top centroids' tokens scored, the rest below them all, as
 * transformers masks them (one less than the least score). */
static sw_status centroid_head(engine_assist *a, const float *scores, const float *h,
                               float *logits) {
    const model_config *c = &a->c;
    const uint32_t per = c->n_vocab / c->n_centroid, Ha = c->n_embd;
    const uint32_t n_sel = c->centroid_top_k * per;
    const float *order = a->order.data;
    const tensor_view *emb = &a->w.tok_embd;
    uint64_t row_bytes = 0;
    if (!type_row_bytes(emb->type, Ha, &row_bytes))
        return sw_errorf(SW_ERR_UNSUPPORTED, "the assistant's embedding type %u", emb->type);
    topk_indices(scores, c->n_centroid, c->centroid_top_k, a->top);
    float least = 0.0f;
    for (uint32_t j = 0; j < n_sel; j++) {
        const uint32_t tok = (uint32_t)order[(uint64_t)a->top[j / per] * per + j % per];
        SW_TRY(quant_dequantize(emb->type, (const uint8_t *)emb->data + tok * row_bytes,
                                a->row, Ha));
        float s = 0.0f;
        for (uint32_t d = 0; d < Ha; d++)
            s += h[d] * a->row[d];
        a->sel[j] = s;
        least = j == 0 || s < least ? s : least;
    }
    for (uint32_t t = 0; t < c->n_vocab; t++)
        logits[t] = least - 1.0f;
    for (uint32_t j = 0; j < n_sel; j++)
        logits[(uint32_t)order[(uint64_t)a->top[j / per] * per + j % per]] = a->sel[j];
    return SW_OK;
}

sw_status engine_assist_step(engine_assist *a, const assist_row *rows, uint32_t n,
                             float *logits, float *hidden) {
    if (n == 0)
        return SW_OK;
    if (n > a->n_rows)
        return sw_errorf(SW_ERR_ARG, "%u assistant rows, room for %u", n, a->n_rows);
    for (uint32_t i = 0; i < n; i++) {
        const uint32_t q = sw_session_pos(rows[i].session);
        if (rows[i].token < 0 || (uint32_t)rows[i].token >= a->t->config.n_vocab || q == 0)
            return sw_errorf(SW_ERR_ARG, "assistant row %u: token %d at position %u", i,
                             rows[i].token, q);
        a->ids[i] = rows[i].token;
        a->pos[i] = (int32_t)q;
        a->apos[i] = (int32_t)q - 1; /* the keys before the query's own position */
        a->seq[i] = (int32_t)rows[i].session->slot;
    }
    SW_TRY(inputs(a, rows, n));
    backend *be = a->be;
    const uint64_t H = a->n_embd_t, Ha = a->c.n_embd, I = sizeof(int32_t), F = sizeof(float);
    const bool dev = a->side == SIDE_DEVICE;
    const uint64_t base = dev ? 0 : (uint64_t)(uintptr_t)a->host_acts;
    backend_buf *buf = dev ? a->abuf : be->vt->host_memory(be);
    const bmem in = {buf, base + a->L.in}, hid = {buf, base + a->L.hid};
    const bmem out = {buf, base + a->L.out};
    if (dev) {
        SW_TRY(be->vt->copy_h2d(be, BQ_COMPUTE, in, a->in, n * 2 * H * F));
        SW_TRY(be->vt->copy_h2d(be, BQ_COMPUTE, a->acts.pos, a->pos, n * I));
        SW_TRY(be->vt->copy_h2d(be, BQ_COMPUTE, a->acts.seq, a->seq, n * I));
        SW_TRY(be->vt->copy_h2d(be, BQ_COMPUTE, a->acts.apos, a->apos, n * I));
    } else {
        memcpy((void *)(uintptr_t)in.off, a->in, n * 2 * H * F);
        memcpy((void *)(uintptr_t)a->acts.pos.off, a->pos, n * I);
        memcpy((void *)(uintptr_t)a->acts.seq.off, a->seq, n * I);
        memcpy((void *)(uintptr_t)a->acts.apos.off, a->apos, n * I);
    }
    SW_TRY(matmul(be, &a->b_pre, in, a->acts.x, n));
    SW_TRY(layers(a, n));
    BOP_SUBMIT(be, (bop){.kind = BOP_RMSNORM,
                         .u.rmsnorm = {.x = a->acts.x, .w = a->b_norm, .y = a->acts.h,
                                       .n = (uint32_t)Ha, .n_rows = n, .eps = a->c.norm_eps}});
    SW_TRY(matmul(be, &a->b_post, a->acts.h, hid, n));
    SW_TRY(matmul(be, &a->b_head, a->acts.h, out, n));
    float *res = a->c.n_centroid ? a->out : logits;
    if (dev) {
        SW_TRY(be->vt->copy_d2h(be, BQ_COMPUTE, hidden, hid, n * H * F));
        SW_TRY(be->vt->copy_d2h(be, BQ_COMPUTE, res, out, (uint64_t)n * a->n_out * F));
        if (a->c.n_centroid)
            SW_TRY(be->vt->copy_d2h(be, BQ_COMPUTE, a->h, a->acts.h, n * Ha * F));
        SW_TRY(be->vt->event_record(be, a->done, BQ_COMPUTE));
        SW_TRY(be->vt->event_sync(be, a->done));
    } else {
        memcpy(hidden, (const void *)(uintptr_t)hid.off, n * H * F);
        memcpy(res, (const void *)(uintptr_t)out.off, (uint64_t)n * a->n_out * F);
        memcpy(a->h, (const void *)(uintptr_t)a->acts.h.off, n * Ha * F);
    }
    for (uint32_t i = 0; a->c.n_centroid && i < n; i++)
        SW_TRY(centroid_head(a, a->out + (uint64_t)i * a->n_out, a->h + i * Ha,
                             logits + (uint64_t)i * a->n_vocab));
    return SW_OK;
}

sw_status engine_eval_batch_hidden(sw_engine *e, const sw_batch_item *items, size_t n,
                                   float *logits, float *hidden) {
    e->hidden_out = hidden;
    const sw_status st = sw_engine_eval_batch(e, items, n, logits);
    e->hidden_out = NULL;
    return st;
}
