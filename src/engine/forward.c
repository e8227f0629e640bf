/*
 * forward.c — one forward over a batch of tokens: the embedding on the
 * host, each layer on the side the plan gives it (the block entry when
 * the backend has one, else its ops), the residual stream crossing
 * between sides only where consecutive layers differ, then the final
 * norm and LM head for the rows that want logits. The math of each step
 * is backend/block.c's and backend/ends.c's; this file decides sides and
 * moves data between them.
 *
 * Crossing sides is an explicit transfer on the device's compute queue:
 * to the device, the stream (and, once per forward, the positions,
 * sequences and logit rows) is copied from host memory; to the host, it
 * is copied back and the host waits for exactly that. The host also waits
 * at the end of each forward that used the device, for the logits or, with
 * none wanted, so that the next forward may reuse the host arrays those
 * copies read. (engine_forward, in split_engine.c, runs this for the one
 * engine, or for each stage of a split, and resets after a failure.)
 */
#include <stdio.h>
#include <string.h>

#include "backend/ends.h"
#include "engine/engine_internal.h"
#include "util/clock.h"
#include "util/error.h"

static uint64_t stream_bytes(const sw_engine *e, uint32_t n) {
    return (uint64_t)n * e->config.n_embd * sizeof(float);
}

/* Makes the host wait for what the device has queued so far. */
static sw_status device_wait(sw_engine *e) {
    engine_side *d = &e->side[SIDE_DEVICE];
    sw_status st = d->be->vt->event_record(d->be, d->done, BQ_COMPUTE);
    return st != SW_OK ? st : d->be->vt->event_sync(d->be, d->done);
}

/* This forward's metadata (and Gemma 4's per-layer inputs) onto the
 * device, once. */
static sw_status upload_meta(sw_engine *e, uint32_t n) {
    engine_side *h = &e->side[SIDE_HOST], *d = &e->side[SIDE_DEVICE];
    const model_config *c = &e->config;
    /* the per-layer inputs of this engine's own layers (a split's stage
     * carries the later stages' after them, on the host) */
    const uint64_t offs[4] = {e->act.pos, e->act.seq, e->act.out_rows, e->act.ple};
    const uint64_t bytes[4] = {(uint64_t)n * 4, (uint64_t)n * 4, (uint64_t)n * 4,
                               (uint64_t)n * c->n_layer * c->n_embd_per_layer * 4};
    if (d->meta_current)
        return SW_OK;
    for (int i = 0; i < 4; i++) {
        sw_status st = bytes[i] == 0 ? SW_OK
                                     : d->be->vt->copy_h2d(d->be, BQ_COMPUTE,
                                                           (bmem){d->buf, offs[i]},
                                                           h->host_base + offs[i], bytes[i]);
        if (st != SW_OK)
            return st;
    }
    d->meta_current = true;
    return SW_OK;
}

/* Where the final norm and the LM head run: where the plan keeps the
 * head. */
static side_id lm_head_side(const sw_engine *e) {
    return e->plan->lm_head_place == PLACE_RESIDENT ? SIDE_DEVICE : SIDE_HOST;
}

/* Moves the residual stream to the side about to compute. */
static sw_status move_stream(sw_engine *e, side_id to, uint32_t n) {
    engine_side *h = &e->side[SIDE_HOST], *d = &e->side[SIDE_DEVICE];
    sw_status st;
    d->used = true;
    if (to == SIDE_DEVICE) {
        if ((st = upload_meta(e, n)) != SW_OK)
            return st;
        return d->be->vt->copy_h2d(d->be, BQ_COMPUTE, d->act.x, h->host_base + e->act.x,
                                   stream_bytes(e, n));
    }
    st = d->be->vt->copy_d2h(d->be, BQ_COMPUTE, h->host_base + e->act.x, d->act.x,
                             stream_bytes(e, n));
    return st != SW_OK ? st : device_wait(e);
}

