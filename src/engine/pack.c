/*
 * pack.c — layer packing (pack.h): items in the layer table's order,
 * absent optional norms taking no space.
 */
#include <string.h>

#include "engine/pack.h"
#include "plan/plan.h"

void layer_pack_build(const model_config *c, uint32_t il, const layer_weights *w,
                      layer_pack *p) {
    size_t n = 0;
    const layer_tensor *table = model_layer_tensors(&n);
    uint64_t off = 0;
    memset(p, 0, sizeof *p);
    for (size_t i = 0; i < n; i++) {
        const tensor_view *v = &w->t[table[i].role];
        if (!model_has_tensor(c, il, &table[i]) || v->data == NULL)
            continue;
        p->items[p->n_items++] = (pack_item){table[i].role, v->data, off, v->n_bytes};
        off += plan_padded(v->n_bytes);
    }
    p->total_bytes = off;
}

static btensor tensor_at(const tensor_view *v, bmem at) {
    return (btensor){.name = v->name, .type = v->type, .ne0 = v->ne[0],
                     .ne1 = v->n_dims > 1 ? v->ne[1] * (v->n_dims > 2 ? v->ne[2] : 1) : 1,
                     .n_bytes = v->n_bytes, .mem = at};
}

void layer_pack_bind(const layer_weights *w, const layer_pack *p, bmem base, btensor *out) {
    memset(out, 0, BW_COUNT * sizeof *out);
    for (uint32_t i = 0; i < p->n_items; i++) {
        const pack_item *it = &p->items[i];
        out[it->role] = tensor_at(&w->t[it->role], bmem_at(base, it->offset));
    }
}

btensor btensor_of_host(const tensor_view *v, backend_buf *host_mem) {
    if (v->data == NULL)
        return (btensor){.name = v->name};
    return tensor_at(v, (bmem){host_mem, (uint64_t)(uintptr_t)v->data});
}

void layer_bind_host(const layer_weights *w, backend_buf *host_mem, btensor *out) {
    for (int r = 0; r < BW_COUNT; r++)
        out[r] = btensor_of_host(&w->t[r], host_mem);
}
