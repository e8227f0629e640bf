/*
 * hf_config.h — a Hugging Face config.json (Gemma 1 to 4 and the text
 * part of Gemma 3's and 4's multimodal checkpoints) translated into the
 * metadata keys llama.cpp's converter writes to GGUF, so one model
 * description (model/config.c) serves both containers.
 *
 * Values absent from config.json take the defaults of the transformers
 * config class for that model type (GemmaConfig, Gemma2Config,
 * Gemma3TextConfig in transformers 5.24), as transformers would. Quirks
 * GGUF leaves implicit but config.json states are written explicitly:
 * ARCH.attention.scale (1/sqrt(query_pre_attn_scalar)),
 * ARCH.rope.freq_base_swa (Gemma 3's local RoPE base) and
 * ARCH.attention.sliding_window_pattern (from layer_types).
 */
#ifndef SW_FORMAT_HF_CONFIG_H
#define SW_FORMAT_HF_CONFIG_H

#include <stdbool.h>

#include "format/gguf_mem.h"
#include "format/json_util.h"

typedef enum hf_family { HF_GEMMA1 = 1, HF_GEMMA2 = 2, HF_GEMMA3 = 3, HF_GEMMA4 = 4 } hf_family;

typedef struct hf_config {
    hf_family family;
    bool multimodal;          /* Gemma3ForConditionalGeneration: text under a prefix */
    bool assistant;           /* Gemma4AssistantForCausalLM: a drafter (MTP) for a
                               * Gemma 4 target, its text model in text_config */
    bool tie_embeddings;      /* lm_head shares the token embedding */
    char architecture[64];    /* "Gemma2ForCausalLM", for messages */
} hf_config;

/* Reads config.json's parsed `root` and adds the GGUF keys to b. `what`
 * names the file in messages. Errors: SW_ERR_UNSUPPORTED (an architecture,
 * activation, RoPE type or layer pattern Spillway does not run: message
 * names it), SW_ERR_FORMAT (a value of the wrong type or out of range),
 * SW_ERR_OOM_HOST. */
sw_status hf_config_translate(const json_object *root, const char *what, gguf_mem *b,
                              hf_config *out);

/* The Gemma 4 part of it (hf_config_gemma4.c): text config t into the
 * gemma4.* keys and the rope_freqs tensor of llama.cpp's converter. */
sw_status hf_config_gemma4(const json_object *t, const char *what, gguf_mem *b);

/* A Gemma 4 assistant (hf_config_gemma4.c): its text config t as above
 * with every layer KV-shared (it reads its target's caches), and root's
 * own keys as gemma4.assistant.* (model/config.h's assistant fields):
 * backbone_embedding_length, centroid_count (0: the dense tied head) and
 * centroid_top_k. Refuses what transformers' Gemma4AssistantConfig
 * refuses (per-layer inputs, experts, a double-wide MLP), by name. */
sw_status hf_config_gemma4_assistant(const json_object *root, const json_object *t,
                                     const char *what, gguf_mem *b);

#endif
