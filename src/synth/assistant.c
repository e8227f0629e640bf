/*
 * assistant.c — synthetic Gemma 4 assistants: the speculative-decoding
 * drafters transformers 5.25 saves as Gemma4AssistantForCausalLM (model
 * type gemma4_assistant), one per Gemma 4 shape ("gemma4-31b-assistant").
 * An assistant is a 4-layer Gemma 4 text decoder (3 sliding layers, then a
 * full one) whose layers are all KV-shared: no K or V projections, no
 * k_norm; each reads its target's cache of the same attention type. So
 * its query heads, head sizes, KV heads, window and RoPE are the target's
 * (from the same catalog config `synth --shape TARGET` builds), and only
 * its width, MLP and head are its own. Hugging Face folders only; the
 * tensors and config.json copy tests/data/tiny/gemma4-*-assistant-hf.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "model/weights.h"
#include "quant/types.h"
#include "synth/synth_internal.h"
#include "util/error.h"

#define SUFFIX "-assistant"
#define N_LAYER 4            /* 3 sliding, then 1 full */
#define FULL_VOCAB 262144
#define MAX_CENTROIDS 2048   /* the E2B/E4B assistants' num_centroids */
#define MIN_CLUSTER 16       /* fewest tokens per centroid with --vocab */
#define CENTROID_TOP_K 32    /* their centroid_intermediate_top_k */

/* Assistant tensors' streams: beside the target's (which use small keys),
 * so an assistant never repeats its target's weights. */
#define STREAM_BASE ((uint64_t)1 << 40)
enum { S_EMBD, S_NORM, S_PRE_PROJ, S_POST_PROJ, S_CENTROIDS, S_ORDER };

/* The assistants' own sizes. ESTIMATES: no reference we hold publishes an
 * assistant's hidden size, MLP width or head type; only the 31B
 * assistant's size (~470M parameters, its model card) is sourced, and
 * these widths give 0.47B with the 262144-token tied embedding. The
 * small (E2B, E4B) ones get the centroid-masked head (2048 clusters, 32
 * scored per token), the large ones a dense tied head. */
typedef struct assistant_shape {
    const char *target;      /* catalog name of the model it drafts for */
    uint32_t n_embd, n_ff;   /* its residual and MLP widths */
    bool centroid_head;      /* use_ordered_embeddings */
} assistant_shape;

static const assistant_shape shapes[] = {
    {"gemma4-e2b", 256, 2048, true},
    {"gemma4-e4b", 256, 2048, true},
    {"gemma4-26b-a4b", 1024, 8192, false},
    {"gemma4-31b", 1024, 8192, false},
};
#define N_SHAPES (sizeof shapes / sizeof shapes[0])

bool synth_is_assistant(const char *shape) {
    const size_t n = shape ? strlen(shape) : 0, k = strlen(SUFFIX);
    return n > k && !strcasecmp(shape + n - k, SUFFIX);
}

void synth_assistant_list(char *buf, size_t cap) {
    size_t len = 0;
    if (cap != 0)
        buf[0] = '\0';
    for (size_t i = 0; i < N_SHAPES && len < cap; i++) {
        const int k = snprintf(buf + len, cap - len, "%s%s%s", i ? ", " : "",
                               shapes[i].target, SUFFIX);
        if (k < 0)
            break;
        len += (size_t)k;
    }
}

static sw_status unknown(const char *shape) {
    char list[256];
    synth_assistant_list(list, sizeof list);
    return sw_errorf(SW_ERR_ARG, "unknown shape '%s'; Gemma 4 assistants: %s", shape, list);
}

/* num_centroids for a vocabulary of n tokens: the largest power of two
 * that divides n, at most 2048 and at most n / 16 (262144 tokens: 2048
 * clusters of 128; 512: 32 of 16). assistant_config scores 32 of them per
 * token, or half when there are fewer than 64. */
static uint32_t centroids_for(uint32_t n) {
    uint32_t c = 1;
    while (c < MAX_CENTROIDS && n % (2 * c) == 0 && 2 * c <= n / MIN_CLUSTER)
        c *= 2;
    return c;
}

