/*
 * load.c — turns a plan into memory: allocates each of the plan's device
 * buffers (in plan order, exactly the planned size) through the device
 * backend's accounting allocator, the host activations and host KV rows,
 * the host weight buffers (host_weights.c: converted weights, the pinned
 * copy of streamed layers), uploads resident weights with progress, and
 * starts the ring. Any failure frees everything made so far; a refused
 * allocation is described in the caller's sw_alloc_failure (which buffer,
 * how many bytes, which tier, and what that tier had given until then) so
 * the layer above can plan again with what the machine really has.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "model/kv.h"
#include "plan/plan_api.h"
#include "quant/types.h"
#include "util/error.h"

static void describe_failure(sw_alloc_failure *f, const char *tier, const char *purpose,
                             uint64_t bytes, uint64_t obtained) {
    if (f == NULL)
        return;
    snprintf(f->tier, sizeof f->tier, "%s", tier);
    snprintf(f->purpose, sizeof f->purpose, "%s", purpose);
    f->bytes = bytes;
    f->obtained_bytes = obtained;
}

/* Allocates one device buffer and remembers it for engine_unload. */
static sw_status dev_alloc(sw_engine *e, const plan_buffer *b, backend_buf **out,
                           sw_alloc_failure *f) {
    sw_status st = e->device->vt->alloc(e->device, b->bytes, b->purpose, out);
    if (st != SW_OK) {
        if (st == SW_ERR_OOM_DEVICE)
            describe_failure(f, "device", b->purpose, b->bytes, e->dev_allocated);
        return st;
    }
    e->allocs[e->n_allocs++] = *out;
    e->dev_allocated += b->bytes;
    return SW_OK;
}

/* Uploads, and waits for, everything queued on the copy queue so far. */
static sw_status upload_wait(sw_engine *e) {
    backend *d = e->device;
    sw_status st = d->vt->event_record(d, e->side[SIDE_DEVICE].done, BQ_COPY);
    return st != SW_OK ? st : d->vt->event_sync(d, e->side[SIDE_DEVICE].done);
}

static sw_status load_resident_layer(sw_engine *e, const plan_buffer *b, sw_alloc_failure *f) {
    uint32_t il = (uint32_t)b->layer;
    const layer_pack *p = &e->packs[il];
    backend_buf *buf = NULL;
    sw_status st = host_weights_stage(e, il);
    if (st != SW_OK)
        return st;
    if (b->bytes != p->total_bytes)
        return sw_errorf(SW_ERR_ARG, "internal: plan sizes layer %u at %llu bytes, packing "
                         "needs %llu", il, (unsigned long long)b->bytes,
                         (unsigned long long)p->total_bytes);
    if ((st = dev_alloc(e, b, &buf, f)) != SW_OK)
        return st;
    for (uint32_t i = 0; st == SW_OK && i < p->n_items; i++)
        st = e->device->vt->copy_h2d(e->device, BQ_COPY, (bmem){buf, p->items[i].offset},
                                     p->items[i].src, p->items[i].bytes);
    /* Waiting here lets the staging buffer take the next layer. */
    if (st != SW_OK || (st = upload_wait(e)) != SW_OK)
        return st;
    layer_pack_bind(&e->weights.layers[il], p, (bmem){buf, 0}, e->layers[il].w);
    return SW_OK;
}

static btensor tensor_in(const tensor_view *v, bmem at) {
    return (btensor){.name = v->name, .type = v->type, .ne0 = v->ne[0],
                     .ne1 = v->n_dims > 1 ? v->ne[1] : 1, .n_bytes = v->n_bytes, .mem = at};
}

