/*
 * hf_config.c — config.json → GGUF metadata keys (hf_config.h).
 *
 * Both config generations are read: transformers 4.x (rope_theta,
 * rope_scaling, rope_local_base_freq, sliding_window_pattern) and 5.x
 * (rope_parameters, per layer type for Gemma 3; layer_types). JSON null
 * means "off" for the softcaps (Gemma 3 sets them null) and "default"
 * elsewhere, as in transformers.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "format/hf_config.h"
#include "util/error.h"

/* transformers 5.24 defaults per family (the config classes' __init__). */
typedef struct hf_defaults {
    int64_t vocab, hidden, inter, layers, heads, kv_heads, head_dim, max_pos;
    double rope_global, rope_local, qpas, window, attn_cap, final_cap;
    uint32_t pattern;
} hf_defaults;

static const hf_defaults DEFAULTS[4] = {
    [HF_GEMMA1] = {256000, 3072, 24576, 28, 16, 16, 256, 8192, 1e4, 1e4, 0, 0, 0, 0, 0},
    [HF_GEMMA2] = {256000, 2304, 9216, 26, 8, 4, 256, 8192, 1e4, 1e4, 256, 4096, 50, 30, 2},
    [HF_GEMMA3] = {262208, 2304, 9216, 26, 8, 4, 256, 131072, 1e6, 1e4, 256, 4096, 0, 0, 6},
};

static const char *const GGUF_ARCH[4] = {"", "gemma", "gemma2", "gemma3"};

/* A finite positive number member, or `def` when absent/null. */
static sw_status get_num(const json_object *o, const char *key, const char *what, double def,
                         double *out) {
    sw_status st = jsonu_get_f64(o, key, what, out);
    if (st == SW_ERR_ARG) {
        *out = def;
        return SW_OK;
    }
    if (st != SW_OK)
        return st;
    if (!isfinite(*out) || *out <= 0)
        return sw_errorf(SW_ERR_FORMAT, "%s: '%s' = %g should be a positive number", what,
                         key, *out);
    return SW_OK;
}

/* A softcap: absent → default, null → 0 (off), else a positive number. */
static sw_status get_cap(const json_object *o, const char *key, const char *what, double def,
                         double *out) {
    json_object *v = NULL;
    if (json_object_object_get_ex(o, key, &v) && v == NULL) {
        *out = 0;
        return SW_OK;
    }
    return get_num(o, key, what, def, out);
}

/* Family from architectures[0] (else model_type). */
static sw_status read_family(const json_object *root, const char *what, hf_config *c) {
    static const struct { const char *arch, *type; hf_family fam; bool mm, asst; } known[] = {
        {"GemmaForCausalLM", "gemma", HF_GEMMA1, false, false},
        {"Gemma2ForCausalLM", "gemma2", HF_GEMMA2, false, false},
        {"Gemma3ForCausalLM", "gemma3_text", HF_GEMMA3, false, false},
        {"Gemma3ForConditionalGeneration", "gemma3", HF_GEMMA3, true, false},
        {"Gemma4ForCausalLM", "gemma4_text", HF_GEMMA4, false, false},
        {"Gemma4ForConditionalGeneration", "gemma4", HF_GEMMA4, true, false},
        {"Gemma4AssistantForCausalLM", "gemma4_assistant", HF_GEMMA4, true, true},
    };
    json_object *archs = NULL;
    const char *name = NULL;
    sw_status st = jsonu_get_arr(root, "architectures", what, &archs);
    if (st == SW_OK && json_object_array_length(archs) > 0) {
        json_object *a0 = json_object_array_get_idx(archs, 0);
        if (!json_object_is_type(a0, json_type_string))
            return sw_errorf(SW_ERR_FORMAT, "%s: 'architectures' should hold strings", what);
        name = json_object_get_string(a0);
    } else if (st != SW_OK && st != SW_ERR_ARG) {
        return st;
    }
    const char *type = NULL;
    if ((st = jsonu_get_str(root, "model_type", what, &type, NULL)) != SW_OK &&
        st != SW_ERR_ARG)
        return st;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if ((name && !strcmp(name, known[i].arch)) ||
            (!name && type && !strcmp(type, known[i].type))) {
            c->family = known[i].fam;
            c->multimodal = known[i].mm;
            c->assistant = known[i].asst;
            snprintf(c->architecture, sizeof c->architecture, "%s", known[i].arch);
            return SW_OK;
        }
    return sw_errorf(SW_ERR_UNSUPPORTED, "%s: architecture '%s' is not supported (Spillway "
                     "runs GemmaForCausalLM, Gemma2ForCausalLM, Gemma3ForCausalLM, "
                     "Gemma4ForCausalLM, the text part of Gemma3ForConditionalGeneration "
                     "and Gemma4ForConditionalGeneration, and Gemma4AssistantForCausalLM "
                     "drafters)", what,
                     name ? name : type ? type : "(none given)");
}

