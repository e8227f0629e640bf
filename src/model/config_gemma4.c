/*
 * config_gemma4.c — Gemma 4's hyperparameters from GGUF metadata, as
 * llama.cpp's converter writes them (gemma4-facts, "Names"): per-layer
 * arrays where layers differ (feed_forward_length, attention.head_count_kv,
 * attention.sliding_window_pattern), the head size of full layers
 * (key_length) and of sliding ones (key_length_swa), the KV-shared tail
 * (attention.shared_kv_layers), the per-layer embedding width and the
 * experts. Two facts are only in the tensor table: a full layer without
 * attn_v takes its values from its keys, and rope_freqs (1 for each
 * rotated pair of a full layer, 1e30 for the rest) says how much of the
 * full layers' heads RoPE turns.
 *
 * Circle with config.c, on purpose: model_config_from_gguf() hands
 * Gemma 4 files here, and this file uses config.c's key readers and
 * layer checks, the same for every Gemma.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/config.h"
#include "quant/dequant.h"
#include "quant/types.h"
#include "util/error.h"

/* gemma4.<suffix>: a scalar, or an array of n_layer values (into per[]);
 * *most gets the largest. Absent: SW_ERR_ARG unless `fallback` is set. */
static sw_status per_layer_u32(const gguf_file *f, const char *suffix, uint32_t n_layer,
                               uint32_t fallback, uint32_t *per, uint32_t *most) {
    char key[96];
    snprintf(key, sizeof key, "gemma4.%s", suffix);
    const gguf_value *arr = NULL;
    uint64_t v = fallback;
    sw_status st = gguf_get_array(f, key, &arr);
    if (st == SW_OK) {
        const bool integer = arr->arr.raw != NULL && arr->arr.elem_type != GGUF_VT_F32 &&
                             arr->arr.elem_type != GGUF_VT_F64 &&
                             arr->arr.elem_type != GGUF_VT_BOOL;
        if (!integer || arr->arr.n != n_layer)
            return sw_errorf(SW_ERR_FORMAT, "model metadata '%s' must hold %u integers, one "
                             "per layer", key, n_layer);
        *most = 0;
        for (uint32_t il = 0; il < n_layer; il++) {
            const int64_t x = gguf_array_int(arr, il);
            if (x <= 0 || x > (1 << 30))
                return sw_errorf(SW_ERR_FORMAT, "model metadata '%s'[%u] = %lld is out of "
                                 "range", key, il, (long long)x);
            per[il] = (uint32_t)x;
            *most = per[il] > *most ? per[il] : *most;
        }
        return SW_OK;
    }
    if ((st = gguf_get_uint(f, key, &v)) == SW_ERR_ARG && fallback == 0)
        return sw_errorf(SW_ERR_FORMAT, "model metadata lacks '%s'", key);
    if (st != SW_OK && st != SW_ERR_ARG)
        return st;
    if (v == 0 || v > (1u << 30))
        return sw_errorf(SW_ERR_FORMAT, "model metadata '%s' = %llu is out of range", key,
                         (unsigned long long)v);
    for (uint32_t il = 0; il < n_layer; il++)
        per[il] = (uint32_t)v;
    *most = (uint32_t)v;
    return SW_OK;
}

/* gemma4.<suffix> as u32 into *out; absent keeps *out (0: required). */
static sw_status key_u32(const gguf_file *f, const char *suffix, uint32_t *out,
                         bool zero_ok) {
    char key[96];
    uint64_t v;
    snprintf(key, sizeof key, "gemma4.%s", suffix);
    sw_status st = gguf_get_uint(f, key, &v);
    if (st == SW_ERR_ARG)
        return *out || zero_ok ? SW_OK : sw_errorf(SW_ERR_FORMAT, "model metadata lacks '%s'",
                                                   key);
    if (st != SW_OK)
        return st;
    if ((v == 0 && !zero_ok) || v > (1u << 30))
        return sw_errorf(SW_ERR_FORMAT, "model metadata '%s' = %llu is out of range", key,
                         (unsigned long long)v);
    *out = (uint32_t)v;
    return SW_OK;
}

/* attention.sliding_window_pattern: one bool per layer. */
static sw_status read_pattern(const gguf_file *f, model_config *c) {
    const gguf_value *arr = NULL;
    sw_status st = gguf_get_array(f, "gemma4.attention.sliding_window_pattern", &arr);
    if (st == SW_ERR_ARG)
        return sw_errorf(SW_ERR_FORMAT, "model metadata lacks "
                         "'gemma4.attention.sliding_window_pattern'");
    if (st != SW_OK)
        return st;
    if (arr->arr.elem_type != GGUF_VT_BOOL || arr->arr.n != c->n_layer)
        return sw_errorf(SW_ERR_FORMAT, "'gemma4.attention.sliding_window_pattern' must hold "
                         "%u bools, one per layer", c->n_layer);
    for (uint32_t il = 0; il < c->n_layer; il++)
        c->layer[il].local = gguf_array_uint(arr, il) != 0;
    c->swa_pattern = 0;
    return SW_OK;
}

