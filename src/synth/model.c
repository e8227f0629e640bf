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

#include "format/hf_model.h"
#include "model/weights.h"
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

/* The generator's key of tensor stream `stream` under `seed`. */
static inline uint64_t stream_key(uint64_t seed, uint64_t stream) {
    return mix64(seed * GOLDEN + mix64(stream + 0x632be59bd9b4e019ull));
}

uint64_t synth_random(uint64_t seed, uint64_t stream, uint64_t i) {
    return mix64(stream_key(seed, stream) + (i + 1) * GOLDEN);
}

void synth_fill(uint64_t seed, const synth_tensor *t, uint64_t start, size_t n, float *out) {
    if (t->kind == SYNTH_ROPE) { /* rotated pairs, then pairs left alone */
        for (size_t k = 0; k < n; k++)
            out[k] = start + k < t->n_ones ? 1.0f : 1e30f;
        return;
    }
    uint64_t key = stream_key(seed, t->stream);
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
    if (t->kind == SYNTH_SCALE) /* 1 + w, exact in bf16 and f16 too */
        for (size_t k = 0; k < n; k++)
            out[k] = half_bf16_to_f32(half_f32_to_bf16(1.0f + out[k]));
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

void synth_tensor_set(synth_tensor *t, synth_kind kind, uint64_t ne0, uint64_t ne1,
                      uint64_t stream, uint32_t gguf_type) {
    const bool vec = kind == SYNTH_NORM || kind == SYNTH_SCALE || kind == SYNTH_ROPE ||
                     kind == SYNTH_INDEX;
    t->kind = kind;
    t->ne0 = ne0;
    t->ne1 = ne1;
    t->ne2 = 1;
    t->n_dims = vec ? 1 : 2;
    t->stream = stream;
    t->gguf_type = gguf_type;
    t->half_width = vec ? NORM_HALF_WIDTH : sqrtf(3.0f / (float)ne0);
}

static void add_layer(synth_model *m, uint32_t il, uint32_t type) {
    for (size_t s = 0; s < N_LAYER_SPECS; s++) {
        const layer_spec *sp = &layer_specs[s];
        if (!(sp->families & (1 << m->family)))
            continue;
        synth_tensor *t = &m->t[m->n++];
        uint64_t ne0 = dim_value(&m->c, sp->ne0), ne1 = dim_value(&m->c, sp->ne1);
        bool norm = sp->ne1 == D_ONE;
        synth_tensor_set(t, norm ? SYNTH_NORM : SYNTH_MATRIX, ne0, ne1,
                         ((uint64_t)il + 1) << 8 | s,
                         norm ? SW_TYPE_F32 : matrix_type(m, type, ne0));
        snprintf(t->hf_name, sizeof t->hf_name, "model.layers.%u.%s.weight", il, sp->hf);
        snprintf(t->gguf_name, sizeof t->gguf_name, "blk.%u.%s.weight", il, sp->gguf);
    }
}

/* ---- Gemma 4: every tensor from the shared layer table ------------------- */

/* Stream keys of the globals; layers use ((il + 1) << 8 | role). */
enum { S_EMBD, S_NORM, S_PLE_EMBD, S_PLE_PROJ, S_PLE_NORM, S_ROPE };

static synth_tensor *add_global(synth_model *m, const char *gguf, synth_kind kind,
                                uint64_t ne0, uint64_t ne1, uint64_t stream, uint32_t type) {
    synth_tensor *t = &m->t[m->n++];
    const bool vec = kind == SYNTH_NORM || kind == SYNTH_SCALE || kind == SYNTH_ROPE;
    synth_tensor_set(t, kind, ne0, ne1, stream, vec ? SW_TYPE_F32 : matrix_type(m, type, ne0));
    snprintf(t->gguf_name, sizeof t->gguf_name, "%s.weight", gguf);
    if (!hf_gemma4_name(t->gguf_name, t->hf_name, sizeof t->hf_name))
        t->hf_name[0] = '\0'; /* rope_freqs: transformers computes it */
    return t;
}

void synth_add_gemma4_layer(synth_model *m, uint32_t il, uint32_t type) {
    size_t n_table;
    const layer_tensor *table = model_layer_tensors(&n_table);
    for (size_t i = 0; i < n_table; i++) {
        const layer_tensor *lt = &table[i];
        if (!model_has_tensor(&m->c, il, lt))
            continue;
        synth_tensor *t = &m->t[m->n++];
        const uint64_t ne0 = model_dim_value(&m->c, il, lt->ne0);
        const uint64_t stream = ((uint64_t)il + 1) << 8 | (uint64_t)lt->role;
        if (lt->is_norm) {
            synth_tensor_set(t, SYNTH_SCALE, ne0, 1, stream, SW_TYPE_F32);
        } else {
            synth_tensor_set(t, SYNTH_MATRIX, ne0, model_dim_value(&m->c, il, lt->ne1),
                             stream, matrix_type(m, type, ne0));
            t->ne2 = model_dim_value(&m->c, il, lt->ne2);
            t->n_dims = t->ne2 > 1 ? 3 : 2;
        }
        snprintf(t->gguf_name, sizeof t->gguf_name, "blk.%u.%s", il, lt->suffix);
        (void)hf_gemma4_name(t->gguf_name, t->hf_name, sizeof t->hf_name);
    }
}

/* The model-wide maxima of the layers kept (a reader derives them so). */
static void gemma4_truncate(model_config *c) {
    c->n_ff = c->n_head_kv = 0;
    for (uint32_t il = 0; il < c->n_layer; il++) {
        const uint32_t ff = model_layer_n_ff(c, il), kv = model_layer_n_head_kv(c, il);
        c->n_ff = ff > c->n_ff ? ff : c->n_ff;
        c->n_head_kv = kv > c->n_head_kv ? kv : c->n_head_kv;
    }
}

static bool has_full_layer(const model_config *c) {
    for (uint32_t il = 0; il < c->n_layer; il++)
        if (!model_layer_is_local(c, il))
            return true;
    return false;
}

/* Globals in the order llama.cpp's converter writes them, then the
 * layers, then the final norm. rope_freqs only where a full layer reads
 * it (llama.cpp refuses a file with a tensor no layer uses). */
static sw_status build_gemma4(synth_model *m, uint32_t type) {
    model_config *c = &m->c;
    gemma4_truncate(c);
    size_t n_table;
    (void)model_layer_tensors(&n_table);
    m->t = calloc((size_t)c->n_layer * n_table + 8, sizeof *m->t);
    if (m->t == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "synth: out of host memory");
    const uint64_t pl = (uint64_t)c->n_layer * c->n_embd_per_layer;
    if (has_full_layer(c))
        add_global(m, "rope_freqs", SYNTH_ROPE, c->n_embd_head / 2, 1, S_ROPE, SW_TYPE_F32)
            ->n_ones = c->rope_pairs_global ? c->rope_pairs_global : c->n_embd_head / 2;
    add_global(m, "token_embd", SYNTH_EMBD, c->n_embd, c->n_vocab, S_EMBD, type);
    if (pl != 0)
        add_global(m, "per_layer_token_embd", SYNTH_EMBD, pl, c->n_vocab, S_PLE_EMBD, type);
    for (uint32_t il = 0; il < c->n_layer; il++)
        synth_add_gemma4_layer(m, il, type);
    add_global(m, "output_norm", SYNTH_SCALE, c->n_embd, 1, S_NORM, SW_TYPE_F32);
    if (pl != 0) {
        add_global(m, "per_layer_model_proj", SYNTH_MATRIX, c->n_embd, pl, S_PLE_PROJ, type);
        add_global(m, "per_layer_proj_norm", SYNTH_SCALE, c->n_embd_per_layer, 1, S_PLE_NORM,
                   SW_TYPE_F32);
    }
    return SW_OK;
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
        char list[256], assistants[256];
        plan_catalog_list(list, sizeof list);
        synth_assistant_list(assistants, sizeof assistants);
        return sw_errorf(SW_ERR_ARG, "unknown shape '%s'; choose one of: %s; or (--format hf) "
                         "%s", shape, list, assistants);
    }
    return st;
}

