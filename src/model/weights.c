/*
 * weights.c — the layer tensor table (weights.h; GGUF names, as llama.cpp's
 * converter writes them) and binding by it: each entry says which role it
 * fills, its expected shape in config terms, and when it is required.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/weights.h"
#include "quant/dequant.h"
#include "quant/types.h"
#include "util/error.h"

#define MAT(role, name, a, b) {role, name, false, a, b, NEED_ALWAYS}
#define NORM(role, name, a, need) {role, name, true, a, a, need}

static const layer_tensor layer_table[BW_COUNT] = {
    NORM(BW_ATTN_NORM, "attn_norm", DIM_EMBD, NEED_ALWAYS),
    MAT(BW_Q, "attn_q", DIM_EMBD, DIM_Q),
    MAT(BW_K, "attn_k", DIM_EMBD, DIM_KV),
    MAT(BW_V, "attn_v", DIM_EMBD, DIM_KV),
    MAT(BW_O, "attn_output", DIM_Q, DIM_EMBD),
    NORM(BW_Q_NORM, "attn_q_norm", DIM_HEAD, NEED_QK_NORM),
    NORM(BW_K_NORM, "attn_k_norm", DIM_HEAD, NEED_QK_NORM),
    NORM(BW_POST_ATTN_NORM, "post_attention_norm", DIM_EMBD, NEED_POST_NORMS),
    NORM(BW_FFN_NORM, "ffn_norm", DIM_EMBD, NEED_ALWAYS),
    MAT(BW_GATE, "ffn_gate", DIM_EMBD, DIM_FF),
    MAT(BW_UP, "ffn_up", DIM_EMBD, DIM_FF),
    MAT(BW_DOWN, "ffn_down", DIM_FF, DIM_EMBD),
    NORM(BW_POST_FFW_NORM, "post_ffw_norm", DIM_EMBD, NEED_POST_NORMS),
};

const layer_tensor *model_layer_tensors(size_t *n) {
    *n = BW_COUNT;
    return layer_table;
}

uint64_t model_dim_value(const model_config *c, model_dim d) {
    switch (d) {
    case DIM_EMBD: return c->n_embd;
    case DIM_FF: return c->n_ff;
    case DIM_Q: return (uint64_t)c->n_head * c->n_embd_head;
    case DIM_KV: return (uint64_t)c->n_head_kv * c->n_embd_head;
    case DIM_HEAD: return c->n_embd_head;
    }
    return 0;
}

uint64_t model_max_row_elems(const model_config *c) {
    uint64_t most = c->n_embd; /* the embedding and LM head rows */
    for (size_t i = 0; i < BW_COUNT; i++) {
        uint64_t n = model_dim_value(c, layer_table[i].ne0);
        most = !layer_table[i].is_norm && n > most ? n : most;
    }
    return most;
}

bool model_has_tensor(const model_config *c, const layer_tensor *t) {
    return t->need == NEED_ALWAYS || (t->need == NEED_QK_NORM && c->qk_norm) ||
           (t->need == NEED_POST_NORMS && c->post_norms);
}

/* Finds `name`, checks its shape and that kernels exist for its type. */
static sw_status bind_matrix(const gguf_file *f, const char *name, uint64_t ne0,
                             uint64_t ne1, tensor_view *out) {
    const gguf_tensor *t = gguf_find_tensor(f, name);
    if (t == NULL)
        return sw_errorf(SW_ERR_FORMAT, "model lacks tensor '%s'", name);
    if (t->n_dims != 2 || t->ne[0] != ne0 || t->ne[1] != ne1)
        return sw_errorf(SW_ERR_FORMAT, "tensor '%s' has shape [%llu, %llu], expected "
                         "[%llu, %llu]", name, (unsigned long long)t->ne[0],
                         (unsigned long long)t->ne[1], (unsigned long long)ne0,
                         (unsigned long long)ne1);
    const type_traits *tt = type_get_traits(t->type);
    if (tt == NULL || !tt->dequant_supported)
        return sw_errorf(SW_ERR_UNSUPPORTED, "unsupported tensor type %u (%s) in tensor '%s'; "
                         "re-export the model as Q8_0, Q4_K_M, F16 or BF16",
                         t->type, type_name(t->type), name);
    *out = (tensor_view){t->name, t->type, 2, {t->ne[0], t->ne[1], 1, 1}, t->n_bytes, t->data};
    return SW_OK;
}

