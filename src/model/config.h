/*
 * config.h — a Gemma model's hyperparameters, every quirk a named field.
 *
 * Filled from the model file's metadata (no hard-coded sizes); the forward
 * pass reads only these fields and never branches on the architecture name.
 * Gemma 1, 2 and 3 differ only in the values below; Gemma 4 adds fields
 * (zero before it) and layers that differ from one another (layer[]).
 */
#ifndef SW_MODEL_CONFIG_H
#define SW_MODEL_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "format/gguf.h"

#define MODEL_MAX_LAYERS 512

/* kv_source of a Gemma 4 assistant's layers: the target's cache of the
 * layer's attention type (its last full or last sliding layer that keeps
 * one), not a layer of the assistant. */
#define MODEL_KV_TARGET UINT32_MAX

/* What one layer has of its own where a model's layers differ (Gemma 4:
 * head size and KV heads by attention type, a double-wide MLP in the
 * KV-shared layers, KV sharing, keys as values). A zero field means the
 * model-wide value; Gemma 1-3 leave every field zero. */
typedef struct model_layer_shape {
    uint32_t n_head_kv;       /* 0: model_config.n_head_kv */
    uint32_t head_dim;        /* 0: model_config.n_embd_head */
    uint32_t n_ff;            /* 0: model_config.n_ff */
    uint32_t kv_source;       /* with kv_shared: the earlier layer whose cache it reads */
    bool kv_shared;           /* computes no K/V; attends over kv_source's cache */
    bool local;               /* sliding window (as well as swa_pattern's layers) */
    bool k_eq_v;              /* values are the keys' projection: no attn_v */
} model_layer_shape;

typedef struct model_config {
    char arch[16];            /* "gemma", "gemma2", "gemma3", "gemma4" — messages only */
    uint32_t n_layer;
    uint32_t n_embd;          /* residual width H */
    uint32_t n_ff;            /* width of each of gate/up (the widest layer's) */
    uint32_t n_head;
    uint32_t n_head_kv;       /* the most any layer has */
    uint32_t n_embd_head;     /* head_dim (the widest layer's); n_head * n_embd_head may
                               * differ from H */
    uint32_t n_vocab;         /* rows of the token embedding */
    uint32_t n_ctx_train;
    float norm_eps;
    float embd_scale;         /* sqrt(H) in f32, applied to looked-up rows */
    float query_scale;        /* multiplies q before q.k */
    float attn_softcap;       /* 0: none; else s = cap * tanh(s / cap) */
    float final_softcap;      /* 0: none; applied to the logits */
    uint32_t sliding_window;  /* W: keys with q - k < W are visible; 0 none */
    uint32_t swa_pattern;     /* layer i local iff i % p < p - 1; 0: none */
    float rope_base_global;
    float rope_scale_global;  /* frequency scale (1 / linear factor) */
    float rope_base_local;
    float rope_scale_local;
    uint32_t rope_pairs_global; /* pairs (i, i + hd/2), i < this, that RoPE turns on
                                 * full layers (Gemma 4's proportional RoPE:
                                 * angle pos * base^(-2i/hd)); 0: all */
    bool qk_norm;             /* RMSNorm q and k per head before RoPE */
    bool post_norms;          /* RMSNorm after attention and after the FFN */
    /* Gemma 4 (all zero before it) */
    bool v_norm;              /* RMSNorm (no weight) on v per head */
    bool layer_scale;         /* each layer's output times its stored scalar */
    uint32_t n_embd_per_layer; /* per-layer embedding (PLE) width; 0: none */
    uint32_t ple_layers;      /* layers whose per-layer inputs a forward's
                               * activations carry (model_ple_layers): 0 for
                               * the whole model (all of them); a split's stage
                               * carries its own and every later stage's, from
                               * the embedding on, handed on with the stream */
    uint32_t n_expert;        /* experts per layer beside the dense MLP; 0: none */
    uint32_t n_expert_used;   /* routed to per token */
    uint32_t n_ff_exp;        /* an expert's gate/up width */
    /* A Gemma 4 assistant (Gemma4AssistantForCausalLM, a drafter): every
     * layer KV-shared with kv_source MODEL_KV_TARGET; its input is
     * pre_proj(target embedding, target hidden state), its hidden state
     * goes back through post_proj (mtp.* tensors) */
    bool assistant;
    uint32_t backbone_embd;   /* the target's residual width */
    uint32_t n_centroid;      /* the centroid-masked head's clusters; 0: dense head */
    uint32_t centroid_top_k;  /* clusters scored per token */
    model_layer_shape layer[MODEL_MAX_LAYERS];
} model_config;

