/*
 * kv.h — the KV cache: per layer, keys (post-RoPE) and values for the
 * positions a query can still see.
 *
 * Global layers keep n_ctx rows indexed by position. Local (sliding-window)
 * layers keep only a ring of W + n_batch - 1 rows indexed by position mod
 * ring size: enough that writing a whole prefill chunk never overwrites a
 * key some query in that chunk still needs. Rows are f32 today.
 */
#ifndef SW_ENGINE_KV_H
#define SW_ENGINE_KV_H

#include <stdint.h>

#include "model/config.h"
#include "spillway.h"

typedef struct kv_layer {
    float *k;          /* (rows, n_head_kv * hd) */
    float *v;          /* (rows, n_head_kv * hd) */
    uint32_t rows;
    uint32_t ring;     /* 0: rows == n_ctx, row = position; else row = pos % ring */
} kv_layer;

typedef struct kv_cache {
    uint32_t n_layer;
    uint32_t n_ctx;
    uint32_t row_floats;     /* n_head_kv * hd */
    kv_layer *layers;
    float *arena;            /* owns every layer's rows */
    uint64_t bytes;
} kv_cache;

/* Rows a layer needs for context n_ctx and prefill chunks of n_batch. */
uint32_t kv_layer_rows(const model_config *c, uint32_t il, uint32_t n_ctx, uint32_t n_batch);

/* Allocates the cache. Errors: SW_ERR_OOM_HOST (message gives bytes). */
sw_status kv_cache_create(const model_config *c, uint32_t n_ctx, uint32_t n_batch,
                          kv_cache *out);
void kv_cache_free(kv_cache *kv);

/* Row index holding position pos in layer l. */
static inline uint32_t kv_row(const kv_layer *l, uint32_t pos) {
    return l->ring ? pos % l->ring : pos;
}

#endif
