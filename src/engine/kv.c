/*
 * kv.c — KV cache sizing and allocation (see kv.h). One allocation for all
 * layers; sizes come from the config and the workload only.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/kv.h"
#include "model/config.h"
#include "util/error.h"

uint32_t kv_layer_rows(const model_config *c, uint32_t il, uint32_t n_ctx, uint32_t n_batch) {
    if (!model_layer_is_local(c, il))
        return n_ctx;
    uint64_t ring = (uint64_t)c->sliding_window + n_batch - 1;
    return ring < n_ctx ? (uint32_t)ring : n_ctx;
}

sw_status kv_cache_create(const model_config *c, uint32_t n_ctx, uint32_t n_batch,
                          kv_cache *kv) {
    memset(kv, 0, sizeof *kv);
    kv->n_layer = c->n_layer;
    kv->n_ctx = n_ctx;
    kv->row_floats = c->n_head_kv * c->n_embd_head;
    uint64_t total_rows = 0;
    for (uint32_t il = 0; il < c->n_layer; il++)
        total_rows += kv_layer_rows(c, il, n_ctx, n_batch);
    kv->bytes = total_rows * 2 * kv->row_floats * sizeof(float);
    kv->layers = calloc(c->n_layer, sizeof *kv->layers);
    kv->arena = kv->bytes <= SIZE_MAX ? calloc(1, (size_t)kv->bytes) : NULL;
    if (kv->layers == NULL || kv->arena == NULL) {
        kv_cache_free(kv);
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for the KV cache (%.1f MiB for "
                         "context %u); use a smaller -c", (double)total_rows * 2 *
                         c->n_head_kv * c->n_embd_head * 4 / 1048576.0, n_ctx);
    }
    float *p = kv->arena;
    for (uint32_t il = 0; il < c->n_layer; il++) {
        kv_layer *l = &kv->layers[il];
        l->rows = kv_layer_rows(c, il, n_ctx, n_batch);
        l->ring = l->rows < n_ctx ? l->rows : 0;
        l->k = p;
        p += (size_t)l->rows * kv->row_floats;
        l->v = p;
        p += (size_t)l->rows * kv->row_floats;
    }
    return SW_OK;
}

void kv_cache_free(kv_cache *kv) {
    if (kv == NULL)
        return;
    free(kv->layers);
    free(kv->arena);
    memset(kv, 0, sizeof *kv);
}
