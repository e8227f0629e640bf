/*
 * load.c — turns a plan into memory: allocates each of the plan's device
 * buffers (in plan order, exactly the planned size) through the device
 * backend's accounting allocator, the host activations and host KV rows,
 * the host weight buffers (host_weights.c: converted weights, the pinned
 * copy of streamed layers), copies resident weights with progress, and
 * starts the ring. Any failure frees everything made so far, so the engine
 * can re-plan.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "plan/plan_api.h"
#include "util/error.h"

/* Allocates one device buffer and remembers it for engine_unload. */
static sw_status dev_alloc(sw_engine *e, const plan_buffer *b, void **out) {
    sw_status st = e->device->vt->alloc(e->device, b->bytes, b->purpose, out);
    if (st != SW_OK)
        return st;
    e->allocs[e->n_allocs++].ptr = *out;
    return SW_OK;
}

/* Queues the copies of a packed layer into `base`; `done` fires at the end. */
static sw_status copy_layer(sw_engine *e, uint32_t il, void *base, backend_event *done) {
    const layer_pack *p = &e->packs[il];
    for (uint32_t i = 0; i < p->n_items; i++) {
        sw_status st = e->device->vt->copy_async(e->device, (char *)base + p->items[i].offset,
                                                 p->items[i].src, p->items[i].bytes,
                                                 i + 1 == p->n_items ? done : NULL);
        if (st != SW_OK)
            return st;
    }
    return SW_OK;
}

static sw_status load_resident_layer(sw_engine *e, const plan_buffer *b, backend_event *ev) {
    uint32_t il = (uint32_t)b->layer;
    void *base;
    sw_status st = host_weights_stage(e, il);
    if (st != SW_OK)
        return st;
    if (b->bytes != e->packs[il].total_bytes)
        return sw_errorf(SW_ERR_ARG, "internal: plan sizes layer %u at %llu bytes, packing "
                         "needs %llu", il, (unsigned long long)b->bytes,
                         (unsigned long long)e->packs[il].total_bytes);
    if ((st = dev_alloc(e, b, &base)) != SW_OK ||
        (st = copy_layer(e, il, base, ev)) != SW_OK ||
        (st = e->device->vt->event_wait(e->device, ev)) != SW_OK)
        return st;
    layer_pack_bind(&e->config, &e->weights.layers[il], &e->packs[il], base,
                    &e->dev_layers[il]);
    return SW_OK;
}

static sw_status load_lm_head(sw_engine *e, const plan_buffer *b, backend_event *ev) {
    uint64_t mat = plan_padded(e->weights.output.n_bytes);
    uint64_t norm_bytes = (uint64_t)e->config.n_embd * sizeof(float);
    void *base;
    sw_status st;
    if (b->bytes != mat + plan_padded(norm_bytes))
        return sw_errorf(SW_ERR_ARG, "internal: plan sizes the LM head at %llu bytes",
                         (unsigned long long)b->bytes);
    if ((st = dev_alloc(e, b, &base)) != SW_OK ||
        (st = e->device->vt->copy_async(e->device, base, e->weights.output.data,
                                        e->weights.output.n_bytes, NULL)) != SW_OK ||
        (st = e->device->vt->copy_async(e->device, (char *)base + mat, e->weights.output_norm,
                                        norm_bytes, ev)) != SW_OK ||
        (st = e->device->vt->event_wait(e->device, ev)) != SW_OK)
        return st;
    e->lm_head_dev = e->weights.output;
    e->lm_head_dev.data = base;
    e->output_norm_dev = (float *)(void *)((char *)base + mat);
    return SW_OK;
}

/* One device buffer of the plan. */
static sw_status load_buffer(sw_engine *e, const plan_buffer *b, backend_event *ev) {
    const model_config *c = &e->config;
    void *p;
    sw_status st;
    switch (b->kind) {
    case BUF_LAYER:
        return load_resident_layer(e, b, ev);
    case BUF_RING_SLOT:
        if (b->layer < 0 || b->layer >= ENGINE_MAX_SLOTS)
            return sw_errorf(SW_ERR_ARG, "internal: ring slot %d", b->layer);
        return dev_alloc(e, b, &e->ring.slot[b->layer]);
    case BUF_KV:
        if ((st = dev_alloc(e, b, &p)) != SW_OK)
            return st;
        e->kv.layers[b->layer].k = p;
        e->kv.layers[b->layer].v = (char *)p + (size_t)e->kv.layers[b->layer].rows *
                                                   e->kv.row_bytes;
        return SW_OK;
    case BUF_ACTIVATIONS:
        if ((st = dev_alloc(e, b, &p)) != SW_OK)
            return st;
        forward_scratch_init(c, e->n_batch, e->n_ctx, (uint32_t)e->n_threads, p,
                             &e->side[SIDE_DEVICE].scratch);
        return SW_OK;
    case BUF_LM_HEAD:
        return load_lm_head(e, b, ev);
    case BUF_LOGITS:
        if ((st = dev_alloc(e, b, &p)) != SW_OK)
            return st;
        e->logits_dev = p;
        return SW_OK;
    case BUF_OTHER:
    case BUF_CONVERTED:
    case BUF_STAGING:
        return SW_OK; /* host tiers: host_weights.c */
    }
    return SW_OK;
}