/* Refuses features the forward pass does not have. */
static sw_status check_features(const json_object *t, const char *what, hf_family fam) {
    bool flag = false;
    if (jsonu_get_bool(t, "attention_bias", what, &flag) == SW_OK && flag)
        return sw_errorf(SW_ERR_UNSUPPORTED, "%s: attention_bias = true is not supported", what);
    flag = false;
    if (jsonu_get_bool(t, "use_bidirectional_attention", what, &flag) == SW_OK && flag)
        return sw_errorf(SW_ERR_UNSUPPORTED, "%s: use_bidirectional_attention = true (an "
                         "embedding model) is not supported", what);
    const char *act = NULL;
    sw_status st = jsonu_get_str(t, "hidden_activation", what, &act, NULL);
    if (st == SW_ERR_ARG)
        st = jsonu_get_str(t, "hidden_act", what, &act, NULL);
    if (st == SW_ERR_ARG)
        return SW_OK;
    if (st != SW_OK)
        return st;
    /* Gemma 1 checkpoints say "gelu" yet transformers runs the tanh
     * approximation for them (it warns); so does Spillway. */
    if (!strcmp(act, "gelu_pytorch_tanh") || (fam == HF_GEMMA1 && !strcmp(act, "gelu")))
        return SW_OK;
    return sw_errorf(SW_ERR_UNSUPPORTED, "%s: activation '%s' is not supported (Gemma uses "
                     "gelu_pytorch_tanh)", what, act);
}

typedef struct rope_spec {
    double base_global, base_local, factor_global;
} rope_spec;

/* One rope dict ({rope_theta, rope_type, factor}); `factor` NULL: only
 * "default" is allowed. */
static sw_status read_rope_dict(const json_object *d, const char *what, double def_base,
                                double *base, double *factor) {
    sw_status st = get_num(d, "rope_theta", what, def_base, base);
    if (st != SW_OK)
        return st;
    const char *type = "default";
    if ((st = jsonu_get_str(d, "rope_type", what, &type, NULL)) == SW_ERR_ARG)
        st = jsonu_get_str(d, "type", what, &type, NULL);
    if (st == SW_ERR_ARG)
        type = "default";
    else if (st != SW_OK)
        return st;
    if (!strcmp(type, "default"))
        return SW_OK;
    if (!strcmp(type, "linear") && factor != NULL) {
        if ((st = get_num(d, "factor", what, 1.0, factor)) != SW_OK)
            return st;
        if (*factor < 1.0)
            return sw_errorf(SW_ERR_FORMAT, "%s: RoPE factor %g should be >= 1", what, *factor);
        return SW_OK;
    }
    return sw_errorf(SW_ERR_UNSUPPORTED, "%s: RoPE type '%s' is not supported here (Gemma "
                     "uses default, and linear on Gemma 3's global layers)", what, type);
}

