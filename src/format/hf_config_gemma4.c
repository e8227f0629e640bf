/*
 * hf_config_gemma4.c — a Gemma 4 text config (config.json of
 * Gemma4ForCausalLM, or text_config of Gemma4ForConditionalGeneration)
 * into the gemma4.* keys llama.cpp's converter writes (hf_config.h), and
 * the rope_freqs tensor it generates for the proportional RoPE of full
 * layers, so model/config_gemma4.c reads both containers alike.
 *
 * Both layouts users have: released checkpoints state the full layers'
 * head size and KV heads as global_head_dim / num_global_key_value_heads
 * (the latter only counting with attention_k_eq_v, as transformers
 * reads it); transformers 5.2x saves per_layer_config instead (per layer
 * index: head_dim, num_key_value_heads). Absent keys take
 * Gemma4TextConfig's defaults (transformers 5.24): among them a
 * per-layer input width of 256 and no final soft-cap.
 *
 * A Gemma 4 assistant (Gemma4AssistantForCausalLM, transformers 5.25) is
 * a text config of the same kind under text_config, every layer KV-shared,
 * plus its own keys (backbone width, the centroid-masked head's sizes),
 * written as gemma4.assistant.*.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "format/hf_config.h"
#include "util/error.h"

#define MAX_LAYERS 512

typedef struct g4_sizes {
    int64_t vocab, hidden, inter, layers, heads, kv, hd, max_pos, window, pl, shared;
    int64_t hd_full, kv_full, n_expert, top_k, moe_inter;
    double eps, final_cap, base_swa, base_full, rot_factor;
    bool k_eq_v, double_wide, moe;
    bool local[MAX_LAYERS];
} g4_sizes;

/* A number: absent or null → def. */
static sw_status get_f(const json_object *o, const char *key, const char *what, double def,
                       double *out) {
    sw_status st = jsonu_get_f64(o, key, what, out);
    if (st == SW_ERR_ARG) {
        *out = def;
        return SW_OK;
    }
    if (st == SW_OK && (!isfinite(*out) || *out < 0))
        return sw_errorf(SW_ERR_FORMAT, "%s: '%s' = %g is out of range", what, key, *out);
    return st;
}

static sw_status get_b(const json_object *o, const char *key, const char *what, bool *out) {
    sw_status st = jsonu_get_bool(o, key, what, out);
    return st == SW_ERR_ARG ? SW_OK : st;
}

/* layer_types (default: every sixth layer full), the last layer full as
 * transformers forces it. */
static sw_status read_types(const json_object *t, const char *what, g4_sizes *z) {
    json_object *types = NULL;
    sw_status st = jsonu_get_arr(t, "layer_types", what, &types);
    if (st != SW_OK && st != SW_ERR_ARG)
        return st;
    if (st == SW_OK && (int64_t)json_object_array_length(types) != z->layers)
        return sw_errorf(SW_ERR_FORMAT, "%s: 'layer_types' has %zu entries for %lld layers",
                         what, json_object_array_length(types), (long long)z->layers);
    for (int64_t i = 0; i < z->layers; i++) {
        if (types == NULL) {
            z->local[i] = (i + 1) % 6 != 0;
            continue;
        }
        json_object *v = json_object_array_get_idx(types, (size_t)i);
        const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v)
                                                                  : "";
        if (strcmp(s, "sliding_attention") && strcmp(s, "full_attention"))
            return sw_errorf(SW_ERR_UNSUPPORTED, "%s: layer_types[%lld] = '%s' (sliding_"
                             "attention or full_attention)", what, (long long)i, s);
        z->local[i] = !strcmp(s, "sliding_attention");
    }
    z->local[z->layers - 1] = false;
    return SW_OK;
}

/* The full layers' head size and KV heads: per_layer_config entries
 * (which must agree), else global_head_dim / num_global_key_value_heads. */
