/*
 * kv.c — KV cache sizing (see kv.h). Shared by the planner (which counts
 * these bytes) and the engine (which allocates them), so the two agree.
 */
#include "model/kv.h"

#include "quant/types.h"

uint32_t kv_layer_rows(const model_config *c, uint32_t il, uint32_t n_ctx, uint32_t n_batch) {
    if (!model_layer_is_local(c, il))
        return n_ctx;
    uint64_t ring = (uint64_t)c->sliding_window + n_batch - 1;
    return ring < n_ctx ? (uint32_t)ring : n_ctx;
}

uint32_t kv_elem_bytes(uint32_t type) { return type == SW_TYPE_F32 ? 4 : 2; }

uint64_t kv_layer_bytes(const model_config *c, uint32_t il, uint64_t rows, uint32_t type) {
    if (!model_layer_owns_kv(c, il))
        return 0;
    /* Rounded to the device allocator's 256-byte blocks (see plan_padded). */
    uint64_t bytes = 2ull * rows * model_layer_n_head_kv(c, il) * model_layer_head_dim(c, il) *
                     kv_elem_bytes(type);
    return (bytes + 255) / 256 * 256;
}