/* The assistant's config from its target's (full depth): the target's
 * heads per attention type, its window, RoPE and norms; its own widths;
 * every layer reading the target's cache. */
static sw_status assistant_config(const model_config *t, const assistant_shape *a,
                                  model_config *c) {
    const uint32_t swa = 0, full = t->swa_pattern - 1; /* a sliding and a full layer */
    *c = *t;
    memset(c->layer, 0, sizeof c->layer);
    c->n_layer = N_LAYER;
    c->swa_pattern = N_LAYER;
    c->n_embd = a->n_embd;
    c->n_ff = a->n_ff;
    c->embd_scale = sqrtf((float)a->n_embd);
    c->final_softcap = 0.0f;
    c->n_embd_per_layer = 0;
    c->n_expert = c->n_expert_used = c->n_ff_exp = 0;
    c->n_head_kv = c->n_embd_head = 0;
    for (uint32_t il = 0; il < N_LAYER; il++) {
        const uint32_t src = model_layer_is_local(c, il) ? swa : full;
        model_layer_shape *l = &c->layer[il];
        l->n_head_kv = model_layer_n_head_kv(t, src);
        l->head_dim = model_layer_head_dim(t, src);
        l->k_eq_v = t->layer[src].k_eq_v;
        l->kv_shared = true;
        l->kv_source = MODEL_KV_TARGET;
        c->n_head_kv = l->n_head_kv > c->n_head_kv ? l->n_head_kv : c->n_head_kv;
        c->n_embd_head = l->head_dim > c->n_embd_head ? l->head_dim : c->n_embd_head;
    }
    c->assistant = true;
    c->backbone_embd = t->n_embd;
    c->n_centroid = a->centroid_head ? centroids_for(c->n_vocab) : 0;
    c->centroid_top_k = 0;
    if (a->centroid_head) /* 32, or half the clusters when there are fewer than 64 */
        c->centroid_top_k = c->n_centroid >= 2 * CENTROID_TOP_K ? CENTROID_TOP_K
                          : c->n_centroid > 1                  ? c->n_centroid / 2
                                                               : 1;
    return model_config_check_layers(c);
}

/* Appends a tensor outside the layers: matrices in `type`, vectors f32
 * (GGUF types; the names are the engine's and transformers'). */
static void add(synth_model *m, synth_kind kind, uint64_t ne0, uint64_t ne1, uint64_t stream,
                uint32_t type, const char *gguf, const char *hf) {
    synth_tensor *t = &m->t[m->n++];
    synth_tensor_set(t, kind, ne0, ne1, stream,
                     kind == SYNTH_MATRIX || kind == SYNTH_EMBD ? type : SW_TYPE_F32);
    snprintf(t->gguf_name, sizeof t->gguf_name, "%s", gguf);
    snprintf(t->hf_name, sizeof t->hf_name, "%s", hf);
}

/* The tensors in transformers' state-dict order: the text model, then the
 * projections to and from the target's width, then the centroid head. */
static void add_tensors(synth_model *m, uint32_t type) {
    const model_config *c = &m->c;
    const uint64_t H = c->n_embd, Hb = c->backbone_embd;
    add(m, SYNTH_EMBD, H, c->n_vocab, S_EMBD, type, "token_embd.weight",
        "model.embed_tokens.weight");
    for (uint32_t il = 0; il < c->n_layer; il++)
        synth_add_gemma4_layer(m, il, type);
    add(m, SYNTH_SCALE, H, 1, S_NORM, type, "output_norm.weight", "model.norm.weight");
    add(m, SYNTH_MATRIX, 2 * Hb, H, S_PRE_PROJ, type, "mtp.pre_proj.weight",
        "pre_projection.weight");          /* (H, 2 Hb): [embedding, hidden] -> H */
    add(m, SYNTH_MATRIX, H, Hb, S_POST_PROJ, type, "mtp.post_proj.weight",
        "post_projection.weight");         /* (Hb, H) */
    if (c->n_centroid != 0) {
        add(m, SYNTH_MATRIX, H, c->n_centroid, S_CENTROIDS, type, "mtp.centroids.weight",
            "masked_embedding.centroids.weight");   /* (C, H) */
        add(m, SYNTH_INDEX, c->n_vocab, 1, S_ORDER, type, "mtp.token_order",
            "masked_embedding.token_ordering");     /* (V) I64: tokens by cluster */
    }
    for (size_t i = 0; i < m->n; i++)
        m->t[i].stream += STREAM_BASE;
}