static sw_status read_full_heads(const json_object *t, const char *what, g4_sizes *z) {
    json_object *plc = NULL;
    sw_status st = jsonu_get_obj(t, "per_layer_config", what, &plc);
    if (st == SW_ERR_ARG) {
        int64_t kvg = z->kv;
        if ((st = jsonu_get_int_in(t, "global_head_dim", what, 512, 2, 65536, &z->hd_full)) ||
            (st = jsonu_get_int_in(t, "num_global_key_value_heads", what, z->kv, 1, 4096, &kvg)))
            return st;
        z->kv_full = z->k_eq_v ? kvg : z->kv;
        return SW_OK;
    }
    if (st != SW_OK)
        return st;
    z->hd_full = z->hd;
    z->kv_full = z->kv;
    bool seen = false;
    for (int64_t i = 0; i < z->layers; i++) {
        char idx[24];
        json_object *e = NULL;
        snprintf(idx, sizeof idx, "%lld", (long long)i);
        if (!json_object_object_get_ex(plc, idx, &e) || e == NULL)
            continue;
        int64_t hd = z->local[i] ? z->hd : z->hd_full, kv = z->local[i] ? z->kv : z->kv_full;
        if ((st = jsonu_get_int_in(e, "head_dim", what, hd, 2, 65536, &hd)) ||
            (st = jsonu_get_int_in(e, "num_key_value_heads", what, kv, 1, 4096, &kv)))
            return st;
        if (z->local[i] && (hd != z->hd || kv != z->kv))
            return sw_errorf(SW_ERR_UNSUPPORTED, "%s: per_layer_config gives sliding layer "
                             "%lld its own head shape; only full layers may differ", what,
                             (long long)i);
        if (!z->local[i] && seen && (hd != z->hd_full || kv != z->kv_full))
            return sw_errorf(SW_ERR_UNSUPPORTED, "%s: per_layer_config gives full layers "
                             "different head shapes (layer %lld)", what, (long long)i);
        if (!z->local[i]) {
            z->hd_full = hd;
            z->kv_full = kv;
            seen = true;
        }
    }
    return SW_OK;
}

/* rope_parameters per layer type: sliding "default", full "proportional"
 * (a share of the pairs turned) or "default". */
static sw_status read_rope(const json_object *t, const char *what, g4_sizes *z) {
    json_object *p = NULL, *full = NULL, *swa = NULL;
    const char *type = "proportional";
    double factor = 1.0;
    z->base_swa = 1e4;
    z->base_full = 1e6;
    z->rot_factor = 0.25;
    sw_status st = jsonu_get_obj(t, "rope_parameters", what, &p);
    if (st == SW_ERR_ARG)
        return SW_OK;
    if (st != SW_OK)
        return st;
    if (jsonu_get_obj(p, "sliding_attention", what, &swa) == SW_OK) {
        const char *ts = "default";
        if ((st = get_f(swa, "rope_theta", what, 1e4, &z->base_swa)) ||
            ((st = jsonu_get_str(swa, "rope_type", what, &ts, NULL)) && st != SW_ERR_ARG))
            return st;
        if (strcmp(ts, "default"))
            return sw_errorf(SW_ERR_UNSUPPORTED, "%s: sliding layers' RoPE type '%s' (only "
                             "default)", what, ts);
    }
    if (jsonu_get_obj(p, "full_attention", what, &full) != SW_OK)
        return SW_OK;
    if ((st = get_f(full, "rope_theta", what, 1e6, &z->base_full)) ||
        ((st = jsonu_get_str(full, "rope_type", what, &type, NULL)) && st != SW_ERR_ARG) ||
        (st = get_f(full, "partial_rotary_factor", what, 1.0, &z->rot_factor)) ||
        (st = get_f(full, "factor", what, 1.0, &factor)))
        return st;
    if (!strcmp(type, "default"))
        z->rot_factor = 1.0;
    else if (strcmp(type, "proportional"))
        return sw_errorf(SW_ERR_UNSUPPORTED, "%s: full layers' RoPE type '%s' (proportional "
                         "or default)", what, type);
    if (factor != 1.0 || z->rot_factor <= 0 || z->rot_factor > 1)
        return sw_errorf(SW_ERR_UNSUPPORTED, "%s: full layers' RoPE factor %g and share %g "
                         "(only factor 1 and a share in (0, 1])", what, factor, z->rot_factor);
    return SW_OK;
}