/* The residual stream in host memory for the test hook. */
static sw_status run_hook(sw_engine *e, int layer, side_id side, uint32_t n) {
    const engine_hooks *k = &e->hooks;
    engine_side *h = &e->side[SIDE_HOST], *d = &e->side[SIDE_DEVICE];
    if (k->layer_hook == NULL)
        return SW_OK;
    const float *x = (const float *)(const void *)(h->host_base + e->act.x);
    if (side == SIDE_DEVICE) {
        sw_status st = d->be->vt->copy_d2h(d->be, BQ_COMPUTE, h->host_base + e->act.h,
                                           d->act.x, stream_bytes(e, n));
        if (st != SW_OK || (st = device_wait(e)) != SW_OK)
            return st;
        x = (const float *)(const void *)(h->host_base + e->act.h);
    }
    /* a stage's layers by their number in the model */
    k->layer_hook(k->layer_hook_user, layer < 0 ? layer : (int)e->first_layer + layer, x, n,
                  e->config.n_embd);
    return SW_OK;
}

/* A device layer whose experts the host computes: the device runs up to
 * the dense MLP; the residual (after attention, which the experts read)
 * comes to the host; the host runs the experts from its own views of the
 * layer into its moe_out, which goes to the device's; the device runs the
 * rest. Both copies are on the device's compute queue, so they order with
 * its ops; the host waits for the residual before reading it. */
static sw_status run_split_block(sw_engine *e, uint32_t il, block_args *a) {
    engine_side *h = &e->side[SIDE_HOST], *d = &e->side[SIDE_DEVICE];
    backend *be = d->be;
    const uint64_t bytes = (uint64_t)a->n_tokens * e->config.n_embd * sizeof(float);
    a->phase = BLOCK_TO_EXPERTS;
    SW_TRY(be->vt->block ? be->vt->block(be, a) : block_run_ops(be, a));
    SW_TRY(be->vt->copy_d2h(be, BQ_COMPUTE, h->host_base + e->act.x, d->act.x, bytes));
    SW_TRY(device_wait(e));
    block_args ha = *a;
    ha.act = h->act;
    ha.phase = BLOCK_WHOLE;
    memcpy(ha.w, e->layers[il].host_w, sizeof ha.w);
    SW_TRY(block_run_experts(h->be, &ha));
    SW_TRY(be->vt->copy_h2d(be, BQ_COMPUTE, d->act.moe_out, h->host_base + e->act.moe_out,
                            bytes));
    a->phase = BLOCK_FROM_EXPERTS;
    return be->vt->block ? be->vt->block(be, a) : block_run_ops(be, a);
}

/* The largest position of this forward's n tokens, plus one: how many
 * keys a query can see at most (the host's copy of the positions). */
static uint32_t max_keys(const sw_engine *e, uint32_t n) {
    const int32_t *pos = (const int32_t *)(const void *)(e->side[SIDE_HOST].host_base +
                                                           e->act.pos);
    int32_t top = -1;
    for (uint32_t t = 0; t < n; t++)
        top = pos[t] > top ? pos[t] : top;
    return (uint32_t)(top + 1);
}

static sw_status run_block(sw_engine *e, uint32_t il, const dev_layer *w, side_id side,
                           uint32_t n) {
    const model_config *c = &e->config;
    backend *be = e->side[side].be;
    bool local = model_layer_is_local(c, il);
    block_shape shape = e->shape; /* this layer's own (Gemma 4's differ) */
    shape.n_ff = model_layer_n_ff(c, il);
    shape.n_head_kv = model_layer_n_head_kv(c, il);
    shape.head_dim = model_layer_head_dim(c, il);
    shape.k_eq_v = c->layer[il].k_eq_v;
    shape.kv_shared = !model_layer_owns_kv(c, il);
    shape.rope_pairs = local ? 0 : c->rope_pairs_global;
    const tensor_view *ls = &e->weights.layers[il].t[BW_LAYER_SCALE];
    block_args a = {
        .shape = &shape, .kv = e->kv[model_layer_kv_owner(c, il)],
        .window = local ? c->sliding_window : 0,
        .rope_base = local ? c->rope_base_local : c->rope_base_global,
        .rope_scale = local ? c->rope_scale_local : c->rope_scale_global,
        .layer_scale = ls->data != NULL ? *(const float *)ls->data : 0.0f,
        .act = e->side[side].act, .n_tokens = n, .max_keys = max_keys(e, n),
    };
    a.act.ple = bmem_at(a.act.ple, (uint64_t)il * n * c->n_embd_per_layer * sizeof(float));
    memcpy(a.w, w->w, sizeof a.w);
    if (side == SIDE_DEVICE && e->plan->experts_host[il])
        return e->xc.buf != NULL ? xcache_run_block(e, il, &a) : run_split_block(e, il, &a);
    return be->vt->block ? be->vt->block(be, &a) : block_run_ops(be, &a);
}

