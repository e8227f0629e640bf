/*
 * host_weights.c — where the weights the engine computes with and uploads
 * from live on the host, per the plan:
 *   - as stored, in the file mapping (the default);
 *   - converted at load (--weights): each matrix quant_convert_type()
 *     changes is converted once, row by row, into host memory the plan
 *     counts: the "converted weights" arena (embedding, untied LM head,
 *     host layers, streamed layers read from pageable memory), or the
 *     one-layer "conversion staging" buffer that resident layers pass
 *     through on their way to the device (freed after loading);
 *   - for streamed layers when the plan says stream_pinned: one pinned
 *     buffer holding every streamed layer packed exactly as its ring slot
 *     (converted or copied once at load), which the ring copies from.
 * After loading, the mapping's pages of converted matrices are never read
 * again. Sizes are checked against the plan's buffers to the byte; a
 * mismatch is a planner/engine disagreement, reported as "internal".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "quant/quantize.h"
#include "quant/types.h"
#include "util/error.h"

/* Whether role r of a layer is a matrix (the layer table says). */
static bool is_matrix(int r) {
    size_t n = 0;
    return !model_layer_tensors(&n)[r].is_norm;
}

/* Rows of all of v's matrices (Gemma 4's experts are 3-D). */
static uint64_t rows_of(const tensor_view *v) {
    return v->ne[1] * (v->n_dims > 2 ? v->ne[2] : 1);
}

/* Whether --weights changes v; *type and *bytes get what it becomes. */
static bool converts(const sw_engine *e, const tensor_view *v, uint32_t *type,
                     uint64_t *bytes) {
    uint64_t row = 0;
    if (e->convert_type == SW_TYPE_COUNT || v->data == NULL)
        return false;
    uint32_t t = quant_convert_type(v->type, v->ne[0], e->convert_type);
    if (t == v->type || !type_row_bytes(t, v->ne[0], &row))
        return false;
    *type = t;
    *bytes = row * rows_of(v);
    return true;
}

/* A bump allocator over one planned buffer. */
typedef struct region {
    uint8_t *base;
    uint64_t cap, used;
    const char *what;
} region;

/* Converts v (if --weights changes it) into the next slot of r and points
 * v there. */
static sw_status convert_into(sw_engine *e, tensor_view *v, region *r) {
    uint32_t type;
    uint64_t bytes;
    if (!converts(e, v, &type, &bytes))
        return SW_OK;
    uint64_t need = plan_padded(bytes);
    if (r->used + need > r->cap)
        return sw_errorf(SW_ERR_ARG, "internal: the plan sizes the %s at %llu bytes, "
                         "converting '%s' needs more", r->what, (unsigned long long)r->cap,
                         v->name ? v->name : "?");
    uint8_t *dst = r->base + r->used;
    sw_status st = quant_convert_rows(v->type, v->data, type, dst, rows_of(v), v->ne[0],
                                      e->hw.row);
    if (st != SW_OK)
        return sw_error_prefix(st, "converting '%s'", v->name ? v->name : "?");
    v->type = type;
    v->n_bytes = bytes;
    v->data = dst;
    r->used += need;
    return SW_OK;
}

static sw_status convert_layer(sw_engine *e, layer_weights *w, region *r) {
    for (int i = 0; i < BW_COUNT; i++) {
        sw_status st = is_matrix(i) ? convert_into(e, &w->t[i], r) : SW_OK;
        if (st != SW_OK)
            return st;
    }
    return SW_OK;
}

/* Layer il as the device holds it: without its experts when the plan has
 * the host compute them (they are packed last, so this is a prefix). */
static layer_weights device_part(const sw_engine *e, uint32_t il, const layer_weights *w) {
    layer_weights d = *w;
    for (int r = 0; e->plan->experts_host[il] && r < BW_COUNT; r++)
        if (model_is_expert((block_weight)r))
            d.t[r].data = NULL;
    return d;
}

/* Writes streamed layer il, packed as in a ring slot and converted where
 * --weights says, at `base` (the plan's `bytes` for it), and points the
 * layer's views there, so the ring streams from this copy. */