static sw_status read_sizes(const json_object *t, const char *what, g4_sizes *z) {
    const int64_t big = (int64_t)1 << 30;
    sw_status st;
    memset(z, 0, sizeof *z);
    if ((st = jsonu_get_int_in(t, "vocab_size", what, 262144, 1, INT32_MAX, &z->vocab)) ||
        (st = jsonu_get_int_in(t, "hidden_size", what, 2304, 1, big, &z->hidden)) ||
        (st = jsonu_get_int_in(t, "intermediate_size", what, 9216, 1, big, &z->inter)) ||
        (st = jsonu_get_int_in(t, "num_hidden_layers", what, 30, 1, MAX_LAYERS, &z->layers)) ||
        (st = jsonu_get_int_in(t, "num_attention_heads", what, 8, 1, 4096, &z->heads)) ||
        (st = jsonu_get_int_in(t, "num_key_value_heads", what, 4, 1, 4096, &z->kv)) ||
        (st = jsonu_get_int_in(t, "head_dim", what, 256, 2, 65536, &z->hd)) ||
        (st = jsonu_get_int_in(t, "max_position_embeddings", what, 131072, 1, big, &z->max_pos)) ||
        (st = jsonu_get_int_in(t, "sliding_window", what, 512, 1, big, &z->window)) ||
        (st = jsonu_get_int_in(t, "hidden_size_per_layer_input", what, 256, 0, 65536, &z->pl)) ||
        (st = jsonu_get_int_in(t, "num_kv_shared_layers", what, 0, 0, MAX_LAYERS, &z->shared)) ||
        (st = get_f(t, "rms_norm_eps", what, 1e-6, &z->eps)) ||
        (st = get_f(t, "final_logit_softcapping", what, 0, &z->final_cap)) ||
        (st = get_b(t, "attention_k_eq_v", what, &z->k_eq_v)) ||
        (st = get_b(t, "use_double_wide_mlp", what, &z->double_wide)) ||
        (st = get_b(t, "enable_moe_block", what, &z->moe)))
        return st;
    if (z->moe && ((st = jsonu_get_int_in(t, "num_experts", what, 0, 1, 1 << 16, &z->n_expert)) ||
                   (st = jsonu_get_int_in(t, "top_k_experts", what, 0, 1, 1 << 16, &z->top_k)) ||
                   (st = jsonu_get_int_in(t, "moe_intermediate_size", what, 0, 1, big,
                                          &z->moe_inter))))
        return st;
    if (z->moe && (z->n_expert == 0 || z->top_k == 0 || z->moe_inter == 0))
        return sw_errorf(SW_ERR_FORMAT, "%s: enable_moe_block needs num_experts, top_k_experts "
                         "and moe_intermediate_size", what);
    if ((st = read_types(t, what, z)) || (st = read_full_heads(t, what, z)))
        return st;
    return read_rope(t, what, z);
}

static sw_status put_u32(gguf_mem *b, const char *suffix, int64_t v) {
    char key[96];
    snprintf(key, sizeof key, "gemma4.%s", suffix);
    return gguf_mem_set_u32(b, key, (uint32_t)v);
}

static sw_status put_f32(gguf_mem *b, const char *suffix, double v) {
    char key[96];
    snprintf(key, sizeof key, "gemma4.%s", suffix);
    return gguf_mem_set_f32(b, key, (float)v);
}

/* Per-layer widths and KV heads: an array where layers differ, as the
 * converter writes them. */