/* Where layer il computes and with which weights. */
static sw_status acquire(sw_engine *e, uint32_t il, const dev_layer **w, side_id *side) {
    switch (e->plan->layer_place[il]) {
    case PLACE_STREAMED:
        *side = SIDE_DEVICE;
        return ring_acquire(e, il, w);
    case PLACE_RESIDENT:
        *side = SIDE_DEVICE;
        break;
    default:
        *side = SIDE_HOST;
        break;
    }
    *w = &e->layers[il];
    return SW_OK;
}

static sw_status run_layers(sw_engine *e, uint32_t n, side_id *side) {
    for (uint32_t il = 0; il < e->config.n_layer; il++) {
        const dev_layer *w = NULL;
        side_id want = SIDE_HOST;
        sw_status st = acquire(e, il, &w, &want);
        if (st == SW_OK && want != *side)
            st = move_stream(e, want, n);
        if (st != SW_OK)
            return st;
        *side = want;
        e->side[want].used = true;
        st = run_block(e, il, w, want, n);
        if (st == SW_OK && e->expert_trace != NULL)
            st = expert_trace_layer(e, il, want, n);
        if (st == SW_OK && want == SIDE_DEVICE && e->xc.buf != NULL)
            st = xcache_prefetch(e, il, n);
        if (st == SW_OK && e->plan->layer_place[il] == PLACE_STREAMED)
            st = ring_release(e, il);
        if (st != SW_OK || (st = run_hook(e, (int)il, want, n)) != SW_OK)
            return st;
    }
    return SW_OK;
}

/* Final norm and LM head over the n_out wanted rows, on the LM head's
 * side; from the device, the logits are copied back. */
static sw_status run_logits(sw_engine *e, uint32_t n, uint32_t n_out, float *logits) {
    const model_config *c = &e->config;
    const side_id s = lm_head_side(e);
    engine_side *side = &e->side[s];
    backend *be = side->be;
    bmem out = s == SIDE_DEVICE ? (bmem){e->logits_dev, 0}
                                : (bmem){be->vt->host_memory(be), (uint64_t)(uintptr_t)logits};
    if (s == SIDE_DEVICE)
        SW_TRY(upload_meta(e, n));
    const logits_args a = {.out_norm = e->out_norm[s], .lm_head = e->lm_head[s],
                           .norm_eps = c->norm_eps, .final_softcap = c->final_softcap,
                           .x = side->act.x, .rows = side->out_rows, .h = side->act.h,
                           .logits = out, .n_tokens = n, .n_out = n_out};
    SW_TRY(logits_run_ops(be, &a));
    /* the normed rows the LM head read, for an assistant */
    const uint64_t hidden_bytes = (uint64_t)n_out * c->n_embd * sizeof(float);
    if (s == SIDE_HOST) {
        if (e->hidden_out != NULL)
            memcpy(e->hidden_out, (const void *)(uintptr_t)side->act.h.off, hidden_bytes);
        return SW_OK;
    }
    if (e->hidden_out != NULL)
        SW_TRY(be->vt->copy_d2h(be, BQ_COMPUTE, e->hidden_out, side->act.h, hidden_bytes));
    return be->vt->copy_d2h(be, BQ_COMPUTE, logits, out,
                            (uint64_t)n_out * c->n_vocab * sizeof(float));
}

/* The embedding, and Gemma 4's per-layer inputs, of the n tokens: lookups
 * of n rows, always on the host. */
