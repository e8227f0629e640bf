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

#define MAT(role, name, a, b, need) {role, name ".weight", false, a, b, DIM_ONE, need}
#define MAT3(role, name, a, b, c, need) {role, name ".weight", false, a, b, c, need}
#define VEC(role, name, a, need) {role, name, true, a, DIM_ONE, DIM_ONE, need}
#define NORM(role, name, a, need) VEC(role, name ".weight", a, need)

static const layer_tensor layer_table[BW_COUNT] = {
    NORM(BW_ATTN_NORM, "attn_norm", DIM_EMBD, NEED_ALWAYS),
    MAT(BW_Q, "attn_q", DIM_EMBD, DIM_Q, NEED_ALWAYS),
    MAT(BW_K, "attn_k", DIM_EMBD, DIM_KV, NEED_K),
    MAT(BW_V, "attn_v", DIM_EMBD, DIM_KV, NEED_V),
    MAT(BW_O, "attn_output", DIM_Q, DIM_EMBD, NEED_ALWAYS),
    NORM(BW_Q_NORM, "attn_q_norm", DIM_HEAD, NEED_QK_NORM),
    NORM(BW_K_NORM, "attn_k_norm", DIM_HEAD, NEED_K_NORM),
    NORM(BW_POST_ATTN_NORM, "post_attention_norm", DIM_EMBD, NEED_POST_NORMS),
    NORM(BW_FFN_NORM, "ffn_norm", DIM_EMBD, NEED_ALWAYS),
    MAT(BW_GATE, "ffn_gate", DIM_EMBD, DIM_FF, NEED_ALWAYS),
    MAT(BW_UP, "ffn_up", DIM_EMBD, DIM_FF, NEED_ALWAYS),
    MAT(BW_DOWN, "ffn_down", DIM_FF, DIM_EMBD, NEED_ALWAYS),
    NORM(BW_POST_FFW_NORM, "post_ffw_norm", DIM_EMBD, NEED_POST_NORMS),
    NORM(BW_LAYER_SCALE, "layer_output_scale", DIM_ONE, NEED_LAYER_SCALE),
    MAT(BW_PLE_GATE, "inp_gate", DIM_EMBD, DIM_PLE, NEED_PLE),
    MAT(BW_PLE_PROJ, "proj", DIM_PLE, DIM_EMBD, NEED_PLE),
    NORM(BW_PLE_NORM, "post_norm", DIM_EMBD, NEED_PLE),
    NORM(BW_FFN_NORM_2, "pre_ffw_norm_2", DIM_EMBD, NEED_EXPERTS),
    NORM(BW_POST_FFW_NORM_1, "post_ffw_norm_1", DIM_EMBD, NEED_EXPERTS),
    NORM(BW_POST_FFW_NORM_2, "post_ffw_norm_2", DIM_EMBD, NEED_EXPERTS),
    MAT(BW_ROUTER, "ffn_gate_inp", DIM_EMBD, DIM_EXPERTS, NEED_EXPERTS),
    VEC(BW_ROUTER_SCALE, "ffn_gate_inp.scale", DIM_EMBD, NEED_EXPERTS),
    VEC(BW_EXPERT_SCALE, "ffn_down_exps.scale", DIM_EXPERTS, NEED_EXPERTS),
    MAT3(BW_GATE_UP_EXPS, "ffn_gate_up_exps", DIM_EMBD, DIM_FF_EXP2, DIM_EXPERTS, NEED_EXPERTS),
    MAT3(BW_DOWN_EXPS, "ffn_down_exps", DIM_FF_EXP, DIM_EMBD, DIM_EXPERTS, NEED_EXPERTS),
};

const layer_tensor *model_layer_tensors(size_t *n) {
    *n = BW_COUNT;
    return layer_table;
}

uint64_t model_dim_value(const model_config *c, uint32_t il, model_dim d) {
    const uint64_t hd = model_layer_head_dim(c, il);
    switch (d) {
    case DIM_ONE: return 1;
    case DIM_EMBD: return c->n_embd;
    case DIM_FF: return model_layer_n_ff(c, il);
    case DIM_Q: return c->n_head * hd;
    case DIM_KV: return model_layer_n_head_kv(c, il) * hd;
    case DIM_HEAD: return hd;
    case DIM_PLE: return c->n_embd_per_layer;
    case DIM_EXPERTS: return c->n_expert;
    case DIM_FF_EXP: return c->n_ff_exp;
    case DIM_FF_EXP2: return 2ull * c->n_ff_exp;
    }
    return 0;
}

uint64_t model_tensor_elems(const model_config *c, uint32_t il, const layer_tensor *t) {
    return model_dim_value(c, il, t->ne0) * model_dim_value(c, il, t->ne1) *
           model_dim_value(c, il, t->ne2);
}

bool model_is_expert(block_weight role) {
    return role == BW_GATE_UP_EXPS || role == BW_DOWN_EXPS;
}

uint64_t model_max_row_elems(const model_config *c) {
    uint64_t most = c->n_embd; /* the embedding and LM head rows */
    for (uint32_t il = 0; il < c->n_layer; il++)
        for (size_t i = 0; i < BW_COUNT; i++) {
            const layer_tensor *t = &layer_table[i];
            const uint64_t n = model_dim_value(c, il, t->ne0);
            most = !t->is_norm && model_has_tensor(c, il, t) && n > most ? n : most;
        }
    return most;
}