static sw_status put_layers(gguf_mem *b, const g4_sizes *z) {
    int32_t ff[MAX_LAYERS], kv[MAX_LAYERS];
    bool ff_vary = false, kv_vary = false;
    for (int64_t i = 0; i < z->layers; i++) {
        ff[i] = (int32_t)(z->double_wide && i >= z->layers - z->shared ? 2 * z->inter
                                                                       : z->inter);
        kv[i] = (int32_t)(z->local[i] ? z->kv : z->kv_full);
        ff_vary |= ff[i] != ff[0];
        kv_vary |= kv[i] != kv[0];
    }
    sw_status st = ff_vary ? gguf_mem_set_arr_i32(b, "gemma4.feed_forward_length", ff,
                                                  (uint64_t)z->layers)
                           : put_u32(b, "feed_forward_length", ff[0]);
    if (st == SW_OK)
        st = kv_vary ? gguf_mem_set_arr_i32(b, "gemma4.attention.head_count_kv", kv,
                                            (uint64_t)z->layers)
                     : put_u32(b, "attention.head_count_kv", kv[0]);
    if (st == SW_OK)
        st = gguf_mem_set_arr_bool(b, "gemma4.attention.sliding_window_pattern", z->local,
                                   (uint64_t)z->layers);
    return st;
}

