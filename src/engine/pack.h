/*
 * pack.h — how one transformer layer's tensors sit in a single device
 * buffer (a resident copy or a ring slot): in a fixed order, each tensor
 * starting at a multiple of PLAN_TENSOR_ALIGN, norms as f32. The planner's
 * layer sizes and the engine's copies both come from here.
 */
#ifndef SW_ENGINE_PACK_H
#define SW_ENGINE_PACK_H

#include <stdint.h>

#include "model/config.h"
#include "model/weights.h"

#define PACK_MAX_ITEMS 16

typedef struct pack_item {
    const void *src;     /* host bytes (file mapping or norm arena) */
    uint64_t offset;     /* within the layer buffer */
    uint64_t bytes;
} pack_item;

typedef struct layer_pack {
    uint32_t n_items;
    pack_item items[PACK_MAX_ITEMS];
    uint64_t total_bytes;   /* padded size of the whole layer */
} layer_pack;

/* Lays out the host layer `w` (views into the mapping, norms in the arena). */
void layer_pack_build(const model_config *c, const layer_weights *w, layer_pack *out);

/* Views of the packed copy at `base` (a device buffer of total_bytes). */
void layer_pack_bind(const model_config *c, const layer_weights *w, const layer_pack *p,
                     void *base, layer_weights *out);

#endif
