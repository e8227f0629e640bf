/*
 * kv.h — sizes of the KV cache: per layer and per sequence, keys
 * (post-RoPE) and values for the positions a query can still see.
 *
 * Global layers keep n_ctx rows indexed by position. Local (sliding-window)
 * layers keep only a ring of W + n_batch - 1 rows indexed by position mod
 * ring size: enough that writing a whole prefill chunk (at most n_batch
 * tokens of one sequence per forward) never overwrites a key some query in
 * that chunk still needs. Rows are stored as F32, F16 or BF16 (--kv-type):
 * the append op rounds each new row to it (nearest even), attention widens
 * it exactly, so f16 KV halves the bytes and changes nothing else. The
 * planner counts these bytes and the engine allocates them (backend.h's
 * bkv says how a layer's rows sit in memory), both from here.
 */
#ifndef SW_MODEL_KV_H
#define SW_MODEL_KV_H

#include <stdint.h>

#include "model/config.h"

/* Rows a layer needs for context n_ctx and prefill chunks of n_batch. */
uint32_t kv_layer_rows(const model_config *c, uint32_t il, uint32_t n_ctx, uint32_t n_batch);

/* Bytes of one element of a cache of `type` (4 for F32, 2 for F16/BF16). */
uint32_t kv_elem_bytes(uint32_t type);

/* Bytes of layer il's keys plus values with `rows` rows of `type`,
 * rounded up to the device allocator's 256-byte blocks; 0 for a layer
 * that reads another's cache (model_layer_owns_kv). Callers pass rows x
 * sequences. */
uint64_t kv_layer_bytes(const model_config *c, uint32_t il, uint64_t rows, uint32_t type);

#endif
