/*
 * hf_model.h — a Hugging Face model folder (config.json, model.safetensors
 * or shards listed in model.safetensors.index.json) opened as the model
 * description the rest of Spillway reads: a gguf_file with GGUF metadata
 * keys (hf_config.h) and GGUF tensor names.
 *
 * Conventions that differ between the containers are settled here, once:
 *  - names: model.layers.N.self_attn.q_proj.weight → blk.N.attn_q.weight,
 *    and so on; Gemma 1's post_attention_layernorm is its pre-FFN norm
 *    (ffn_norm), Gemma 2/3's is the post-attention norm; multimodal Gemma 3
 *    checkpoints keep the text model under model.language_model. (or
 *    language_model.model.), and their vision tower is skipped;
 *  - shapes: safetensors [rows, cols] is GGUF ne = {cols, rows}, the same
 *    bytes;
 *  - norms: HF stores w and computes x * (1 + w) in f32; GGUF stores 1 + w.
 *    Norm vectors are converted to f32 1 + w here (small, owned by the
 *    description); matrices stay in the mapping in their stored dtype.
 * Tied embeddings: no lm_head tensor means the LM head is the embedding,
 * as in GGUF. A Gemma 4 assistant's own tensors take mtp.* names
 * (mtp.pre_proj, mtp.post_proj, mtp.centroids; its token ordering, int64
 * in the file, as mtp.token_order in f32).
 */
#ifndef SW_FORMAT_HF_MODEL_H
#define SW_FORMAT_HF_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "format/gguf.h"
#include "format/hf_config.h"

typedef struct hf_model_info {
    hf_config config;
    uint32_t n_shards;
    uint64_t total_bytes;     /* all safetensors files */
    uint64_t n_skipped;       /* tensors not part of the text model */
} hf_model_info;

/* Whether `path` is a directory (the caller then treats it as an HF folder). */
bool hf_is_folder(const char *path);

/* Opens the folder `dir`. *out is owned by the caller (gguf_close), which
 * also unmaps the safetensors files. Errors: SW_ERR_IO (no config.json or
 * no weights: message says what the folder needs), SW_ERR_FORMAT,
 * SW_ERR_UNSUPPORTED (architecture, dtype), SW_ERR_OOM_HOST. */
sw_status hf_model_open(const char *dir, gguf_file **out, hf_model_info *info);

/* The Hugging Face name (Gemma4ForCausalLM's, "model." prefixed) of Gemma
 * 4's GGUF tensor `gguf` ("blk.3.attn_q.weight" ->
 * "model.layers.3.self_attn.q_proj.weight") into out, from the tables the
 * reader maps by; false for a name without one (rope_freqs, which
 * transformers computes). */
bool hf_gemma4_name(const char *gguf, char *out, size_t cap);

#endif
