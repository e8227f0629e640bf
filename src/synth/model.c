/*
 * model.c — the tensor list of a synthetic model (GGUF and HF names, shapes,
 * stored types) from the catalog shape, and the counter-based generator
 * that gives every element its value.
 *
 * The generator is SplitMix64 run at a position: element pair p of tensor
 * stream s is mix64(key(seed, s) + (p + 1) * golden), whose high and low
 * 32 bits give elements 2p and 2p + 1. Nothing depends on chunking or on
 * which other tensors exist; only integer ops and one f32 multiply per
 * element, so every platform produces the same bits.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/catalog.h"
#include "quant/half.h"
#include "quant/types.h"
#include "synth/synth_internal.h"
#include "util/error.h"

#define GOLDEN 0x9e3779b97f4a7c15ull
#define NORM_HALF_WIDTH 0.1f

static inline uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* int32 bits -> [-1, 1). */
static inline float unit(uint32_t bits) {
    return (float)(int32_t)bits * (1.0f / 2147483648.0f);
}

void synth_fill(uint64_t seed, const synth_tensor *t, uint64_t start, size_t n, float *out) {
    uint64_t key = mix64(seed * GOLDEN + mix64(t->stream + 0x632be59bd9b4e019ull));
    float a = t->half_width;
    size_t i = 0;
    uint64_t e = start;
    if (n > 0 && (e & 1)) { /* odd start: the low half of pair e/2 */
        out[i++] = a * unit((uint32_t)mix64(key + (e / 2 + 1) * GOLDEN));
        e++;
    }
    for (; i + 1 < n; i += 2, e += 2) {
        uint64_t h = mix64(key + (e / 2 + 1) * GOLDEN);
        out[i] = a * unit((uint32_t)(h >> 32));
        out[i + 1] = a * unit((uint32_t)h);
    }
    if (i < n)
        out[i] = a * unit((uint32_t)(mix64(key + (e / 2 + 1) * GOLDEN) >> 32));
    if (t->kind == SYNTH_NORM) /* exactly representable in bf16 (and f16) */
        for (size_t k = 0; k < n; k++)
            out[k] = half_bf16_to_f32(half_f32_to_bf16(out[k]));
}

/* Per-layer tensors in HF state-dict order. `role` keys the generator. */
typedef enum { D_EMBD, D_FF, D_Q, D_KV, D_HEAD, D_ONE } dim;
typedef struct layer_spec {
    const char *hf;          /* after "model.layers.N." */
    const char *gguf;        /* between "blk.N." and ".weight" */
    dim ne0, ne1;            /* ne1 = D_ONE for vectors */
    int families;            /* bit f set: present in Gemma f */
} layer_spec;

#define F123 0xe
#define F23 0xc
#define F3 0x8
#define F1 0x2
static const layer_spec layer_specs[] = {
    {"self_attn.q_proj", "attn_q", D_EMBD, D_Q, F123},
    {"self_attn.k_proj", "attn_k", D_EMBD, D_KV, F123},
    {"self_attn.v_proj", "attn_v", D_EMBD, D_KV, F123},
    {"self_attn.o_proj", "attn_output", D_Q, D_EMBD, F123},
    {"self_attn.q_norm", "attn_q_norm", D_HEAD, D_ONE, F3},
    {"self_attn.k_norm", "attn_k_norm", D_HEAD, D_ONE, F3},
    {"mlp.gate_proj", "ffn_gate", D_EMBD, D_FF, F123},
    {"mlp.up_proj", "ffn_up", D_EMBD, D_FF, F123},
    {"mlp.down_proj", "ffn_down", D_FF, D_EMBD, F123},
    {"input_layernorm", "attn_norm", D_EMBD, D_ONE, F123},
    /* the name trap (gemma-facts §3.3): Gemma 1's post-attention norm is
     * the pre-FFN norm */
    {"post_attention_layernorm", "ffn_norm", D_EMBD, D_ONE, F1},
    {"post_attention_layernorm", "post_attention_norm", D_EMBD, D_ONE, F23},
    {"pre_feedforward_layernorm", "ffn_norm", D_EMBD, D_ONE, F23},
    {"post_feedforward_layernorm", "post_ffw_norm", D_EMBD, D_ONE, F23},
};
#define N_LAYER_SPECS (sizeof layer_specs / sizeof layer_specs[0])

static uint64_t dim_value(const model_config *c, dim d) {
    switch (d) {
    case D_EMBD: return c->n_embd;
    case D_FF: return c->n_ff;
    case D_Q: return (uint64_t)c->n_head * c->n_embd_head;
    case D_KV: return (uint64_t)c->n_head_kv * c->n_embd_head;
    case D_HEAD: return c->n_embd_head;
    case D_ONE: return 1;
    }
    return 1;
}

/* Stored type of a matrix with rows of ne0 elements; counts fallbacks. */
static uint32_t matrix_type(synth_model *m, uint32_t type, uint64_t ne0) {
    uint32_t t = type;
    if (t == SW_TYPE_Q4_K && ne0 % 256 != 0)
        t = ne0 % 32 == 0 ? SW_TYPE_Q8_0 : SW_TYPE_F16;
    else if (t == SW_TYPE_Q8_0 && ne0 % 32 != 0)
        t = SW_TYPE_F16;
    if (t != type) {
        if (m->n_fallback == 0)
            snprintf(m->fallback_note, sizeof m->fallback_note,
                     "%s needs rows of a multiple of %d elements; rows of %llu stored as %s",
                     type_name(type), type == SW_TYPE_Q4_K ? 256 : 32,
                     (unsigned long long)ne0, type_name(t));
        m->n_fallback++;
    }
    return t;
}

