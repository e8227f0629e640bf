/*
 * weights.c — the name→field table for Gemma tensors (GGUF names, as
 * llama.cpp's converter writes them) and the shape checks made when binding.
 * One static table drives binding: each entry says which field it fills,
 * its expected shape in config terms, and when it is required.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/weights.h"
#include "quant/dequant.h"
#include "quant/types.h"
#include "util/error.h"

typedef enum { DIM_EMBD, DIM_FF, DIM_Q, DIM_KV, DIM_HEAD } dim_kind;
typedef enum { NEED_ALWAYS, NEED_QK_NORM, NEED_POST_NORMS } need_kind;

typedef struct tensor_spec {
    const char *suffix;        /* "attn_q" in "blk.N.attn_q.weight" */
    size_t offset;             /* field in layer_weights */
    int is_norm;               /* 1: f32 vector copied; 0: matrix view */
    dim_kind ne0, ne1;         /* expected shape (ne1 unused for norms) */
    need_kind need;
} tensor_spec;

#define MAT(name, field, a, b) {name, offsetof(layer_weights, field), 0, a, b, NEED_ALWAYS}
#define NORM(name, field, a, need) {name, offsetof(layer_weights, field), 1, a, a, need}

static const tensor_spec layer_specs[] = {
    NORM("attn_norm", attn_norm, DIM_EMBD, NEED_ALWAYS),
    MAT("attn_q", wq, DIM_EMBD, DIM_Q),
    MAT("attn_k", wk, DIM_EMBD, DIM_KV),
    MAT("attn_v", wv, DIM_EMBD, DIM_KV),
    MAT("attn_output", wo, DIM_Q, DIM_EMBD),
    NORM("attn_q_norm", q_norm, DIM_HEAD, NEED_QK_NORM),
    NORM("attn_k_norm", k_norm, DIM_HEAD, NEED_QK_NORM),
    NORM("post_attention_norm", post_attn_norm, DIM_EMBD, NEED_POST_NORMS),
    NORM("ffn_norm", ffn_norm, DIM_EMBD, NEED_ALWAYS),
    MAT("ffn_gate", w_gate, DIM_EMBD, DIM_FF),
    MAT("ffn_up", w_up, DIM_EMBD, DIM_FF),
    MAT("ffn_down", w_down, DIM_FF, DIM_EMBD),
    NORM("post_ffw_norm", post_ffw_norm, DIM_EMBD, NEED_POST_NORMS),
};
#define N_LAYER_SPECS (sizeof layer_specs / sizeof layer_specs[0])

static uint64_t dim_value(const model_config *c, dim_kind d) {
    switch (d) {
    case DIM_EMBD: return c->n_embd;
    case DIM_FF: return c->n_ff;
    case DIM_Q: return (uint64_t)c->n_head * c->n_embd_head;
    case DIM_KV: return (uint64_t)c->n_head_kv * c->n_embd_head;
    case DIM_HEAD: return c->n_embd_head;
    }
    return 0;
}

static int spec_needed(const model_config *c, need_kind n) {
    return n == NEED_ALWAYS || (n == NEED_QK_NORM && c->qk_norm) ||
           (n == NEED_POST_NORMS && c->post_norms);
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

/* Copies the 1-D tensor `name` of n elements to dst as f32. */
static sw_status bind_norm(const gguf_file *f, const char *name, uint64_t n, float *dst) {
    const gguf_tensor *t = gguf_find_tensor(f, name);
    if (t == NULL)
        return sw_errorf(SW_ERR_FORMAT, "model lacks tensor '%s'", name);
    if (t->n_elements != n || t->ne[0] != n)
        return sw_errorf(SW_ERR_FORMAT, "tensor '%s' has %llu elements, expected %llu", name,
                         (unsigned long long)t->n_elements, (unsigned long long)n);
    sw_status st = quant_dequantize(t->type, t->data, dst, n);
    if (st != SW_OK)
        return sw_error_prefix(st, "tensor '%s'", name);
    return SW_OK;
}

/* Floats needed for all norm vectors. */
static size_t norm_floats(const model_config *c) {
    size_t per_layer = 0;
    for (size_t s = 0; s < N_LAYER_SPECS; s++)
        if (layer_specs[s].is_norm && spec_needed(c, layer_specs[s].need))
            per_layer += dim_value(c, layer_specs[s].ne0);
    return per_layer * c->n_layer + c->n_embd;
}

static sw_status bind_layer(const gguf_file *f, const model_config *c, uint32_t il,
                            layer_weights *lw, float **arena) {
    char name[96];
    for (size_t s = 0; s < N_LAYER_SPECS; s++) {
        const tensor_spec *sp = &layer_specs[s];
        if (!spec_needed(c, sp->need))
            continue;
        snprintf(name, sizeof name, "blk.%u.%s.weight", il, sp->suffix);
        char *field = (char *)lw + sp->offset;
        sw_status st;
        if (sp->is_norm) {
            uint64_t n = dim_value(c, sp->ne0);
            st = bind_norm(f, name, n, *arena);
            *(float **)(void *)field = *arena;
            *arena += n;
        } else {
            st = bind_matrix(f, name, dim_value(c, sp->ne0), dim_value(c, sp->ne1),
                             (tensor_view *)(void *)field);
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
    w->output_norm = arena;
    arena += c->n_embd;
    if ((st = bind_norm(f, "output_norm.weight", c->n_embd, w->output_norm)))
        goto fail;
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