static sw_status run_embedding(sw_engine *e, uint32_t n) {
    const model_config *c = &e->config;
    engine_side *h = &e->side[SIDE_HOST];
    const embed_args em = {.tok_embd = e->tok_embd, .embd_scale = c->embd_scale, .ids = h->ids,
                           .x = h->act.x, .n_tokens = n};
    SW_TRY(embed_run_ops(h->be, &em));
    if (c->n_embd_per_layer == 0)
        return SW_OK;
    /* every layer's inputs: this stage's, then the later stages' (a split) */
    const uint32_t n_layer = model_ple_layers(c);
    ple_order(engine_host_meta(e, e->act.ple_idx), n, n_layer);
    const ple_args pl = {.table = e->ple_embd, .proj = e->ple_proj,
                         .proj_norm = e->ple_proj_norm, .n_embd = c->n_embd,
                         .n_layer = n_layer, .n_pl = c->n_embd_per_layer,
                         .norm_eps = c->norm_eps, .ids = h->ids, .x = h->act.x,
                         .tmp = h->ple_tmp, .order = h->ple_idx, .ple = h->act.ple,
                         .n_tokens = n};
    return ple_run_ops(h->be, &pl);
}

/* One engine's part of a forward: the embedding where the model starts,
 * its layers, then the LM head where the model ends (`last`), or else the
 * stream left in host memory for the next stage. */
static sw_status stage_run(sw_engine *e, uint32_t n, uint32_t n_out, float *logits,
                           bool last) {
    side_id side = SIDE_HOST;
    e->side[SIDE_DEVICE].meta_current = false;
    e->side[SIDE_DEVICE].used = false;
    if (e->peer_in) { /* the stream is on the device already (engine_hand_on) */
        SW_TRY(upload_meta(e, n));
        e->side[SIDE_DEVICE].used = true;
        side = SIDE_DEVICE;
    }
    if (e->first_layer == 0) {
        SW_TRY(run_embedding(e, n));
        SW_TRY(run_hook(e, -1, SIDE_HOST, n));
    }
    SW_TRY(run_layers(e, n, &side));
    if (!last && side != SIDE_HOST && !e->peer_out)
        SW_TRY(move_stream(e, SIDE_HOST, n));
    if (last && n_out > 0) {
        if (side != lm_head_side(e))
            SW_TRY(move_stream(e, lm_head_side(e), n));
        SW_TRY(run_logits(e, n, n_out, logits));
    }
    return e->side[SIDE_DEVICE].used ? device_wait(e) : SW_OK;
}

sw_status engine_stage_forward(sw_engine *e, uint32_t n, uint32_t n_out, float *logits,
                               bool last) {
    const double t0 = sw_clock_s();
    const sw_status st = stage_run(e, n, n_out, logits, last);
    e->busy_s += sw_clock_s() - t0;
    return st;
}

sw_status engine_hand_on(const sw_engine *a, sw_engine *b, uint32_t n) {
    const uint8_t *src = a->side[SIDE_HOST].host_base;
    uint8_t *dst = b->side[SIDE_HOST].host_base;
    const uint64_t from[4] = {a->act.ids, a->act.pos, a->act.seq, a->act.out_rows};
    const uint64_t to[4] = {b->act.ids, b->act.pos, b->act.seq, b->act.out_rows};
    for (int i = 0; i < 4; i++)
        memcpy(dst + to[i], src + from[i], (uint64_t)n * sizeof(int32_t));
    /* Gemma 4's per-layer inputs of b's layers and those after: the tail of
     * a's (layer-major, a's own layers first), through host memory always
     * (b's device takes its own with the metadata) */
    const uint64_t ple_row = (uint64_t)n * a->config.n_embd_per_layer * sizeof(float);
    if (ple_row != 0)
        memcpy(dst + b->act.ple, src + a->act.ple + (uint64_t)a->config.n_layer * ple_row,
               (uint64_t)model_ple_layers(&b->config) * ple_row);
    if (!b->peer_in) {
        memcpy(dst + b->act.x, src + a->act.x, stream_bytes(a, n));
        return SW_OK;
    }
    backend *to_be = b->side[SIDE_DEVICE].be;
    return to_be->vt->copy_peer(to_be, b->side[SIDE_DEVICE].act.x, a->side[SIDE_DEVICE].be,
                                a->side[SIDE_DEVICE].act.x, stream_bytes(a, n));
}

int32_t *engine_host_meta(sw_engine *e, uint64_t offset) {
    return (int32_t *)(void *)(e->side[SIDE_HOST].host_base + offset);
}