/* Layer il's own values (model_layer_shape's zero fields resolved). */
uint32_t model_layer_n_head_kv(const model_config *c, uint32_t il);
uint32_t model_layer_head_dim(const model_config *c, uint32_t il);
uint32_t model_layer_n_ff(const model_config *c, uint32_t il);

/* The most query heads that share a KV head in any layer (attention's
 * scratch holds their scores together). */
uint32_t model_attn_group(const model_config *c);

/* Whether layer il keeps a KV cache of its own (not a KV-shared layer). */
bool model_layer_owns_kv(const model_config *c, uint32_t il);

/* The layer whose cache layer il reads: il itself, or its kv_source. */
uint32_t model_layer_kv_owner(const model_config *c, uint32_t il);

/* Reads the config from GGUF metadata and the token embedding's shape.
 * Errors: SW_ERR_UNSUPPORTED (architecture not gemma/gemma2/gemma3/gemma4,
 * or a Gemma 4 assistant, which runs only beside its target),
 * SW_ERR_FORMAT (missing or inconsistent key: message names it). */
sw_status model_config_from_gguf(const gguf_file *f, model_config *out);

/* The same for a Gemma 4 assistant (and only for one: anything else is
 * SW_ERR_ARG, "not a Gemma 4 assistant"). */
sw_status model_config_assistant_from_gguf(const gguf_file *f, model_config *out);

/* ARCH.<suffix>, a finite non-negative number, into *out; absent keeps
 * *out. Errors: SW_ERR_FORMAT naming the key. */
sw_status model_key_f32(const gguf_file *f, const char *arch, const char *suffix, float *out);

/* The Gemma 4 part of model_config_from_gguf (config_gemma4.c): everything
 * but the vocabulary and embedding scale. Errors as there. */
sw_status model_config_gemma4(const gguf_file *f, model_config *c);

/* Whether layer il uses the sliding window (local attention). */
bool model_layer_is_local(const model_config *c, uint32_t il);

/* Makes the last n_shared layers KV-shared, as Gemma 4 does: each reads
 * the cache of the last layer before them of the same attention type
 * (model_layer_is_local), which must exist. Errors: SW_ERR_FORMAT. */
sw_status model_config_share_kv(model_config *c, uint32_t n_shared);

/* The layers of per-layer inputs in c's activations: its own first, then
 * (a split's stage) the later stages'; 0 without per-layer inputs. */
static inline uint32_t model_ple_layers(const model_config *c) {
    return c->n_embd_per_layer == 0 ? 0 : c->ple_layers ? c->ple_layers : c->n_layer;
}

/* The config of layers [first, end) alone, renumbered from 0 (a stage of a
 * model split over devices): each layer's shape, attention type and KV
 * source kept (swa_pattern's locality made explicit per layer), and the
 * per-layer inputs of layers first.. to the model's end carried.
 * Errors: SW_ERR_ARG (an empty or out-of-range window, or a KV-shared
 * layer whose cache is before first). */
sw_status model_config_window(const model_config *c, uint32_t first, uint32_t end,
                              model_config *out);

/* Checks the per-layer shapes: head counts dividing n_head, even head
 * sizes, KV sources earlier, owning a cache and of the same attention
 * type. Errors:
 * SW_ERR_FORMAT naming the layer. */
sw_status model_config_check_layers(const model_config *c);

#endif