static sw_status load_lm_head(sw_engine *e, const plan_buffer *b, sw_alloc_failure *f) {
    const tensor_view *out = &e->weights.output, *norm = &e->weights.output_norm;
    uint64_t mat = plan_padded(out->n_bytes);
    backend_buf *buf = NULL;
    sw_status st;
    if (b->bytes != mat + plan_padded(norm->n_bytes))
        return sw_errorf(SW_ERR_ARG, "internal: plan sizes the LM head at %llu bytes",
                         (unsigned long long)b->bytes);
    if ((st = dev_alloc(e, b, &buf, f)) != SW_OK ||
        (st = e->device->vt->copy_h2d(e->device, BQ_COPY, (bmem){buf, 0}, out->data,
                                      out->n_bytes)) != SW_OK ||
        (st = e->device->vt->copy_h2d(e->device, BQ_COPY, (bmem){buf, mat}, norm->data,
                                      norm->n_bytes)) != SW_OK ||
        (st = upload_wait(e)) != SW_OK)
        return st;
    e->lm_head[SIDE_DEVICE] = tensor_in(out, (bmem){buf, 0});
    e->out_norm[SIDE_DEVICE] = tensor_in(norm, (bmem){buf, mat});
    return SW_OK;
}

/* The arrays of one side's activations buffer at `base`. */
static void carve_acts(const act_layout *L, bmem base, engine_side *s) {
    s->act = (block_acts){
        .x = bmem_at(base, L->x), .h = bmem_at(base, L->h), .q = bmem_at(base, L->q),
        .att = bmem_at(base, L->att), .k = bmem_at(base, L->k), .v = bmem_at(base, L->v),
        .gate = bmem_at(base, L->gate), .up = bmem_at(base, L->up),
        .pos = bmem_at(base, L->pos), .seq = bmem_at(base, L->seq),
        .ple = bmem_at(base, L->ple),
        .moe_r = bmem_at(base, L->moe_r), .moe_scores = bmem_at(base, L->moe_scores),
        .moe_ids = bmem_at(base, L->moe_ids), .moe_w = bmem_at(base, L->moe_w),
        .moe_x = bmem_at(base, L->moe_x), .moe_gu = bmem_at(base, L->moe_gu),
        .moe_yd = bmem_at(base, L->moe_yd), .moe_out = bmem_at(base, L->moe_out),
    };
    s->ple_tmp = bmem_at(base, L->ple_tmp);
    s->ple_idx = bmem_at(base, L->ple_idx);
    s->ids = bmem_at(base, L->ids);
    s->out_rows = bmem_at(base, L->out_rows);
}

static sw_status load_kv_buffer(sw_engine *e, const plan_buffer *b, sw_alloc_failure *f) {
    backend_buf *buf = NULL;
    bkv *kv = &e->kv[b->layer];
    sw_status st = dev_alloc(e, b, &buf, f);
    if (st != SW_OK)
        return st;
    uint64_t half = (uint64_t)kv->n_seq * kv->rows * kv->row_elems *
                    (kv->type == SW_TYPE_F32 ? 4 : 2);
    kv->k = (bmem){buf, 0};
    kv->v = (bmem){buf, half};
    return SW_OK;
}

/* One device buffer of the plan. */
static sw_status load_buffer(sw_engine *e, const plan_buffer *b, sw_alloc_failure *f) {
    engine_side *d = &e->side[SIDE_DEVICE];
    switch (b->kind) {
    case BUF_LAYER:
        return load_resident_layer(e, b, f);
    case BUF_RING_SLOT:
        if (b->layer < 0 || b->layer >= ENGINE_MAX_SLOTS)
            return sw_errorf(SW_ERR_ARG, "internal: ring slot %d", b->layer);
        return dev_alloc(e, b, &e->ring.slot[b->layer], f);
    case BUF_KV:
        return load_kv_buffer(e, b, f);
    case BUF_ACTIVATIONS: {
        sw_status st = dev_alloc(e, b, &d->buf, f);
        if (st == SW_OK)
            carve_acts(&e->act, (bmem){d->buf, 0}, d);
        return st;
    }
    case BUF_LM_HEAD:
        return load_lm_head(e, b, f);
    case BUF_LOGITS:
        return dev_alloc(e, b, &e->logits_dev, f);
    case BUF_EXPERT_CACHE:
        return dev_alloc(e, b, &e->xc.buf, f);
    default:
        return SW_OK; /* host tiers */
    }
}

