/*
 * hf_config4.c — config.json of a synthetic Gemma 4 model, as transformers
 * 5.24 saves a Gemma4ForCausalLM in the layout of the released checkpoints
 * (global_head_dim and num_global_key_value_heads for the full layers,
 * use_double_wide_mlp for the KV-shared ones; gemma4-facts, "Text
 * configs"), keys sorted as json.dumps(sort_keys=True) writes them; and
 * that of a Gemma 4 assistant (Gemma4AssistantForCausalLM, transformers
 * 5.25), the same text keys nested as its text_config.
 */
#include <string.h>

#include "synth/synth_internal.h"

#define HF_VERSION "5.24.0"

/* key: v, or null where v is 0 (an unset optional size). */
static void key_int_or_null(jsonw *j, const char *key, int64_t v) {
    jw_key(j, key);
    if (v != 0)
        jw_int(j, v);
    else
        jw_null(j);
}

static void rope(jsonw *j, const model_config *c, uint32_t hd_full) {
    jw_key(j, "rope_parameters");
    jw_obj(j);
    jw_key(j, "full_attention");
    jw_obj(j);
    jw_key(j, "partial_rotary_factor");
    jw_float(j, c->rope_pairs_global ? 2.0 * c->rope_pairs_global / hd_full : 1.0);
    jw_key(j, "rope_theta");
    jw_float(j, c->rope_base_global);
    jw_key(j, "rope_type");
    jw_str(j, "proportional");
    jw_obj_end(j);
    jw_key(j, "sliding_attention");
    jw_obj(j);
    jw_key(j, "rope_theta");
    jw_float(j, c->rope_base_local);
    jw_key(j, "rope_type");
    jw_str(j, "default");
    jw_obj_end(j);
    jw_obj_end(j);
}

/* What the per-layer shape says in config terms: the sliding layers'
 * head and KV heads, the full layers' (0 when none was kept), the base
 * MLP width and whether the KV-shared layers double it. */
typedef struct g4_keys {
    uint32_t hd_swa, kv_swa, hd_full, kv_full, inter, n_shared;
    bool k_eq_v, double_wide;
} g4_keys;

static g4_keys keys_of(const model_config *c) {
    g4_keys k = {0};
    k.hd_full = c->n_embd_head;
    k.inter = model_layer_n_ff(c, 0);
    for (uint32_t il = 0; il < c->n_layer; il++) {
        if (model_layer_is_local(c, il)) {
            k.hd_swa = model_layer_head_dim(c, il);
            k.kv_swa = model_layer_n_head_kv(c, il);
        } else {
            k.kv_full = model_layer_n_head_kv(c, il);
            k.k_eq_v = c->layer[il].k_eq_v;
        }
        if (!model_layer_owns_kv(c, il)) {
            k.n_shared++;
            k.double_wide = model_layer_n_ff(c, il) == 2 * k.inter;
        }
    }
    return k;
}

/* The text model's keys, sorted. A standalone model (dtype != NULL) adds
 * architectures, dtype and transformers_version; an assistant's nested
 * text_config has neither those nor a per-layer-input vocabulary. */