static sw_status read_rope(const json_object *t, const char *what, hf_family fam,
                           rope_spec *r) {
    const hf_defaults *d = &DEFAULTS[fam];
    json_object *params = NULL, *full = NULL, *sliding = NULL, *scaling = NULL;
    sw_status st;
    r->base_global = d->rope_global;
    r->base_local = d->rope_local;
    r->factor_global = 1.0;
    if ((st = jsonu_get_obj(t, "rope_parameters", what, &params)) == SW_OK) {
        bool per_type = jsonu_get_obj(params, "full_attention", what, &full) == SW_OK;
        if (per_type) { /* transformers 5, Gemma 3 */
            if ((st = read_rope_dict(full, what, d->rope_global, &r->base_global,
                                     &r->factor_global)) != SW_OK)
                return st;
            if (jsonu_get_obj(params, "sliding_attention", what, &sliding) == SW_OK)
                return read_rope_dict(sliding, what, d->rope_local, &r->base_local, NULL);
            return SW_OK;
        }
        st = read_rope_dict(params, what, d->rope_global, &r->base_global,
                            fam == HF_GEMMA3 ? &r->factor_global : NULL);
        if (fam != HF_GEMMA3)
            r->base_local = r->base_global;
        return st;
    }
    if (st != SW_ERR_ARG)
        return st;
    /* transformers 4: flat keys */
    if ((st = get_num(t, "rope_theta", what, d->rope_global, &r->base_global)) != SW_OK ||
        (st = get_num(t, "rope_local_base_freq", what, d->rope_local, &r->base_local)) != SW_OK)
        return st;
    if (fam != HF_GEMMA3)
        r->base_local = r->base_global;
    if ((st = jsonu_get_obj(t, "rope_scaling", what, &scaling)) == SW_OK)
        return read_rope_dict(scaling, what, r->base_global,
                              &r->base_global, fam == HF_GEMMA3 ? &r->factor_global : NULL);
    return st == SW_ERR_ARG ? SW_OK : st;
}

/* The local/global layer pattern p (layer i local iff i % p < p - 1):
 * from layer_types when present (checked to be that periodic pattern),
 * else sliding_window_pattern, else the family default. */
static sw_status read_pattern(const json_object *t, const char *what, hf_family fam,
                              int64_t n_layer, uint32_t *pattern) {
    json_object *types = NULL;
    int64_t p = DEFAULTS[fam].pattern;
    sw_status st;
    if (fam == HF_GEMMA1) {
        *pattern = 0;
        return SW_OK;
    }
    if ((st = jsonu_get_int_in(t, "sliding_window_pattern", what, p, 1, 1 << 20, &p)) != SW_OK ||
        (st = jsonu_get_int_in(t, "_sliding_window_pattern", what, p, 1, 1 << 20, &p)) != SW_OK)
        return st;
    if ((st = jsonu_get_arr(t, "layer_types", what, &types)) == SW_ERR_ARG) {
        *pattern = (uint32_t)p;
        return SW_OK;
    }
    if (st != SW_OK)
        return st;
    if ((int64_t)json_object_array_length(types) != n_layer)
        return sw_errorf(SW_ERR_FORMAT, "%s: 'layer_types' has %zu entries for %lld layers",
                         what, json_object_array_length(types), (long long)n_layer);
    p = 0;
    for (int64_t i = 0; i < n_layer && p == 0; i++) {
        json_object *v = json_object_array_get_idx(types, (size_t)i);
        if (json_object_is_type(v, json_type_string) &&
            !strcmp(json_object_get_string(v), "full_attention"))
            p = i + 1;
    }
    if (p == 0) /* no global layer within the depth: any period longer works */
        p = n_layer + 1;
    for (int64_t i = 0; i < n_layer; i++) {
        json_object *v = json_object_array_get_idx(types, (size_t)i);
        const char *want = i % p < p - 1 ? "sliding_attention" : "full_attention";
        if (!json_object_is_type(v, json_type_string) || strcmp(json_object_get_string(v), want))
            return sw_errorf(SW_ERR_UNSUPPORTED, "%s: layer_types[%lld] should be '%s' for "
                             "a repeating pattern of %lld layers; other layouts are not "
                             "supported", what, (long long)i, want, (long long)p);
    }
    *pattern = (uint32_t)p;
    return SW_OK;
}