/* Host activations and the KV rows the plan keeps on the host. */
static sw_status load_host(sw_engine *e) {
    const model_config *c = &e->config;
    const plan *pl = e->plan;
    uint64_t kv_bytes = 0;
    for (uint32_t il = 0; il < c->n_layer; il++)
        if (pl->kv_tier[il] != TIER_DEVICE)
            kv_bytes += kv_layer_bytes(c, e->kv.layers[il].rows, e->kv.type);
    uint64_t scratch = forward_scratch_bytes(c, e->n_batch, e->n_ctx, (uint32_t)e->n_threads);
    e->host_scratch = malloc(scratch);
    e->host_kv = kv_bytes ? malloc(kv_bytes) : NULL;
    if (e->host_scratch == NULL || (kv_bytes && e->host_kv == NULL))
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for activations and the KV "
                         "cache (%.1f MiB); use a smaller -c",
                         (double)(scratch + kv_bytes) / 1048576.0);
    forward_scratch_init(c, e->n_batch, e->n_ctx, (uint32_t)e->n_threads, e->host_scratch,
                         &e->side[SIDE_HOST].scratch);
    char *p = e->host_kv;
    for (uint32_t il = 0; il < c->n_layer; il++) {
        if (pl->kv_tier[il] == TIER_DEVICE)
            continue;
        kv_layer *l = &e->kv.layers[il];
        l->k = p;
        l->v = p + (size_t)l->rows * e->kv.row_bytes;
        p += kv_layer_bytes(c, l->rows, e->kv.type);
    }
    return SW_OK;
}

static sw_status init_kv(sw_engine *e) {
    const model_config *c = &e->config;
    e->kv.n_layer = c->n_layer;
    e->kv.n_ctx = e->n_ctx;
    e->kv.type = plan_kv_tensor_type(e->plan->workload.kv_type);
    e->kv.row_elems = c->n_head_kv * c->n_embd_head;
    e->kv.row_bytes = (uint64_t)e->kv.row_elems * kv_elem_bytes(e->kv.type);
    e->kv.layers = calloc(c->n_layer, sizeof *e->kv.layers);
    e->dev_layers = calloc(c->n_layer, sizeof *e->dev_layers);
    e->allocs = calloc(e->plan->n_buffers + 1, sizeof *e->allocs);
    if (e->kv.layers == NULL || e->dev_layers == NULL || e->allocs == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory loading the model");
    for (uint32_t il = 0; il < c->n_layer; il++) {
        kv_layer *l = &e->kv.layers[il];
        l->rows = kv_layer_rows(c, il, e->n_ctx, e->n_batch);
        l->ring = l->rows < e->n_ctx ? l->rows : 0;
    }
    return SW_OK;
}

static sw_status load_device(sw_engine *e, const sw_engine_options *opt) {
    const plan *pl = e->plan;
    backend_event *ev = NULL;
    uint64_t done = 0, total = pl->tier_bytes[TIER_DEVICE];
    e->device->vt->reset_peak(e->device);
    sw_status st = e->device->vt->event_create(e->device, &ev);
    for (uint32_t i = 0; st == SW_OK && i < pl->n_buffers; i++) {
        const plan_buffer *b = &pl->buffers[i];
        if (b->tier != TIER_DEVICE)
            continue;
        st = load_buffer(e, b, ev);
        done += b->bytes;
        if (st == SW_OK && opt->load_progress)
            opt->load_progress(opt->load_progress_user, (size_t)done, (size_t)total);
    }
    if (ev)
        e->device->vt->event_destroy(e->device, ev);
    return st;
}

sw_status engine_load(sw_engine *e, const sw_engine_options *opt) {
    sw_status st;
    e->side[SIDE_HOST].be = e->host;
    e->side[SIDE_DEVICE].be = e->device;
    if ((st = init_kv(e)) != SW_OK || (st = load_host(e)) != SW_OK ||
        (st = host_weights_load(e)) != SW_OK)
        goto fail;
    if (e->device && (st = load_device(e, opt)) != SW_OK)
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
        /* Let queued copies land before their destinations are freed. */
        for (uint32_t i = 0; i < ENGINE_MAX_SLOTS; i++) {
            if (e->ring.ready[i] == NULL)
                continue;
            e->device->vt->event_wait(e->device, e->ring.ready[i]);
            e->device->vt->event_destroy(e->device, e->ring.ready[i]);
        }
        for (uint32_t i = e->n_allocs; i > 0; i--)
            e->device->vt->free(e->device, e->allocs[i - 1].ptr);
    }
    host_weights_free(e);   /* after the copies from it have landed */
    free(e->ring.streamed);
    free(e->allocs);
    free(e->kv.layers);
    free(e->dev_layers);
    free(e->host_kv);
    free(e->host_scratch);
    memset(&e->ring, 0, sizeof e->ring);
    memset(&e->kv, 0, sizeof e->kv);
    memset(&e->side, 0, sizeof e->side);
    e->allocs = NULL;
    e->n_allocs = 0;
    e->dev_layers = NULL;
    e->host_kv = e->host_scratch = NULL;
    e->logits_dev = NULL;
    e->output_norm_dev = NULL;
}