static sw_status fill_pinned(sw_engine *e, uint32_t il, uint8_t *base, uint64_t bytes) {
    layer_weights *src = &e->weights.layers[il], target = device_part(e, il, src);
    layer_pack pk;
    for (int i = 0; i < BW_COUNT; i++)
        if (is_matrix(i))
            converts(e, &src->t[i], &target.t[i].type, &target.t[i].n_bytes);
    layer_pack_build(&e->config, il, &target, &pk);
    if (pk.total_bytes != bytes)
        return sw_errorf(SW_ERR_ARG, "internal: the plan pins layer %u at %llu bytes, packing "
                         "needs %llu", il, (unsigned long long)bytes,
                         (unsigned long long)pk.total_bytes);
    for (uint32_t k = 0; k < pk.n_items; k++) {
        const tensor_view *sv = &src->t[pk.items[k].role];
        tensor_view *tv = &target.t[pk.items[k].role];
        uint8_t *dst = base + pk.items[k].offset;
        if (tv->type == sv->type) {
            memcpy(dst, sv->data, sv->n_bytes);
        } else {
            sw_status st = quant_convert_rows(sv->type, sv->data, tv->type, dst, rows_of(sv),
                                              sv->ne[0], e->hw.row);
            if (st != SW_OK)
                return sw_error_prefix(st, "converting '%s'", sv->name ? sv->name : "?");
        }
        tv->data = dst;
    }
    *src = target;
    return SW_OK;
}

/* Sizes of the plan's host weight buffers. */
static void planned_sizes(const plan *pl, uint64_t *arena, uint64_t *staging, uint64_t *pinned) {
    *arena = *staging = *pinned = 0;
    for (uint32_t i = 0; i < pl->n_buffers; i++) {
        const plan_buffer *b = &pl->buffers[i];
        if (b->kind == BUF_CONVERTED)
            *arena += b->bytes;
        else if (b->kind == BUF_STAGING)
            *staging += b->bytes;
        else if (b->tier == TIER_PINNED && b->kind == BUF_OTHER) /* not the experts' staging */
            *pinned += b->bytes;
    }
}

static sw_status alloc_buffers(sw_engine *e, sw_alloc_failure *failure) {
    engine_host_weights *h = &e->hw;
    const model_config *c = &e->config;
    uint64_t pinned;
    planned_sizes(e->plan, &h->arena_bytes, &h->staging_bytes, &pinned);
    uint64_t widest = c->n_embd > c->n_ff ? c->n_embd : c->n_ff;
    if ((uint64_t)c->n_head * c->n_embd_head > widest)
        widest = (uint64_t)c->n_head * c->n_embd_head;
    if (h->arena_bytes)
        h->arena = aligned_alloc(PLAN_TENSOR_ALIGN, h->arena_bytes);
    if (h->staging_bytes)
        h->staging = aligned_alloc(PLAN_TENSOR_ALIGN, h->staging_bytes);
    if (e->convert_type != SW_TYPE_COUNT)
        h->row = malloc(widest * sizeof(float));
    if ((h->arena_bytes && h->arena == NULL) || (h->staging_bytes && h->staging == NULL) ||
        (e->convert_type != SW_TYPE_COUNT && h->row == NULL)) {
        if (failure != NULL) {
            snprintf(failure->tier, sizeof failure->tier, "host");
            snprintf(failure->purpose, sizeof failure->purpose, "converted weights (%s)",
                     h->arena == NULL && h->arena_bytes ? "kept" : "staging");
            failure->bytes = h->arena == NULL ? h->arena_bytes : h->staging_bytes;
        }
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for the converted weights "
                         "(%.1f MiB + %.1f MiB staging); lower --host-mem to plan with it, or "
                         "drop --weights", (double)h->arena_bytes / 1048576.0,
                         (double)h->staging_bytes / 1048576.0);
    }
    sw_status st = pinned_alloc(e->device, pinned, &h->pinned);
    if (st != SW_OK && failure != NULL) {
        snprintf(failure->tier, sizeof failure->tier, "pinned");
        snprintf(failure->purpose, sizeof failure->purpose, "pinned copy of streamed layers");
        failure->bytes = pinned;
    }
    return st;
}