/* The full layers' rotated pairs from rope_freqs: a run of 1.0, then
 * 1e30 (no rotation); absent: every pair turns. */
static sw_status read_rope_freqs(const gguf_file *f, model_config *c, uint32_t hd_full) {
    const gguf_tensor *t = gguf_find_tensor(f, "rope_freqs.weight");
    c->rope_pairs_global = 0;
    if (t == NULL)
        return SW_OK;
    float v[1024];
    if (t->n_dims != 1 || t->ne[0] != hd_full / 2 || t->ne[0] > 1024 || t->type != SW_TYPE_F32)
        return sw_errorf(SW_ERR_FORMAT, "'rope_freqs.weight' must be %u f32 values (half the "
                         "full layers' head size)", hd_full / 2);
    sw_status st = quant_dequantize(t->type, t->data, v, t->ne[0]);
    if (st != SW_OK)
        return st;
    uint32_t n = 0;
    while (n < t->ne[0] && v[n] == 1.0f)
        n++;
    for (uint32_t i = n; i < t->ne[0]; i++)
        if (!(v[i] >= 1e29f))
            return sw_errorf(SW_ERR_UNSUPPORTED, "'rope_freqs.weight'[%u] = %g: only a run of "
                             "1 then 1e30 (Gemma 4's proportional RoPE) is supported", i,
                             (double)v[i]);
    c->rope_pairs_global = n == t->ne[0] ? 0 : n;
    if (n == 0)
        return sw_errorf(SW_ERR_FORMAT, "'rope_freqs.weight' turns no pair");
    return SW_OK;
}

/* Per-layer head sizes and KV heads, keys as values where a full layer
 * has no attn_v, and the KV-shared tail. */
static sw_status read_layers(const gguf_file *f, model_config *c, uint32_t hd_full,
                             uint32_t hd_swa, const uint32_t *kv, const uint32_t *ff) {
    uint32_t n_shared = 0;
    sw_status st = key_u32(f, "attention.shared_kv_layers", &n_shared, true);
    if (st != SW_OK)
        return st;
    for (uint32_t il = 0; il < c->n_layer; il++) {
        model_layer_shape *l = &c->layer[il];
        l->head_dim = l->local ? hd_swa : hd_full;
        l->n_head_kv = kv[il];
        l->n_ff = ff[il];
        char name[64];
        snprintf(name, sizeof name, "blk.%u.attn_v.weight", il);
        l->k_eq_v = !l->local && il < c->n_layer - n_shared && gguf_find_tensor(f, name) == NULL;
    }
    if (c->assistant) {
        if (n_shared != c->n_layer)
            return sw_errorf(SW_ERR_FORMAT, "a Gemma 4 assistant shares the KV of all its %u "
                             "layers, not %u", c->n_layer, n_shared);
        for (uint32_t il = 0; il < c->n_layer; il++) {
            c->layer[il].kv_shared = true;
            c->layer[il].kv_source = MODEL_KV_TARGET;
        }
    } else if ((st = model_config_share_kv(c, n_shared)) != SW_OK) {
        return st;
    }
    return model_config_check_layers(c);
}

/* gemma4.assistant.*: present only in a Gemma 4 assistant. */
static sw_status read_assistant(const gguf_file *f, model_config *c) {
    uint64_t v;
    sw_status st = gguf_get_uint(f, "gemma4.assistant.backbone_embedding_length", &v);
    if (st == SW_ERR_ARG)
        return SW_OK;
    if (st != SW_OK)
        return st;
    if (v == 0 || v > (1u << 20))
        return sw_errorf(SW_ERR_FORMAT, "model metadata 'gemma4.assistant.backbone_embedding_"
                         "length' = %llu is out of range", (unsigned long long)v);
    c->assistant = true;
    c->backbone_embd = (uint32_t)v;
    if ((st = key_u32(f, "assistant.centroid_count", &c->n_centroid, true)) != SW_OK ||
        (st = key_u32(f, "assistant.centroid_top_k", &c->centroid_top_k, true)) != SW_OK)
        return st;
    if (c->n_centroid != 0 && (c->centroid_top_k == 0 || c->centroid_top_k > c->n_centroid))
        return sw_errorf(SW_ERR_FORMAT, "the assistant scores %u of its %u centroids",
                         c->centroid_top_k, c->n_centroid);
    return SW_OK;
}