static void text_keys(jsonw *j, const synth_model *m, const char *dtype) {
    const model_config *c = &m->c;
    const g4_keys k = keys_of(c);
    if (dtype != NULL) {
        jw_key(j, "architectures");
        jw_arr(j);
        jw_str(j, "Gemma4ForCausalLM");
        jw_arr_end(j);
    }
    jw_key_bool(j, "attention_bias", false);
    jw_key(j, "attention_dropout");
    jw_float(j, 0.0);
    jw_key_bool(j, "attention_k_eq_v", k.k_eq_v);
    jw_key_int(j, "bos_token_id", 2);
    if (dtype != NULL) {
        jw_key(j, "dtype");
        jw_str(j, dtype);
    }
    jw_key_bool(j, "enable_moe_block", c->n_expert != 0);
    jw_key_int(j, "eos_token_id", 1);
    jw_key(j, "final_logit_softcapping");
    if (c->final_softcap != 0.0f)
        jw_float(j, c->final_softcap);
    else
        jw_null(j);
    jw_key_int(j, "global_head_dim", k.hd_full);
    jw_key_int(j, "head_dim", k.hd_swa);
    jw_key(j, "hidden_activation");
    jw_str(j, "gelu_pytorch_tanh");
    jw_key_int(j, "hidden_size", c->n_embd);
    jw_key_int(j, "hidden_size_per_layer_input", c->n_embd_per_layer);
    jw_key(j, "initializer_range");
    jw_float(j, 0.02);
    jw_key_int(j, "intermediate_size", k.inter);
    jw_key(j, "layer_types");
    jw_arr(j);
    for (uint32_t il = 0; il < c->n_layer; il++)
        jw_str(j, model_layer_is_local(c, il) ? "sliding_attention" : "full_attention");
    jw_arr_end(j);
    jw_key_int(j, "max_position_embeddings", c->n_ctx_train);
    jw_key(j, "model_type");
    jw_str(j, "gemma4_text");
    key_int_or_null(j, "moe_intermediate_size", c->n_ff_exp);
    jw_key_int(j, "num_attention_heads", c->n_head);
    key_int_or_null(j, "num_experts", c->n_expert);
    key_int_or_null(j, "num_global_key_value_heads", k.k_eq_v ? k.kv_full : 0);
    jw_key_int(j, "num_hidden_layers", c->n_layer);
    jw_key_int(j, "num_key_value_heads", k.kv_swa);
    jw_key_int(j, "num_kv_shared_layers", k.n_shared);
    jw_key_int(j, "pad_token_id", 0);
    jw_key(j, "rms_norm_eps");
    jw_float(j, 1e-6); /* c->norm_eps is the f32 rounding of this */
    rope(j, c, k.hd_full);
    jw_key_int(j, "sliding_window", c->sliding_window);
    jw_key_bool(j, "tie_word_embeddings", true);
    key_int_or_null(j, "top_k_experts", c->n_expert_used);
    if (dtype != NULL) {
        jw_key(j, "transformers_version");
        jw_str(j, HF_VERSION);
    }
    jw_key(j, "use_bidirectional_attention");
    jw_null(j);
    jw_key_bool(j, "use_cache", true);
    jw_key_bool(j, "use_double_wide_mlp", k.double_wide);
    jw_key_int(j, "vocab_size", c->n_vocab);
    jw_key_int(j, "vocab_size_per_layer_input", c->assistant ? 0 : c->n_vocab);
}

void synth_gemma4_config_json(jsonw *j, const synth_model *m, bool f16) {
    jw_obj(j);
    text_keys(j, m, f16 ? "float16" : "bfloat16");
    jw_obj_end(j);
}

/* transformers 5.25's Gemma4AssistantConfig: a dense head still saves the
 * centroid defaults, which nothing reads then. */
#define ASSISTANT_HF_VERSION "5.25.0"
#define DEFAULT_CENTROIDS 2048
#define DEFAULT_CENTROID_TOP_K 32

void synth_gemma4_assistant_config_json(jsonw *j, const synth_model *m, bool f16) {
    const model_config *c = &m->c;
    const bool ordered = c->n_centroid != 0;
    jw_obj(j);
    jw_key(j, "architectures");
    jw_arr(j);
    jw_str(j, "Gemma4AssistantForCausalLM");
    jw_arr_end(j);
    jw_key_int(j, "backbone_hidden_size", c->backbone_embd);
    jw_key_int(j, "centroid_intermediate_top_k",
               ordered ? c->centroid_top_k : DEFAULT_CENTROID_TOP_K);
    jw_key(j, "dtype");
    jw_str(j, f16 ? "float16" : "bfloat16");
    jw_key(j, "model_type");
    jw_str(j, "gemma4_assistant");
    jw_key_int(j, "num_centroids", ordered ? c->n_centroid : DEFAULT_CENTROIDS);
    jw_key(j, "text_config");
    jw_obj(j);
    text_keys(j, m, NULL);
    jw_obj_end(j);
    jw_key_bool(j, "tie_word_embeddings", true);
    jw_key(j, "transformers_version");
    jw_str(j, ASSISTANT_HF_VERSION);
    jw_key_bool(j, "use_ordered_embeddings", ordered);
    jw_obj_end(j);
}
