/*
 * pack.c — layer packing (pack.h). The order is the layer_weights field
 * order; absent optional norms take no space.
 */
#include <string.h>

#include "engine/pack.h"
#include "plan/plan.h"

typedef struct slot_ref {
    const tensor_view *view;   /* matrix, or NULL for a norm */
    float *const *norm;        /* norm vector pointer, or NULL */
    uint32_t norm_len;
} slot_ref;

/* The layer's tensors in packing order. Returns how many. */
static uint32_t layer_refs(const model_config *c, const layer_weights *w, slot_ref *r) {
    uint32_t n = 0, E = c->n_embd, hd = c->n_embd_head;
    const tensor_view *mats[] = {&w->wq, &w->wk, &w->wv, &w->wo, &w->w_gate, &w->w_up,
                                 &w->w_down};
    float *const *norms[] = {&w->attn_norm, &w->q_norm, &w->k_norm, &w->post_attn_norm,
                             &w->ffn_norm, &w->post_ffw_norm};
    const uint32_t norm_len[] = {E, hd, hd, E, E, E};
    for (size_t i = 0; i < sizeof mats / sizeof mats[0]; i++)
        r[n++] = (slot_ref){mats[i], NULL, 0};
    for (size_t i = 0; i < sizeof norms / sizeof norms[0]; i++)
        if (*norms[i] != NULL)
            r[n++] = (slot_ref){NULL, norms[i], norm_len[i]};
    return n;
}

void layer_pack_build(const model_config *c, const layer_weights *w, layer_pack *p) {
    slot_ref refs[PACK_MAX_ITEMS];
    uint32_t n = layer_refs(c, w, refs);
    uint64_t off = 0;
    memset(p, 0, sizeof *p);
    for (uint32_t i = 0; i < n; i++) {
        const void *src = refs[i].view ? refs[i].view->data : (const void *)*refs[i].norm;
        uint64_t bytes = refs[i].view ? refs[i].view->n_bytes
                                      : (uint64_t)refs[i].norm_len * sizeof(float);
        p->items[i] = (pack_item){src, off, bytes};
        off += plan_padded(bytes);
    }
    p->n_items = n;
    p->total_bytes = off;
}

void layer_pack_bind(const model_config *c, const layer_weights *w, const layer_pack *p,
                     void *base, layer_weights *out) {
    slot_ref refs[PACK_MAX_ITEMS];
    uint32_t n = layer_refs(c, w, refs);
    *out = *w;
    for (uint32_t i = 0; i < n && i < p->n_items; i++) {
        char *dst = (char *)base + p->items[i].offset;
        /* Same field of `out` as refs[i] points at in `w`. */
        if (refs[i].view) {
            size_t off = (size_t)((const char *)refs[i].view - (const char *)w);
            tensor_view *v = (tensor_view *)(void *)((char *)out + off);
            v->data = dst;
        } else {
            size_t off = (size_t)((const char *)refs[i].norm - (const char *)w);
            *(float **)(void *)((char *)out + off) = (float *)(void *)dst;
        }
    }
}