/* rope_freqs.weight: 1 for each pair the full layers turn, 1e30 after. */
static sw_status put_rope_freqs(gguf_mem *b, const g4_sizes *z) {
    const uint64_t half = (uint64_t)z->hd_full / 2;
    const uint64_t turned = (uint64_t)floor(z->rot_factor * (double)z->hd_full / 2.0);
    if (turned >= half)
        return SW_OK; /* every pair: no tensor, as for default RoPE */
    float *f = gguf_mem_alloc(b, half * sizeof *f);
    if (f == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for rope_freqs");
    for (uint64_t i = 0; i < half; i++)
        f[i] = i < turned ? 1.0f : 1e30f;
    return gguf_mem_add_tensor(b, "rope_freqs.weight", 0 /* F32 */, 1, &half, f, 0);
}

/* What the forward pass does not have: bidirectional text attention,
 * attention biases, another activation. */
static sw_status check_features(const json_object *t, const char *what) {
    const char *s = NULL;
    bool bias = false;
    sw_status st = jsonu_get_str(t, "use_bidirectional_attention", what, &s, NULL);
    if (st == SW_OK && !strcmp(s, "all"))
        return sw_errorf(SW_ERR_UNSUPPORTED, "%s: use_bidirectional_attention = \"all\" (an "
                         "embedding model) is not supported", what);
    if ((st = get_b(t, "attention_bias", what, &bias)) != SW_OK)
        return st;
    if (bias)
        return sw_errorf(SW_ERR_UNSUPPORTED, "%s: attention_bias = true is not supported", what);
    st = jsonu_get_str(t, "hidden_activation", what, &s, NULL);
    if (st == SW_OK && strcmp(s, "gelu_pytorch_tanh"))
        return sw_errorf(SW_ERR_UNSUPPORTED, "%s: activation '%s' is not supported (Gemma uses "
                         "gelu_pytorch_tanh)", what, s);
    return st == SW_ERR_ARG ? SW_OK : st;
}

/* What transformers' Gemma4AssistantConfig refuses; its layers all read
 * the target's caches. */
static sw_status assistant_sizes(const char *what, g4_sizes *z) {
    if (z->pl != 0 || z->moe || z->double_wide)
        return sw_errorf(SW_ERR_FORMAT, "%s: a Gemma 4 assistant's text model has no "
                         "per-layer inputs, experts or double-wide MLP (this one has %s)",
                         what, z->pl ? "per-layer inputs" : z->moe ? "experts"
                                                                   : "a double-wide MLP");
    z->shared = z->layers;
    return SW_OK;
}

static sw_status translate(const json_object *t, const char *what, bool assistant,
                           gguf_mem *b) {
    g4_sizes z;
    sw_status st = check_features(t, what);
    if (st != SW_OK || (st = read_sizes(t, what, &z)) != SW_OK ||
        (assistant && (st = assistant_sizes(what, &z)) != SW_OK))
        return st;
    if (z.heads % z.kv || z.heads % z.kv_full)
        return sw_errorf(SW_ERR_FORMAT, "%s: %lld query heads are not a multiple of %lld "
                         "(sliding) and %lld (full) KV heads", what, (long long)z.heads,
                         (long long)z.kv, (long long)z.kv_full);
    if ((st = gguf_mem_set_str(b, "general.architecture", "gemma4")) ||
        (st = put_u32(b, "block_count", z.layers)) ||
        (st = put_u32(b, "context_length", z.max_pos)) ||
        (st = put_u32(b, "embedding_length", z.hidden)) ||
        (st = put_u32(b, "attention.head_count", z.heads)) ||
        (st = put_u32(b, "attention.key_length", z.hd_full)) ||
        (st = put_u32(b, "attention.value_length", z.hd_full)) ||
        (st = put_u32(b, "attention.key_length_swa", z.hd)) ||
        (st = put_u32(b, "attention.value_length_swa", z.hd)) ||
        (st = put_u32(b, "attention.sliding_window", z.window)) ||
        (st = put_u32(b, "attention.shared_kv_layers", z.shared)) ||
        (st = put_u32(b, "embedding_length_per_layer_input", z.pl)) ||
        (st = put_u32(b, "rope.dimension_count", z.hd_full)) ||
        (st = put_u32(b, "rope.dimension_count_swa", z.hd)) ||
        (st = put_u32(b, "vocab_size", z.vocab)) ||
        (st = put_f32(b, "rope.freq_base", z.base_full)) ||
        (st = put_f32(b, "rope.freq_base_swa", z.base_swa)) ||
        (st = put_f32(b, "attention.layer_norm_rms_epsilon", z.eps)) ||
        (st = put_f32(b, "final_logit_softcapping", z.final_cap)) ||
        (st = put_layers(b, &z)) || (st = put_rope_freqs(b, &z)))
        return st;
    if (z.moe && ((st = put_u32(b, "expert_count", z.n_expert)) ||
                  (st = put_u32(b, "expert_used_count", z.top_k)) ||
                  (st = put_u32(b, "expert_feed_forward_length", z.moe_inter))))
        return st;
    return SW_OK;
}

sw_status hf_config_gemma4(const json_object *t, const char *what, gguf_mem *b) {
    return translate(t, what, false, b);
}

sw_status hf_config_gemma4_assistant(const json_object *root, const json_object *t,
                                     const char *what, gguf_mem *b) {
    int64_t backbone = 0, centroids = 0, top_k = 0;
    bool ordered = false;
    sw_status st = translate(t, what, true, b);
    if (st != SW_OK ||
        (st = jsonu_get_int_in(root, "backbone_hidden_size", what, 1536, 1, 1 << 20,
                               &backbone)) ||
        (st = get_b(root, "use_ordered_embeddings", what, &ordered)) ||
        (st = jsonu_get_int_in(root, "num_centroids", what, 2048, 1, 1 << 24, &centroids)) ||
        (st = jsonu_get_int_in(root, "centroid_intermediate_top_k", what, 32, 1, 1 << 24,
                               &top_k)))
        return st;
    if (ordered && top_k > centroids)
        return sw_errorf(SW_ERR_FORMAT, "%s: centroid_intermediate_top_k %lld exceeds "
                         "num_centroids %lld", what, (long long)top_k, (long long)centroids);
    if ((st = put_u32(b, "assistant.backbone_embedding_length", backbone)) ||
        (st = put_u32(b, "assistant.centroid_count", ordered ? centroids : 0)))
        return st;
    return put_u32(b, "assistant.centroid_top_k", ordered ? top_k : 0);
}