/* e->weights := the mapping's views (norms stay in the bind's arena). */
static void reset_views(sw_engine *e) {
    e->weights.tok_embd = e->file_weights.tok_embd;
    e->weights.output = e->file_weights.output;
    e->weights.output_norm = e->file_weights.output_norm;
    e->weights.ple_embd = e->file_weights.ple_embd; /* used as stored, on the host */
    e->weights.ple_proj = e->file_weights.ple_proj;
    e->weights.ple_proj_norm = e->file_weights.ple_proj_norm;
    memcpy(e->weights.layers, e->file_weights.layers,
           e->config.n_layer * sizeof *e->weights.layers);
}

/* Converts the embedding (and an untied LM head) and the layers kept on
 * the host, and fills the pinned copy, in plan order. */
static sw_status place_layers(sw_engine *e) {
    const plan *pl = e->plan;
    region arena = {e->hw.arena, e->hw.arena_bytes, 0, "converted weights"};
    uint64_t pin_off = 0;
    bool tied = e->weights.output.data == e->weights.tok_embd.data;
    /* a split's stage: the embedding only where the model starts, the LM
     * head only where it ends (plan_stage_model) */
    const bool embeds = e->first_layer == 0, heads = pl->model.output_bytes != 0;
    sw_status st = embeds ? convert_into(e, &e->weights.tok_embd, &arena) : SW_OK;
    if (st == SW_OK && heads && tied && embeds)
        e->weights.output = e->weights.tok_embd;
    else if (st == SW_OK && heads)
        st = convert_into(e, &e->weights.output, &arena);
    for (uint32_t i = 0; st == SW_OK && i < pl->n_buffers; i++) {
        const plan_buffer *b = &pl->buffers[i];
        if (b->tier != TIER_PINNED || b->layer < 0)
            continue;
        st = fill_pinned(e, (uint32_t)b->layer, (uint8_t *)e->hw.pinned.ptr + pin_off, b->bytes);
        pin_off += b->bytes;
    }
    for (uint32_t il = 0; st == SW_OK && il < e->config.n_layer; il++) {
        plan_place place = pl->layer_place[il];
        if (place == PLACE_HOST || (place == PLACE_STREAMED && !pl->stream_pinned))
            st = convert_layer(e, &e->weights.layers[il], &arena);
    }
    if (st == SW_OK && arena.used != arena.cap)
        st = sw_errorf(SW_ERR_ARG, "internal: the plan sizes the converted weights at %llu "
                       "bytes, conversion used %llu", (unsigned long long)arena.cap,
                       (unsigned long long)arena.used);
    return st;
}

sw_status host_weights_load(sw_engine *e, sw_alloc_failure *failure) {
    sw_status st;
    reset_views(e);
    if ((st = alloc_buffers(e, failure)) != SW_OK || (st = place_layers(e)) != SW_OK)
        return st;
    for (uint32_t il = 0; il < e->config.n_layer; il++) {
        const layer_weights d = device_part(e, il, &e->weights.layers[il]);
        layer_pack_build(&e->config, il, &d, &e->packs[il]);
    }
    return SW_OK;
}

sw_status host_weights_stage(sw_engine *e, uint32_t il) {
    region staging = {e->hw.staging, e->hw.staging_bytes, 0, "conversion staging"};
    sw_status st = convert_layer(e, &e->weights.layers[il], &staging);
    if (st == SW_OK) {
        const layer_weights d = device_part(e, il, &e->weights.layers[il]);
        layer_pack_build(&e->config, il, &d, &e->packs[il]);
    }
    return st;
}

void host_weights_end_load(sw_engine *e) {
    engine_host_weights *h = &e->hw;
    /* Resident layers converted through staging now live on the device
     * only: drop the host views into the buffer about to be freed. */
    for (uint32_t il = 0; h->staging && il < e->config.n_layer; il++) {
        for (int i = 0; i < BW_COUNT; i++) {
            tensor_view *m = &e->weights.layers[il].t[i];
            uintptr_t d = (uintptr_t)m->data, lo = (uintptr_t)h->staging;
            if (d >= lo && d - lo < h->staging_bytes)
                m->data = NULL;
        }
    }
    free(h->staging);
    free(h->row);
    h->staging = NULL;   /* staging_bytes stays: what loading used (report) */
    h->row = NULL;
}

void host_weights_free(sw_engine *e) {
    host_weights_end_load(e);
    free(e->hw.arena);
    pinned_free(e->device, &e->hw.pinned);
    memset(&e->hw, 0, sizeof e->hw);
}
