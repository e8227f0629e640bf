/*
 * pack.h — how one transformer layer's tensors sit in a single device
 * buffer (a resident copy, a ring slot, or the pinned staging copy): in
 * the layer table's order (model/weights.h), each tensor starting at a
 * multiple of PLAN_TENSOR_ALIGN, norms as f32. The planner's layer sizes
 * (plan/model_bytes.c) follow the same table, so the two agree to the byte.
 */
#ifndef SW_ENGINE_PACK_H
#define SW_ENGINE_PACK_H

#include <stdint.h>

#include "backend/backend.h"
#include "model/config.h"
#include "model/weights.h"

typedef struct pack_item {
    block_weight role;
    const void *src;     /* host bytes (file mapping, norm arena, converted copy) */
    uint64_t offset;     /* within the layer buffer */
    uint64_t bytes;
} pack_item;

typedef struct layer_pack {
    uint32_t n_items;
    pack_item items[BW_COUNT];
    uint64_t total_bytes;   /* padded size of the whole layer */
} layer_pack;

/* Lays out the host layer `w` (its present tensors, in table order). */
void layer_pack_build(const model_config *c, uint32_t il, const layer_weights *w,
                      layer_pack *out);

/* The backend views of a copy of the pack at `base` (a device buffer of
 * total_bytes): each role of w placed at its item's offset. Absent roles
 * get n_bytes 0. */
void layer_pack_bind(const layer_weights *w, const layer_pack *p, bmem base, btensor *out);

/* Views of w where it lies, through a backend whose memory is the host's
 * (host_mem: its host_memory() buffer). */
void layer_bind_host(const layer_weights *w, backend_buf *host_mem, btensor *out);

/* The btensor of one host view through host_mem (n_bytes 0 when unbound). */
btensor btensor_of_host(const tensor_view *v, backend_buf *host_mem);

#endif