sw_status model_config_gemma4(const gguf_file *f, model_config *c) {
    uint32_t kv[MODEL_MAX_LAYERS], ff[MODEL_MAX_LAYERS];
    uint32_t hd_full = 0, hd_swa = 0, v_full = 0, v_swa = 0;
    sw_status st;
    if ((st = key_u32(f, "block_count", &c->n_layer, false)) != SW_OK ||
        (st = key_u32(f, "embedding_length", &c->n_embd, false)) != SW_OK ||
        (st = key_u32(f, "attention.head_count", &c->n_head, false)) != SW_OK ||
        (st = key_u32(f, "attention.key_length", &hd_full, false)) != SW_OK ||
        (st = key_u32(f, "attention.key_length_swa", &hd_swa, false)) != SW_OK ||
        (st = key_u32(f, "attention.value_length", &v_full, true)) != SW_OK ||
        (st = key_u32(f, "attention.value_length_swa", &v_swa, true)) != SW_OK)
        return st;
    if (c->n_layer > MODEL_MAX_LAYERS)
        return sw_errorf(SW_ERR_FORMAT, "%u layers is more than the %u supported", c->n_layer,
                         MODEL_MAX_LAYERS);
    if ((v_full && v_full != hd_full) || (v_swa && v_swa != hd_swa))
        return sw_errorf(SW_ERR_UNSUPPORTED, "value lengths %u/%u differ from key lengths %u/%u",
                         v_full, v_swa, hd_full, hd_swa);
    /* both, even where no layer of a kind is kept: the model's head size
     * is the larger, and RoPE turns pairs */
    if (hd_full % 2 != 0 || hd_swa % 2 != 0)
        return sw_errorf(SW_ERR_FORMAT, "key lengths %u (full) / %u (sliding): an odd one; "
                         "RoPE needs pairs", hd_full, hd_swa);
    if ((st = per_layer_u32(f, "feed_forward_length", c->n_layer, 0, ff, &c->n_ff)) != SW_OK ||
        (st = per_layer_u32(f, "attention.head_count_kv", c->n_layer, c->n_head, kv,
                            &c->n_head_kv)) != SW_OK)
        return st;
    c->n_embd_head = hd_full > hd_swa ? hd_full : hd_swa;
    c->n_ctx_train = 131072;
    c->norm_eps = 1e-6f;
    c->query_scale = 1.0f; /* q and k are RMS-normed per head */
    c->rope_base_global = 1000000.0f;
    c->rope_base_local = 10000.0f;
    c->rope_scale_global = c->rope_scale_local = 1.0f;
    c->qk_norm = c->v_norm = c->post_norms = c->layer_scale = true;
    if ((st = key_u32(f, "context_length", &c->n_ctx_train, false)) != SW_OK ||
        (st = key_u32(f, "attention.sliding_window", &c->sliding_window, true)) != SW_OK ||
        (st = key_u32(f, "embedding_length_per_layer_input", &c->n_embd_per_layer, true)) ||
        (st = key_u32(f, "expert_count", &c->n_expert, true)) != SW_OK ||
        (st = key_u32(f, "expert_used_count", &c->n_expert_used, true)) != SW_OK ||
        (st = key_u32(f, "expert_feed_forward_length", &c->n_ff_exp, true)) != SW_OK ||
        (st = model_key_f32(f, "gemma4", "attention.layer_norm_rms_epsilon", &c->norm_eps)) ||
        (st = model_key_f32(f, "gemma4", "rope.freq_base", &c->rope_base_global)) ||
        (st = model_key_f32(f, "gemma4", "rope.freq_base_swa", &c->rope_base_local)) ||
        (st = model_key_f32(f, "gemma4", "final_logit_softcapping", &c->final_softcap)))
        return st;
    if (c->n_expert && (c->n_expert_used == 0 || c->n_expert_used > c->n_expert ||
                        c->n_ff_exp == 0))
        return sw_errorf(SW_ERR_FORMAT, "%u experts, %u used per token, %u wide: need 1 to "
                         "%u used and a width", c->n_expert, c->n_expert_used, c->n_ff_exp,
                         c->n_expert);
    uint32_t rot_swa = hd_swa;
    if ((st = key_u32(f, "rope.dimension_count_swa", &rot_swa, false)) != SW_OK)
        return st;
    if (rot_swa != hd_swa)
        return sw_errorf(SW_ERR_UNSUPPORTED, "sliding layers turn %u of %u head dimensions "
                         "with RoPE; only all of them is supported", rot_swa, hd_swa);
    if ((st = read_pattern(f, c)) != SW_OK || (st = read_rope_freqs(f, c, hd_full)) != SW_OK ||
        (st = read_assistant(f, c)) != SW_OK)
        return st;
    return read_layers(f, c, hd_full, hd_swa, kv, ff);
}