sw_status synth_model_build(const char *shape, uint32_t n_layers, uint32_t n_vocab,
                            uint32_t type, synth_model *m) {
    memset(m, 0, sizeof *m);
    sw_status st = catalog_config(shape ? shape : "", m);
    if (st != SW_OK)
        return st;
    m->family = !strcmp(m->c.arch, "gemma") ? 1 : !strcmp(m->c.arch, "gemma2") ? 2
              : !strcmp(m->c.arch, "gemma3") ? 3 : 4;
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
    if (m->family == 4)
        return build_gemma4(m, type);
    m->t = calloc((size_t)m->c.n_layer * N_LAYER_SPECS + 2, sizeof *m->t);
    if (m->t == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "synth: out of host memory");
    synth_tensor *e = &m->t[m->n++];
    synth_tensor_set(e, SYNTH_EMBD, m->c.n_embd, m->c.n_vocab, 0,
               matrix_type(m, type, m->c.n_embd));
    snprintf(e->hf_name, sizeof e->hf_name, "model.embed_tokens.weight");
    snprintf(e->gguf_name, sizeof e->gguf_name, "token_embd.weight");
    for (uint32_t il = 0; il < m->c.n_layer; il++)
        add_layer(m, il, type);
    synth_tensor *fn = &m->t[m->n++];
    synth_tensor_set(fn, SYNTH_NORM, m->c.n_embd, 1, 1, SW_TYPE_F32);
    snprintf(fn->hf_name, sizeof fn->hf_name, "model.norm.weight");
    snprintf(fn->gguf_name, sizeof fn->gguf_name, "output_norm.weight");
    return SW_OK;
}

/* llama.cpp's choice of the layers (or attention V tensors) i of n that
 * Q4_K_M stores with more bits. */
static bool more_bits(uint32_t i, uint32_t n) {
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

void synth_model_mix_q4_k_m(synth_model *m) {
    uint32_t n_v = 0, i_v = 0;
    unsigned il;
    char rest[48];
    for (size_t i = 0; i < m->n; i++)
        n_v += sscanf(m->t[i].gguf_name, "blk.%u.%47s", &il, rest) == 2 &&
               !strcmp(rest, "attn_v.weight");
    for (size_t i = 0; i < m->n; i++) {
        synth_tensor *t = &m->t[i];
        const bool blk = sscanf(t->gguf_name, "blk.%u.%47s", &il, rest) == 2;
        bool more = false;
        if (!strcmp(t->gguf_name, "token_embd.weight"))
            more = true; /* tied: the LM head */
        else if (blk && !strcmp(rest, "attn_v.weight"))
            more = more_bits(i_v++, n_v);
        else if (blk && !strncmp(rest, "ffn_down", 8))
            more = more_bits(il, m->c.n_layer);
        if (more && t->gguf_type == SW_TYPE_Q4_K)
            t->gguf_type = SW_TYPE_Q6_K;
    }
    m->q4_k_m = true;
}

void synth_model_free(synth_model *m) {
    if (m == NULL)
        return;
    free(m->t);
    memset(m, 0, sizeof *m);
}
