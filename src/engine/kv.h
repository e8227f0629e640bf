/*
 * kv.h — the KV cache: per layer, keys (post-RoPE) and values for the
 * positions a query can still see.
 *
 * Global layers keep n_ctx rows indexed by position. Local (sliding-window)
 * layers keep only a ring of W + n_batch - 1 rows indexed by position mod
 * ring size: enough that writing a whole prefill chunk never overwrites a
 * key some query in that chunk still needs. Rows are f32 today. The rows
 * of each layer live on the side (host or device) the plan gives them;
 * the engine allocates them, this header only sizes and indexes them.
 */
#ifndef SW_ENGINE_KV_H
#define SW_ENGINE_KV_H

#include <stdint.h>

#include "model/config.h"

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
    kv_layer *layers;        /* (n_layer), owned by the engine */
} kv_cache;

/* Rows a layer needs for context n_ctx and prefill chunks of n_batch. */
uint32_t kv_layer_rows(const model_config *c, uint32_t il, uint32_t n_ctx, uint32_t n_batch);

/* Bytes of one layer's keys plus values with `rows` rows (f32). */
uint64_t kv_layer_bytes(const model_config *c, uint32_t rows);

/* Row index holding position pos in layer l. */
static inline uint32_t kv_row(const kv_layer *l, uint32_t pos) {
    return l->ring ? pos % l->ring : pos;
}

#endif
