/*
 * config.h — a Gemma model's hyperparameters, every quirk a named field.
 *
 * Filled from the model file's metadata (no hard-coded sizes); the forward
 * pass reads only these fields and never branches on the architecture name.
 * Gemma 1, 2 and 3 differ only in the values below.
 */
#ifndef SW_MODEL_CONFIG_H
#define SW_MODEL_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "format/gguf.h"

#define MODEL_MAX_LAYERS 512

typedef struct model_config {
    char arch[16];            /* "gemma", "gemma2", "gemma3" — messages only */
    uint32_t n_layer;
    uint32_t n_embd;          /* residual width H */
    uint32_t n_ff;            /* width of each of gate/up */
    uint32_t n_head;
    uint32_t n_head_kv;
    uint32_t n_embd_head;     /* head_dim; n_head * n_embd_head may differ from H */
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
    bool qk_norm;             /* RMSNorm q and k per head before RoPE */
    bool post_norms;          /* RMSNorm after attention and after the FFN */
} model_config;

/* Reads the config from GGUF metadata and the token embedding's shape.
 * Errors: SW_ERR_UNSUPPORTED (architecture not gemma/gemma2/gemma3),
 * SW_ERR_FORMAT (missing or inconsistent key: message names it). */
sw_status model_config_from_gguf(const gguf_file *f, model_config *out);

/* Whether layer il uses the sliding window (local attention). */
bool model_layer_is_local(const model_config *c, uint32_t il);

#endif