static void set_tensor(synth_tensor *t, synth_kind kind, uint64_t ne0, uint64_t ne1,
                       uint64_t stream, uint32_t gguf_type) {
    t->kind = kind;
    t->ne0 = ne0;
    t->ne1 = ne1;
    t->stream = stream;
    t->gguf_type = gguf_type;
    t->half_width = kind == SYNTH_NORM ? NORM_HALF_WIDTH : sqrtf(3.0f / (float)ne0);
}

static void add_layer(synth_model *m, uint32_t il, uint32_t type) {
    for (size_t s = 0; s < N_LAYER_SPECS; s++) {
        const layer_spec *sp = &layer_specs[s];
        if (!(sp->families & (1 << m->family)))
            continue;
        synth_tensor *t = &m->t[m->n++];
        uint64_t ne0 = dim_value(&m->c, sp->ne0), ne1 = dim_value(&m->c, sp->ne1);
        bool norm = sp->ne1 == D_ONE;
        set_tensor(t, norm ? SYNTH_NORM : SYNTH_MATRIX, ne0, ne1, ((uint64_t)il + 1) << 8 | s,
                   norm ? SW_TYPE_F32 : matrix_type(m, type, ne0));
        snprintf(t->hf_name, sizeof t->hf_name, "model.layers.%u.%s.weight", il, sp->hf);
        snprintf(t->gguf_name, sizeof t->gguf_name, "blk.%u.%s.weight", il, sp->gguf);
    }
}

/* The catalog's config for `shape`, or SW_ERR_ARG listing the names. */
static sw_status catalog_config(const char *shape, synth_model *m) {
    plan_model *pm = malloc(sizeof *pm);
    if (pm == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "synth: out of host memory");
    sw_status st = plan_model_from_catalog(shape, "bf16", pm);
    if (st == SW_OK) {
        m->c = pm->config;
        snprintf(m->name, sizeof m->name, "%s", pm->name);
    }
    free(pm);
    if (st == SW_ERR_ARG) {
        char list[256];
        plan_catalog_list(list, sizeof list);
        return sw_errorf(SW_ERR_ARG, "unknown shape '%s'; choose one of: %s", shape, list);
    }
    return st;
}

sw_status synth_model_build(const char *shape, uint32_t n_layers, uint32_t n_vocab,
                            uint32_t type, synth_model *m) {
    memset(m, 0, sizeof *m);
    sw_status st = catalog_config(shape ? shape : "", m);
    if (st != SW_OK)
        return st;
    /* Gemma 4's files need per-layer shapes, experts, per-layer embeddings
     * and a merge-rule vocabulary this writer does not produce yet */
    if (!strcmp(m->c.arch, "gemma4"))
        return sw_errorf(SW_ERR_UNSUPPORTED, "synth: %s: Gemma 4 shapes cannot be written yet "
                         "(spillway plan -m %s plans them without a file)", m->name, m->name);
    m->family = !strcmp(m->c.arch, "gemma") ? 1 : !strcmp(m->c.arch, "gemma2") ? 2 : 3;
    m->n_layer_full = m->c.n_layer;
    if (n_layers > m->n_layer_full)
        return sw_errorf(SW_ERR_ARG, "--layers %u: %s has %u layers; choose 1..%u", n_layers,
                         m->name, m->n_layer_full, m->n_layer_full);
    if (n_layers != 0)
        m->c.n_layer = n_layers;
    if (n_vocab != 0 && (n_vocab < SYNTH_MIN_VOCAB || n_vocab > m->c.n_vocab))
        return sw_errorf(SW_ERR_ARG, "--vocab %u: choose %u..%u (%s has %u tokens)", n_vocab,
                         SYNTH_MIN_VOCAB, m->c.n_vocab, m->name, m->c.n_vocab);
    if (n_vocab != 0)
        m->c.n_vocab = n_vocab;
    m->query_pre_attn = (uint32_t)lroundf(1.0f / (m->c.query_scale * m->c.query_scale));
    m->t = calloc((size_t)m->c.n_layer * N_LAYER_SPECS + 2, sizeof *m->t);
    if (m->t == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "synth: out of host memory");
    synth_tensor *e = &m->t[m->n++];
    set_tensor(e, SYNTH_EMBD, m->c.n_embd, m->c.n_vocab, 0,
               matrix_type(m, type, m->c.n_embd));
    snprintf(e->hf_name, sizeof e->hf_name, "model.embed_tokens.weight");
    snprintf(e->gguf_name, sizeof e->gguf_name, "token_embd.weight");
    for (uint32_t il = 0; il < m->c.n_layer; il++)
        add_layer(m, il, type);
    synth_tensor *fn = &m->t[m->n++];
    set_tensor(fn, SYNTH_NORM, m->c.n_embd, 1, 1, SW_TYPE_F32);
    snprintf(fn->hf_name, sizeof fn->hf_name, "model.norm.weight");
    snprintf(fn->gguf_name, sizeof fn->gguf_name, "output_norm.weight");
    return SW_OK;
}

void synth_model_free(synth_model *m) {
    if (m == NULL)
        return;
    free(m->t);
    memset(m, 0, sizeof *m);
}