/* Host activations and the KV rows the plan keeps on the host. */
static sw_status load_host(sw_engine *e, sw_alloc_failure *f) {
    const model_config *c = &e->config;
    engine_side *h = &e->side[SIDE_HOST];
    backend_buf *hm = e->host->vt->host_memory(e->host);
    uint64_t kv_bytes = 0;
    for (uint32_t il = 0; il < c->n_layer; il++)
        if (e->plan->kv_tier[il] != TIER_DEVICE)
            kv_bytes += kv_layer_bytes(c, il, (uint64_t)e->kv[il].rows * e->n_seq, e->kv_type);
    /* whole pages: page-locking (below) must not share a page with another
     * allocation, which a second engine's lock would then meet */
    h->host_base = aligned_alloc(4096, (e->act.bytes + 4095) & ~(uint64_t)4095);
    if (h->host_base == NULL) {
        describe_failure(f, "host", "host activations", e->act.bytes, 0);
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for the activations (%.1f MiB)",
                         (double)e->act.bytes / 1048576.0);
    }
    /* Page-locked where the device can (CUDA): the stream crosses the link
     * here for every host layer and every split hop that cannot go device
     * to device, and a pageable crossing is staged by the driver. Refused:
     * a note, and the crossings stay pageable. */
    backend *d = e->device;
    if (d != NULL && d->vt->host_register != NULL && e->act.bytes > 0) {
        if (d->vt->host_register(d, h->host_base, e->act.bytes) == SW_OK)
            h->host_locked = true;
        else
            engine_note(e, "host activations stay pageable: %s\n", sw_last_error());
    }
    if (kv_bytes && (e->host_kv = malloc(kv_bytes)) == NULL) {
        describe_failure(f, "host", "host kv", kv_bytes, e->act.bytes);
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for the KV cache (%.1f MiB); use "
                         "a smaller -c or -np", (double)kv_bytes / 1048576.0);
    }
    h->buf = hm;
    carve_acts(&e->act, (bmem){hm, (uint64_t)(uintptr_t)h->host_base}, h);
    char *p = e->host_kv;
    for (uint32_t il = 0; il < c->n_layer; il++) {
        if (e->plan->kv_tier[il] == TIER_DEVICE)
            continue;
        bkv *kv = &e->kv[il];
        uint64_t half = (uint64_t)kv->n_seq * kv->rows * kv->row_elems *
                        (kv->type == SW_TYPE_F32 ? 4 : 2);
        kv->k = (bmem){hm, (uint64_t)(uintptr_t)p};
        kv->v = (bmem){hm, (uint64_t)(uintptr_t)(p + half)};
        p += kv_layer_bytes(c, il, (uint64_t)kv->rows * e->n_seq, e->kv_type);
    }
    return SW_OK;
}