bool model_has_tensor(const model_config *c, uint32_t il, const layer_tensor *t) {
    switch (t->need) {
    case NEED_ALWAYS: return true;
    case NEED_QK_NORM: return c->qk_norm;
    case NEED_POST_NORMS: return c->post_norms;
    case NEED_K: return model_layer_owns_kv(c, il);
    case NEED_K_NORM: return c->qk_norm && model_layer_owns_kv(c, il);
    case NEED_V: return model_layer_owns_kv(c, il) && !(il < MODEL_MAX_LAYERS &&
                                                        c->layer[il].k_eq_v);
    case NEED_LAYER_SCALE: return c->layer_scale;
    case NEED_PLE: return c->n_embd_per_layer != 0;
    case NEED_EXPERTS: return c->n_expert != 0;
    }
    return false;
}

/* Finds `name`, checks its shape (n_dims dimensions: ne0, ne1 and, for 3,
 * ne2) and that kernels exist for its type. */
static sw_status bind_matrix(const gguf_file *f, const char *name, uint32_t n_dims,
                             const uint64_t ne[3], tensor_view *out) {
    const gguf_tensor *t = gguf_find_tensor(f, name);
    if (t == NULL)
        return sw_errorf(SW_ERR_FORMAT, "model lacks tensor '%s'", name);
    const uint64_t ne2 = n_dims == 3 ? t->ne[2] : 1;
    if (t->n_dims != n_dims || t->ne[0] != ne[0] || t->ne[1] != ne[1] || ne2 != ne[2])
        return sw_errorf(SW_ERR_FORMAT, "tensor '%s' has shape [%llu, %llu, %llu] (%u "
                         "dimensions), expected [%llu, %llu, %llu] (%u)", name,
                         (unsigned long long)t->ne[0], (unsigned long long)t->ne[1],
                         (unsigned long long)(t->n_dims >= 3 ? t->ne[2] : 1), t->n_dims,
                         (unsigned long long)ne[0], (unsigned long long)ne[1],
                         (unsigned long long)ne[2], n_dims);
    const type_traits *tt = type_get_traits(t->type);
    if (tt == NULL || !tt->dequant_supported)
        return sw_errorf(SW_ERR_UNSUPPORTED, "unsupported tensor type %u (%s) in tensor '%s'; "
                         "re-export the model as Q8_0, Q4_K_M, F16 or BF16",
                         t->type, type_name(t->type), name);
    *out = (tensor_view){t->name, t->type, n_dims, {ne[0], ne[1], ne[2], 1}, t->n_bytes,
                         t->data};
    return SW_OK;
}

/* A 2-D matrix of ne1 rows of ne0. */
static sw_status bind_matrix2(const gguf_file *f, const char *name, uint64_t ne0, uint64_t ne1,
                              tensor_view *out) {
    const uint64_t ne[3] = {ne0, ne1, 1};
    return bind_matrix(f, name, 2, ne, out);
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
    size_t n = c->n_embd + c->n_embd_per_layer;
    for (uint32_t il = 0; il < c->n_layer; il++)
        for (size_t s = 0; s < BW_COUNT; s++)
            if (layer_table[s].is_norm && model_has_tensor(c, il, &layer_table[s]))
                n += model_dim_value(c, il, layer_table[s].ne0);
    return n;
}

static sw_status bind_layer(const gguf_file *f, const model_config *c, uint32_t il,
                            layer_weights *lw, float **arena) {
    char name[96];
    for (size_t s = 0; s < BW_COUNT; s++) {
        const layer_tensor *sp = &layer_table[s];
        if (!model_has_tensor(c, il, sp))
            continue;
        snprintf(name, sizeof name, "blk.%u.%s", il, sp->suffix);
        tensor_view *field = &lw->t[sp->role];
        const uint64_t ne[3] = {model_dim_value(c, il, sp->ne0), model_dim_value(c, il, sp->ne1),
                                model_dim_value(c, il, sp->ne2)};
        sw_status st;
        if (sp->is_norm) {
            st = bind_norm(f, name, ne[0], *arena, field);
            *arena += ne[0];
        } else {
            st = bind_matrix(f, name, sp->ne2 == DIM_ONE ? 2 : 3, ne, field);
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
    if ((st = bind_matrix2(f, "token_embd.weight", c->n_embd, c->n_vocab, &w->tok_embd)))
        goto fail;
    w->output = w->tok_embd; /* Gemma ties the LM head to the embedding */
    if (gguf_find_tensor(f, "output.weight") != NULL &&
        (st = bind_matrix2(f, "output.weight", c->n_embd, c->n_vocab, &w->output)))
        goto fail;
    if ((st = bind_norm(f, "output_norm.weight", c->n_embd, arena, &w->output_norm)))
        goto fail;
    arena += c->n_embd;
    if (c->n_embd_per_layer) {
        const uint64_t pl = (uint64_t)c->n_layer * c->n_embd_per_layer;
        if ((st = bind_matrix2(f, "per_layer_token_embd.weight", pl, c->n_vocab,
                               &w->ple_embd)) ||
            (st = bind_matrix2(f, "per_layer_model_proj.weight", c->n_embd, pl, &w->ple_proj)) ||
            (st = bind_norm(f, "per_layer_proj_norm.weight", c->n_embd_per_layer, arena,
                            &w->ple_proj_norm)))
            goto fail;
        arena += c->n_embd_per_layer;
    }
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
