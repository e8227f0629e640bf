/*
 * kv.h — the KV cache: per layer, keys (post-RoPE) and values for the
 * positions a query can still see.
 *
 * Global layers keep n_ctx rows indexed by position. Local (sliding-window)
 * layers keep only a ring of W + n_batch - 1 rows indexed by position mod
 * ring size: enough that writing a whole prefill chunk never overwrites a
 * key some query in that chunk still needs. Rows are stored as `type`
 * (F32, F16 or BF16: --kv-type): the forward pass rounds each new row to
 * it (nearest even) when writing, and attention widens it exactly when
 * reading, so f16 KV halves the bytes and changes nothing else. The rows
 * of each layer live on the side (host or device) the plan gives them;
 * the engine allocates them, this header only sizes and indexes them.
 */
#ifndef SW_ENGINE_KV_H
#define SW_ENGINE_KV_H

#include <stdint.h>

#include "model/config.h"

typedef struct kv_layer {
    void *k;           /* (rows, n_head_kv * hd) elements of the cache type */
    void *v;           /* (rows, n_head_kv * hd) */
    uint32_t rows;
    uint32_t ring;     /* 0: rows == n_ctx, row = position; else row = pos % ring */
} kv_layer;

typedef struct kv_cache {
    uint32_t n_layer;
    uint32_t n_ctx;
    uint32_t type;           /* SW_TYPE_F32, SW_TYPE_F16 or SW_TYPE_BF16 */
    uint32_t row_elems;      /* n_head_kv * hd */
    uint64_t row_bytes;      /* row_elems * kv_elem_bytes(type) */
    kv_layer *layers;        /* (n_layer), owned by the engine */
} kv_cache;

/* Rows a layer needs for context n_ctx and prefill chunks of n_batch. */
uint32_t kv_layer_rows(const model_config *c, uint32_t il, uint32_t n_ctx, uint32_t n_batch);

/* Bytes of one element of a cache of `type` (4 for F32, 2 for F16/BF16). */
uint32_t kv_elem_bytes(uint32_t type);

/* Bytes of one layer's keys plus values with `rows` rows of `type`,
 * rounded up to the device allocator's 256-byte blocks. The planner passes
 * rows x sequences. */
uint64_t kv_layer_bytes(const model_config *c, uint64_t rows, uint32_t type);

/* Row index holding position pos in layer l. */
static inline uint32_t kv_row(const kv_layer *l, uint32_t pos) {
    return l->ring ? pos % l->ring : pos;
}

#endif