static sw_status put_key_u32(gguf_mem *b, const char *arch, const char *suffix, int64_t v) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    return gguf_mem_set_u32(b, key, (uint32_t)v);
}

static sw_status put_key_f32(gguf_mem *b, const char *arch, const char *suffix, double v) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    return gguf_mem_set_f32(b, key, (float)v);
}

typedef struct hf_sizes {
    int64_t vocab, hidden, inter, layers, heads, kv_heads, head_dim, max_pos;
    double eps, qpas, window, attn_cap, final_cap;
} hf_sizes;

static sw_status read_sizes(const json_object *t, const char *what, hf_family fam,
                            hf_sizes *z) {
    const hf_defaults *d = &DEFAULTS[fam];
    const int64_t big = (int64_t)1 << 30;
    sw_status st;
    if ((st = jsonu_get_int_in(t, "vocab_size", what, d->vocab, 1, INT32_MAX, &z->vocab)) ||
        (st = jsonu_get_int_in(t, "hidden_size", what, d->hidden, 1, big, &z->hidden)) ||
        (st = jsonu_get_int_in(t, "intermediate_size", what, d->inter, 1, big, &z->inter)) ||
        (st = jsonu_get_int_in(t, "num_hidden_layers", what, d->layers, 1, 512, &z->layers)) ||
        (st = jsonu_get_int_in(t, "num_attention_heads", what, d->heads, 1, 4096, &z->heads)) ||
        (st = jsonu_get_int_in(t, "num_key_value_heads", what, d->kv_heads, 1, 4096,
                               &z->kv_heads)) ||
        (st = jsonu_get_int_in(t, "head_dim", what, d->head_dim, 2, 65536, &z->head_dim)) ||
        (st = jsonu_get_int_in(t, "max_position_embeddings", what, d->max_pos, 1, big,
                               &z->max_pos)) ||
        (st = get_num(t, "rms_norm_eps", what, 1e-6, &z->eps)) ||
        (st = get_num(t, "query_pre_attn_scalar", what, d->qpas ? d->qpas : (double)z->head_dim,
                      &z->qpas)) ||
        (st = get_num(t, "sliding_window", what, d->window ? d->window : 1, &z->window)) ||
        (st = get_cap(t, "attn_logit_softcapping", what, d->attn_cap, &z->attn_cap)) ||
        (st = get_cap(t, "final_logit_softcapping", what, d->final_cap, &z->final_cap)))
        return st;
    if (z->window != floor(z->window) || z->window > (double)big)
        return sw_errorf(SW_ERR_FORMAT, "%s: 'sliding_window' = %g is not a window size",
                         what, z->window);
    return SW_OK;
}