/* Copies the 1-D tensor `name` of n elements to dst as f32 and views it. */
static sw_status bind_norm(const gguf_file *f, const char *name, uint64_t n, float *dst,
                           tensor_view *out) {
    const gguf_tensor *t = gguf_find_tensor(f, name);
    if (t == NULL)
        return sw_errorf(SW_ERR_FORMAT, "model lacks tensor '%s'", name);
    if (t->n_elements != n || t->ne[0] != n)
        return sw_errorf(SW_ERR_FORMAT, "tensor '%s' has %llu elements, expected %llu", name,
                         (unsigned long long)t->n_elements, (unsigned long long)n);
    sw_status st = quant_dequantize(t->type, t->data, dst, n);
    if (st != SW_OK)
        return sw_error_prefix(st, "tensor '%s'", name);
    *out = (tensor_view){t->name, SW_TYPE_F32, 1, {n, 1, 1, 1}, n * sizeof(float), dst};
    return SW_OK;
}

/* Floats needed for all norm vectors. */
static size_t norm_floats(const model_config *c) {
    size_t per_layer = 0;
    for (size_t s = 0; s < BW_COUNT; s++)
        if (layer_table[s].is_norm && model_has_tensor(c, &layer_table[s]))
            per_layer += model_dim_value(c, layer_table[s].ne0);
    return per_layer * c->n_layer + c->n_embd;
}

static sw_status bind_layer(const gguf_file *f, const model_config *c, uint32_t il,
                            layer_weights *lw, float **arena) {
    char name[96];
    for (size_t s = 0; s < BW_COUNT; s++) {
        const layer_tensor *sp = &layer_table[s];
        if (!model_has_tensor(c, sp))
            continue;
        snprintf(name, sizeof name, "blk.%u.%s.weight", il, sp->suffix);
        tensor_view *field = &lw->t[sp->role];
        sw_status st;
        if (sp->is_norm) {
            uint64_t n = model_dim_value(c, sp->ne0);
            st = bind_norm(f, name, n, *arena, field);
            *arena += n;
        } else {
            st = bind_matrix(f, name, model_dim_value(c, sp->ne0), model_dim_value(c, sp->ne1),
                             field);
        }
        if (st != SW_OK)
            return st;
    }
    return SW_OK;
}

sw_status model_weights_bind(const gguf_file *f, const model_config *c, model_weights *w) {
    sw_status st;
    memset(w, 0, sizeof *w);
    w->layers = calloc(c->n_layer, sizeof *w->layers);
    w->norm_arena = malloc(norm_floats(c) * sizeof(float));
    if (w->layers == NULL || w->norm_arena == NULL) {
        st = sw_errorf(SW_ERR_OOM_HOST, "out of host memory binding model weights");
        goto fail;
    }
    float *arena = w->norm_arena;
    if ((st = bind_matrix(f, "token_embd.weight", c->n_embd, c->n_vocab, &w->tok_embd)))
        goto fail;
    w->output = w->tok_embd; /* Gemma ties the LM head to the embedding */
    if (gguf_find_tensor(f, "output.weight") != NULL &&
        (st = bind_matrix(f, "output.weight", c->n_embd, c->n_vocab, &w->output)))
        goto fail;
    if ((st = bind_norm(f, "output_norm.weight", c->n_embd, arena, &w->output_norm)))
        goto fail;
    arena += c->n_embd;
    for (uint32_t il = 0; il < c->n_layer; il++)
        if ((st = bind_layer(f, c, il, &w->layers[il], &arena)) != SW_OK)
            goto fail;
    return SW_OK;
fail:
    model_weights_free(w);
    return st;
}

void model_weights_free(model_weights *w) {
    if (w == NULL)
        return;
    free(w->layers);
    free(w->norm_arena);
    memset(w, 0, sizeof *w);
}