sw_status synth_assistant_build(const char *shape, uint32_t n_vocab, uint32_t type,
                                synth_model *m) {
    char target[64];
    synth_model t;
    memset(m, 0, sizeof *m);
    if (!synth_is_assistant(shape))
        return unknown(shape ? shape : "");
    const size_t n = strlen(shape) - strlen(SUFFIX);
    if (n >= sizeof target)
        return unknown(shape);
    memcpy(target, shape, n);
    target[n] = '\0';
    if (n_vocab != 0 && (n_vocab < SYNTH_MIN_VOCAB || n_vocab > FULL_VOCAB))
        return sw_errorf(SW_ERR_ARG, "--vocab %u: choose %u..%u (%s has %u tokens, its "
                         "target's)", n_vocab, SYNTH_MIN_VOCAB, FULL_VOCAB, shape, FULL_VOCAB);
    sw_status st = synth_model_build(target, 0, n_vocab, type, &t);
    const assistant_shape *a = NULL;
    for (size_t i = 0; st == SW_OK && i < N_SHAPES; i++)
        if (!strcmp(t.name, shapes[i].target))
            a = &shapes[i];
    if (st == SW_ERR_ARG || (st == SW_OK && a == NULL))
        st = unknown(shape);
    if (st == SW_OK && (st = assistant_config(&t.c, a, &m->c)) == SW_OK) {
        snprintf(m->name, sizeof m->name, "%.40s%s", t.name, SUFFIX);
        m->family = 4;
        m->n_layer_full = N_LAYER;
        m->query_pre_attn = t.query_pre_attn;
        size_t n_table;
        (void)model_layer_tensors(&n_table);
        if ((m->t = calloc(N_LAYER * n_table + 8, sizeof *m->t)) == NULL)
            st = sw_errorf(SW_ERR_OOM_HOST, "synth: out of host memory");
        else
            add_tensors(m, type);
    }
    synth_model_free(&t);
    if (st != SW_OK)
        synth_model_free(m);
    return st;
}

/* A permutation of 0..n-1 by Fisher-Yates over the generator's stream. */
static uint32_t *permutation(uint64_t seed, uint64_t stream, uint32_t n) {
    uint32_t *p = malloc((size_t)n * sizeof *p);
    if (p == NULL)
        return NULL;
    for (uint32_t i = 0; i < n; i++)
        p[i] = i;
    for (uint32_t i = n - 1; i > 0; i--) {
        const uint64_t r = synth_random(seed, stream, i) >> 32;
        const uint32_t j = (uint32_t)((r * ((uint64_t)i + 1)) >> 32); /* 0..i */
        const uint32_t v = p[i];
        p[i] = p[j];
        p[j] = v;
    }
    return p;
}

sw_status synth_stream_index(synth_ctx *x, const synth_tensor *t, synth_emit_fn emit,
                             void *user) {
    const uint32_t n = (uint32_t)t->ne0;
    uint32_t *p = n ? permutation(x->o->seed, t->stream, n) : NULL;
    if (n != 0 && p == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "synth: out of host memory for a %u-entry token "
                         "ordering", n);
    const size_t per_chunk = x->chunk_elems * sizeof(float) / 8; /* I64 in the byte buffer */
    sw_status st = SW_OK;
    for (uint32_t i0 = 0; st == SW_OK && i0 < n; i0 += (uint32_t)per_chunk) {
        const size_t k = n - i0 < per_chunk ? n - i0 : per_chunk;
        for (size_t i = 0; i < k; i++)
            for (int b = 0; b < 8; b++) /* little-endian, whatever the host */
                x->bytes[8 * i + (size_t)b] = (uint8_t)((uint64_t)p[i0 + i] >> (8 * b));
        st = emit(user, x->bytes, 8 * k);
        if (st == SW_OK)
            st = synth_advance(x, 8 * k);
    }
    free(p);
    return st;
}