/* Per layer: rows per sequence, ring, type (the memory comes later). */
static sw_status init_tables(sw_engine *e) {
    const model_config *c = &e->config;
    e->kv = calloc(c->n_layer, sizeof *e->kv);
    e->layers = calloc(c->n_layer, sizeof *e->layers);
    e->allocs = calloc(e->plan->n_buffers + 1, sizeof *e->allocs);
    if (e->kv == NULL || e->layers == NULL || e->allocs == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory loading the model");
    for (uint32_t il = 0; il < c->n_layer; il++) {
        uint32_t rows = e->plan->kv_rows[il];
        const uint32_t row = model_layer_n_head_kv(c, il) * model_layer_head_dim(c, il);
        e->kv[il] = (bkv){.type = e->kv_type, .row_elems = row,
                          .rows = rows, .ring = rows < e->n_ctx ? rows : 0, .n_seq = e->n_seq};
    }
    return SW_OK;
}

void engine_bind_host_views(sw_engine *e) {
    backend_buf *hm = e->host->vt->host_memory(e->host);
    e->tok_embd = btensor_of_host(&e->weights.tok_embd, hm);
    e->ple_embd = btensor_of_host(&e->weights.ple_embd, hm);
    e->ple_proj = btensor_of_host(&e->weights.ple_proj, hm);
    e->ple_proj_norm = btensor_of_host(&e->weights.ple_proj_norm, hm);
    e->lm_head[SIDE_HOST] = btensor_of_host(&e->weights.output, hm);
    e->out_norm[SIDE_HOST] = btensor_of_host(&e->weights.output_norm, hm);
    for (uint32_t il = 0; il < e->config.n_layer; il++) {
        if (e->plan->layer_place[il] == PLACE_HOST)
            layer_bind_host(&e->weights.layers[il], hm, e->layers[il].w);
        if (e->plan->experts_host[il]) /* from the mapping: the host's own copy */
            layer_bind_host(&e->file_weights.layers[il], hm, e->layers[il].host_w);
    }
}

static sw_status load_device(sw_engine *e, const sw_engine_options *opt, sw_alloc_failure *f) {
    const plan *pl = e->plan;
    uint64_t done = 0, total = pl->tier_bytes[TIER_DEVICE];
    e->device->vt->reset_peak(e->device);
    sw_status st = e->device->vt->event_create(e->device, &e->side[SIDE_DEVICE].done);
    for (uint32_t i = 0; st == SW_OK && i < pl->n_buffers; i++) {
        const plan_buffer *b = &pl->buffers[i];
        if (b->tier != TIER_DEVICE)
            continue;
        st = load_buffer(e, b, f);
        done += b->bytes;
        if (st == SW_OK && opt != NULL && opt->load_progress)
            opt->load_progress(opt->load_progress_user, (size_t)done, (size_t)total);
    }
    return st;
}

sw_status engine_load(sw_engine *e, const sw_engine_options *opt, sw_alloc_failure *f) {
    sw_status st;
    e->side[SIDE_HOST].be = e->host;
    e->side[SIDE_DEVICE].be = e->device;
    act_layout_init(&e->config, e->n_tok, &e->act);
    if ((st = init_tables(e)) != SW_OK || (st = load_host(e, f)) != SW_OK ||
        (st = host_weights_load(e, f)) != SW_OK)
        goto fail;
    engine_bind_host_views(e);
    if (e->device && (st = load_device(e, opt, f)) != SW_OK)
        goto fail;
    host_weights_end_load(e);
    if ((st = ring_start(e)) != SW_OK)
        goto fail;
    return SW_OK;
fail:
    engine_unload(e);
    return st;
}

void engine_unload(sw_engine *e) {
    if (e->device) {
        /* Let queued work land before its memory is freed. */
        (void)e->device->vt->sync(e->device);
        ring_free(e);
        e->device->vt->event_destroy(e->device, e->side[SIDE_DEVICE].done);
        for (uint32_t i = e->n_allocs; i > 0; i--)
            e->device->vt->free(e->device, e->allocs[i - 1]);
    }
    host_weights_free(e);   /* after the copies from it have landed */
    free(e->allocs);
    free(e->kv);
    free(e->layers);
    free(e->host_kv);
    if (e->side[SIDE_HOST].host_locked)
        e->device->vt->host_unregister(e->device, e->side[SIDE_HOST].host_base);
    free(e->side[SIDE_HOST].host_base);
    memset(&e->ring, 0, sizeof e->ring);
    memset(&e->side, 0, sizeof e->side);
    e->allocs = NULL;
    e->n_allocs = 0;
    e->kv = NULL;
    e->layers = NULL;
    e->host_kv = NULL;
    e->logits_dev = NULL;
}