static sw_status write_keys(gguf_mem *b, hf_family fam, const hf_sizes *z, const rope_spec *r,
                            uint32_t pattern) {
    const char *a = GGUF_ARCH[fam];
    sw_status st;
    if ((st = gguf_mem_set_str(b, "general.architecture", a)) ||
        (st = put_key_u32(b, a, "block_count", z->layers)) ||
        (st = put_key_u32(b, a, "embedding_length", z->hidden)) ||
        (st = put_key_u32(b, a, "feed_forward_length", z->inter)) ||
        (st = put_key_u32(b, a, "attention.head_count", z->heads)) ||
        (st = put_key_u32(b, a, "attention.head_count_kv", z->kv_heads)) ||
        (st = put_key_u32(b, a, "attention.key_length", z->head_dim)) ||
        (st = put_key_u32(b, a, "attention.value_length", z->head_dim)) ||
        (st = put_key_u32(b, a, "context_length", z->max_pos)) ||
        (st = put_key_u32(b, a, "vocab_size", z->vocab)) ||
        (st = put_key_f32(b, a, "attention.layer_norm_rms_epsilon", z->eps)) ||
        (st = put_key_f32(b, a, "rope.freq_base", r->base_global)) ||
        (st = put_key_f32(b, a, "attention.scale", 1.0 / sqrt(z->qpas))))
        return st;
    if (fam == HF_GEMMA1)
        return SW_OK;
    if ((st = put_key_u32(b, a, "attention.sliding_window", (int64_t)z->window)) ||
        (st = put_key_u32(b, a, "attention.sliding_window_pattern", pattern)) ||
        (st = put_key_f32(b, a, "attn_logit_softcapping", z->attn_cap)) ||
        (st = put_key_f32(b, a, "final_logit_softcapping", z->final_cap)))
        return st;
    if (fam != HF_GEMMA3)
        return SW_OK;
    if ((st = put_key_f32(b, a, "rope.freq_base_swa", r->base_local)))
        return st;
    if (r->factor_global != 1.0) {
        char key[64];
        snprintf(key, sizeof key, "%s.rope.scaling.type", a);
        if ((st = gguf_mem_set_str(b, key, "linear")) ||
            (st = put_key_f32(b, a, "rope.scaling.factor", r->factor_global)))
            return st;
    }
    return SW_OK;
}

sw_status hf_config_translate(const json_object *root, const char *what, gguf_mem *b,
                              hf_config *c) {
    sw_status st;
    memset(c, 0, sizeof *c);
    if (!json_object_is_type(root, json_type_object))
        return sw_errorf(SW_ERR_FORMAT, "%s: should hold a JSON object", what);
    if ((st = read_family(root, what, c)) != SW_OK)
        return st;
    const json_object *t = root;
    json_object *text = NULL;
    if (c->multimodal) { /* the text model's settings live in text_config */
        st = jsonu_get_obj(root, "text_config", what, &text);
        if (st != SW_OK && st != SW_ERR_ARG)
            return st;
        t = text ? text : json_object_new_object();
    }
    hf_sizes z;
    rope_spec r;
    uint32_t pattern = 0;
    bool tie = true;
    if (c->assistant && text == NULL)
        st = sw_errorf(SW_ERR_FORMAT, "%s: a Gemma 4 assistant's config needs its "
                       "'text_config'", what);
    else if (c->assistant)
        st = hf_config_gemma4_assistant(root, t, what, b);
    else if (c->family == HF_GEMMA4)
        st = hf_config_gemma4(t, what, b);
    else if ((st = check_features(t, what, c->family)) == SW_OK &&
             (st = read_sizes(t, what, c->family, &z)) == SW_OK &&
             (st = read_rope(t, what, c->family, &r)) == SW_OK)
        st = read_pattern(t, what, c->family, z.layers, &pattern);
    if (st != SW_OK)
        goto done;
    if ((st = jsonu_get_bool(root, "tie_word_embeddings", what, &tie)) == SW_ERR_ARG)
        st = jsonu_get_bool(t, "tie_word_embeddings", what, &tie);
    if (st != SW_OK && st != SW_ERR_ARG)
        goto done;
    c->tie_embeddings = tie;
    st = SW_OK;
    if (c->family == HF_GEMMA4)
        goto done;
    if (z.heads % z.kv_heads != 0) {
        st = sw_errorf(SW_ERR_FORMAT, "%s: num_attention_heads %lld is not a multiple of "
                       "num_key_value_heads %lld", what, (long long)z.heads,
                       (long long)z.kv_heads);
        goto done;
    }
    st = write_keys(b, c->family, &z, &r, pattern);
done:
    if (c->multimodal && text == NULL)
        json_object_put((json_object *)t);
    return st;
}
