/*
 * config.c — Gemma hyperparameters from GGUF metadata (keys as llama.cpp's
 * converter writes them; see shared/reference/gemma-facts.md §1-3).
 *
 * Values GGUF usually does not store are the published constants: the
 * local-layer RoPE base (10000), the sliding-window pattern (2 for Gemma 2,
 * 6 for Gemma 3) and the 27B query scale; when a description states them
 * (rope.freq_base_swa, attention.sliding_window_pattern, attention.scale —
 * always so for Hugging Face folders, format/hf_config.c) the stated value
 * is used. Defaults for absent optional keys match
 * llama.cpp's, so a file runs the same here and there.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/config.h"
#include "util/error.h"

typedef enum { ARCH_GEMMA1, ARCH_GEMMA2, ARCH_GEMMA3, ARCH_GEMMA4 } arch_id;

/* ARCH.<suffix> into *out; absent keys keep the default (if any). */
static sw_status key_u32(const gguf_file *f, const char *arch, const char *suffix,
                         bool required, uint32_t *out) {
    char key[128];
    uint64_t v;
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    sw_status st = gguf_get_uint(f, key, &v);
    if (st == SW_ERR_ARG) {
        if (required)
            return sw_errorf(SW_ERR_FORMAT, "model metadata lacks '%s'", key);
        return SW_OK;
    }
    if (st != SW_OK)
        return st;
    if (v == 0 || v > (1u << 30))
        return sw_errorf(SW_ERR_FORMAT, "model metadata '%s' = %llu is out of range", key,
                         (unsigned long long)v);
    *out = (uint32_t)v;
    return SW_OK;
}

sw_status model_key_f32(const gguf_file *f, const char *arch, const char *suffix,
                        float *out) {
    char key[128];
    double v;
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    sw_status st = gguf_get_float(f, key, &v);
    if (st == SW_ERR_ARG)
        return SW_OK;
    if (st != SW_OK)
        return st;
    if (!isfinite(v) || v < 0)
        return sw_errorf(SW_ERR_FORMAT, "model metadata '%s' = %g is out of range", key, v);
    *out = (float)v;
    return SW_OK;
}

static sw_status read_arch(const gguf_file *f, model_config *c, arch_id *id) {
    gguf_str s;
    if (gguf_get_str(f, "general.architecture", &s) != SW_OK)
        return sw_errorf(SW_ERR_FORMAT, "model metadata lacks 'general.architecture'");
    if (s.len >= sizeof c->arch)
        s.len = sizeof c->arch - 1;
    memcpy(c->arch, s.ptr, s.len);
    c->arch[s.len] = '\0';
    if (!strcmp(c->arch, "gemma"))
        *id = ARCH_GEMMA1;
    else if (!strcmp(c->arch, "gemma2"))
        *id = ARCH_GEMMA2;
    else if (!strcmp(c->arch, "gemma3"))
        *id = ARCH_GEMMA3;
    else if (!strcmp(c->arch, "gemma4"))
        *id = ARCH_GEMMA4;
    else
        return sw_errorf(SW_ERR_UNSUPPORTED,
                         "architecture '%s' is not supported (Spillway runs gemma, gemma2, "
                         "gemma3 and gemma4)", c->arch);
    return SW_OK;
}

static sw_status read_sizes(const gguf_file *f, model_config *c) {
    const char *a = c->arch;
    sw_status st;
    if ((st = key_u32(f, a, "block_count", true, &c->n_layer)) != SW_OK ||
        (st = key_u32(f, a, "embedding_length", true, &c->n_embd)) != SW_OK ||
        (st = key_u32(f, a, "feed_forward_length", true, &c->n_ff)) != SW_OK ||
        (st = key_u32(f, a, "attention.head_count", true, &c->n_head)) != SW_OK)
        return st;
    c->n_head_kv = c->n_head;
    c->n_embd_head = c->n_embd / c->n_head;
    c->n_ctx_train = 8192;
    uint32_t value_length = 0;
    if ((st = key_u32(f, a, "attention.head_count_kv", false, &c->n_head_kv)) != SW_OK ||
        (st = key_u32(f, a, "attention.key_length", false, &c->n_embd_head)) != SW_OK ||
        (st = key_u32(f, a, "attention.value_length", false, &value_length)) != SW_OK ||
        (st = key_u32(f, a, "context_length", false, &c->n_ctx_train)) != SW_OK)
        return st;
    if (c->n_layer > MODEL_MAX_LAYERS)
        return sw_errorf(SW_ERR_FORMAT, "%u layers is more than the %u supported",
                         c->n_layer, MODEL_MAX_LAYERS);
    if (value_length != 0 && value_length != c->n_embd_head)
        return sw_errorf(SW_ERR_UNSUPPORTED, "value_length %u differs from key_length %u",
                         value_length, c->n_embd_head);
    if (c->n_head % c->n_head_kv != 0)
        return sw_errorf(SW_ERR_FORMAT, "head_count %u is not a multiple of head_count_kv %u",
                         c->n_head, c->n_head_kv);
    if (c->n_embd_head % 2 != 0)
        return sw_errorf(SW_ERR_FORMAT, "key_length %u is odd; RoPE needs pairs",
                         c->n_embd_head);
    return SW_OK;
}

/* The quirks that distinguish the families. */
static sw_status read_quirks(const gguf_file *f, model_config *c, arch_id id) {
    const char *a = c->arch;
    sw_status st;
    c->norm_eps = 1e-6f;
    c->rope_base_global = id == ARCH_GEMMA3 ? 1000000.0f : 10000.0f;
    c->rope_scale_global = 1.0f;
    c->rope_base_local = 10000.0f; /* not stored in GGUF; Gemma 3's published value */
    c->rope_scale_local = 1.0f;
    c->attn_softcap = id == ARCH_GEMMA2 ? 50.0f : 0.0f;
    c->final_softcap = id == ARCH_GEMMA2 ? 30.0f : 0.0f;
    c->sliding_window = id == ARCH_GEMMA2 ? 4096 : 0;
    c->swa_pattern = id == ARCH_GEMMA2 ? 2 : id == ARCH_GEMMA3 ? 6 : 0;
    c->qk_norm = id == ARCH_GEMMA3;
    c->post_norms = id != ARCH_GEMMA1;
    if ((st = model_key_f32(f, a, "attention.layer_norm_rms_epsilon", &c->norm_eps)) != SW_OK ||
        (st = model_key_f32(f, a, "rope.freq_base", &c->rope_base_global)) != SW_OK ||
        (st = key_u32(f, a, "attention.sliding_window", false, &c->sliding_window)) != SW_OK)
        return st;
    if (id != ARCH_GEMMA1 &&
        ((st = model_key_f32(f, a, "attn_logit_softcapping", &c->attn_softcap)) != SW_OK))
        return st;
    if (id != ARCH_GEMMA1 &&
        ((st = model_key_f32(f, a, "final_logit_softcapping", &c->final_softcap)) != SW_OK))
        return st;
    if (id == ARCH_GEMMA1)
        c->rope_base_local = c->rope_base_global;
    /* Stated by files translated from Hugging Face configs (and by newer
     * llama.cpp conversions); the published constants above otherwise. */
    if (id == ARCH_GEMMA3 &&
        (st = model_key_f32(f, a, "rope.freq_base_swa", &c->rope_base_local)) != SW_OK)
        return st;
    if (id != ARCH_GEMMA1 &&
        (st = key_u32(f, a, "attention.sliding_window_pattern", false, &c->swa_pattern)))
        return st;
    if (c->swa_pattern == 0 || c->sliding_window == 0) {
        c->swa_pattern = 0;
        c->sliding_window = 0;
    }
    if (id != ARCH_GEMMA3) /* Gemma 1/2 use one RoPE base everywhere */
        c->rope_base_local = c->rope_base_global;
    return SW_OK;
}

/* Linear RoPE scaling ("rope.scaling.type" = "linear", factor F) divides
 * positions by F on the global layers (Gemma 3 4B and larger). */
static sw_status read_rope_scaling(const gguf_file *f, model_config *c) {
    char key[128];
    gguf_str type;
    snprintf(key, sizeof key, "%s.rope.scaling.type", c->arch);
    if (gguf_get_str(f, key, &type) != SW_OK)
        return SW_OK;
    if (type.len == 4 && !memcmp(type.ptr, "none", 4))
        return SW_OK;
    if (!(type.len == 6 && !memcmp(type.ptr, "linear", 6)))
        return sw_errorf(SW_ERR_UNSUPPORTED, "'%s' = '%.*s' is not supported (only linear)",
                         key, (int)(type.len > 32 ? 32 : type.len), type.ptr);
    float factor = 1.0f;
    sw_status st = model_key_f32(f, c->arch, "rope.scaling.factor", &factor);
    if (st != SW_OK)
        return st;
    if (!(factor >= 1.0f))
        return sw_errorf(SW_ERR_FORMAT, "rope scaling factor %g must be >= 1", factor);
    c->rope_scale_global = 1.0f / factor;
    return SW_OK;
}

/* GGUF stores no query scale. Gemma 2/3 27B scale by 1/sqrt(H / n_head),
 * every other size by 1/sqrt(head_dim); the 27B models are recognised by
 * depth (46 layers for Gemma 2, 62 for Gemma 3), as llama.cpp does. */
static float query_scale(const model_config *c, arch_id id) {
    bool is_27b = (id == ARCH_GEMMA2 && c->n_layer == 46) ||
                  (id == ARCH_GEMMA3 && c->n_layer == 62);
    float d = is_27b ? (float)c->n_embd / (float)c->n_head : (float)c->n_embd_head;
    return 1.0f / sqrtf(d);
}

static sw_status from_gguf(const gguf_file *f, model_config *c) {
    arch_id id = ARCH_GEMMA1;
    sw_status st;
    memset(c, 0, sizeof *c);
    if ((st = read_arch(f, c, &id)) != SW_OK)
        return st;
    if (id == ARCH_GEMMA4)
        st = model_config_gemma4(f, c);
    else if ((st = read_sizes(f, c)) == SW_OK && (st = read_quirks(f, c, id)) == SW_OK)
        st = read_rope_scaling(f, c);
    if (st != SW_OK)
        return st;
    const gguf_tensor *embd = gguf_find_tensor(f, "token_embd.weight");
    if (embd == NULL)
        return sw_errorf(SW_ERR_FORMAT, "model has no tensor 'token_embd.weight'");
    if (embd->n_dims != 2 || embd->ne[0] != c->n_embd || embd->ne[1] > INT32_MAX)
        return sw_errorf(SW_ERR_FORMAT, "'token_embd.weight' has shape [%llu, %llu], "
                         "expected [%u, n_vocab]", (unsigned long long)embd->ne[0],
                         (unsigned long long)embd->ne[1], c->n_embd);
    c->n_vocab = (uint32_t)embd->ne[1];
    c->embd_scale = sqrtf((float)c->n_embd);
    if (id != ARCH_GEMMA4)
        c->query_scale = query_scale(c, id);
    /* An explicit scale (1/sqrt(query_pre_attn_scalar) from a Hugging Face
     * config) wins over the depth rule. */
    if ((st = model_key_f32(f, c->arch, "attention.scale", &c->query_scale)) != SW_OK)
        return st;
    if (!(c->query_scale > 0.0f))
        return sw_errorf(SW_ERR_FORMAT, "model metadata '%s.attention.scale' must be positive",
                         c->arch);
    return SW_OK;
}

sw_status model_config_from_gguf(const gguf_file *f, model_config *c) {
    SW_TRY(from_gguf(f, c));
    if (c->assistant)
        return sw_errorf(SW_ERR_UNSUPPORTED, "this is a Gemma 4 assistant (a drafter, "
                         "Gemma4AssistantForCausalLM): it drafts beside its Gemma 4 target "
                         "(--draft-model) and does not run on its own");
    return SW_OK;
}

sw_status model_config_assistant_from_gguf(const gguf_file *f, model_config *c) {
    SW_TRY(from_gguf(f, c));
    if (!c->assistant)
        return sw_errorf(SW_ERR_ARG, "not a Gemma 4 assistant (%s model)", c->arch);
    return SW_OK;
}

bool model_layer_is_local(const model_config *c, uint32_t il) {
    if (il < MODEL_MAX_LAYERS && c->layer[il].local)
        return true;
    return c->swa_pattern != 0 && il % c->swa_pattern < c->swa_pattern - 1;
}

/* Layer il's shape, or an all-zero one (model-wide values) past the end. */
static model_layer_shape layer_of(const model_config *c, uint32_t il) {
    return il < MODEL_MAX_LAYERS ? c->layer[il] : (model_layer_shape){0};
}

uint32_t model_layer_n_head_kv(const model_config *c, uint32_t il) {
    const uint32_t v = layer_of(c, il).n_head_kv;
    return v ? v : c->n_head_kv;
}

uint32_t model_layer_head_dim(const model_config *c, uint32_t il) {
    const uint32_t v = layer_of(c, il).head_dim;
    return v ? v : c->n_embd_head;
}

uint32_t model_layer_n_ff(const model_config *c, uint32_t il) {
    const uint32_t v = layer_of(c, il).n_ff;
    return v ? v : c->n_ff;
}

uint32_t model_attn_group(const model_config *c) {
    uint32_t fewest = c->n_head_kv;
    for (uint32_t il = 0; il < c->n_layer && il < MODEL_MAX_LAYERS; il++)
        fewest = model_layer_n_head_kv(c, il) < fewest ? model_layer_n_head_kv(c, il) : fewest;
    return fewest ? c->n_head / fewest : 1;
}

bool model_layer_owns_kv(const model_config *c, uint32_t il) { return !layer_of(c, il).kv_shared; }

uint32_t model_layer_kv_owner(const model_config *c, uint32_t il) {
    const model_layer_shape s = layer_of(c, il);
    return s.kv_shared ? s.kv_source : il;
}

sw_status model_config_share_kv(model_config *c, uint32_t n_shared) {
    if (n_shared == 0)
        return SW_OK;
    if (n_shared >= c->n_layer || c->n_layer > MODEL_MAX_LAYERS)
        return sw_errorf(SW_ERR_FORMAT, "%u KV-shared layers of %u leave no layer to own a "
                         "cache", n_shared, c->n_layer);
    const uint32_t first = c->n_layer - n_shared;
    for (uint32_t il = first; il < c->n_layer; il++) {
        uint32_t src = first;
        while (src-- > 0 && model_layer_is_local(c, src) != model_layer_is_local(c, il)) {
        }
        if (src >= first)
            return sw_errorf(SW_ERR_FORMAT, "KV-shared layer %u (%s attention) has no earlier "
                             "layer of its type to share with", il,
                             model_layer_is_local(c, il) ? "sliding" : "full");
        c->layer[il].kv_shared = true;
        c->layer[il].kv_source = src;
    }
    return SW_OK;
}

sw_status model_config_window(const model_config *c, uint32_t first, uint32_t end,
                              model_config *out) {
    if (first >= end || end > c->n_layer || end > MODEL_MAX_LAYERS)
        return sw_errorf(SW_ERR_ARG, "layers %u-%u are empty or past the model's %u layers",
                         first, end, c->n_layer);
    for (uint32_t il = first; il < end; il++)
        if (model_layer_kv_owner(c, il) < first)
            return sw_errorf(SW_ERR_ARG, "layer %u reads the KV cache of layer %u, which layers "
                             "%u-%u leave out", il, model_layer_kv_owner(c, il), first, end - 1);
    const uint32_t ple_layers = model_ple_layers(c) ? model_ple_layers(c) - first : 0;
    if (out != c)
        *out = *c;
    out->ple_layers = ple_layers;
    model_layer_shape shapes[MODEL_MAX_LAYERS];
    for (uint32_t il = first; il < end; il++) {
        shapes[il - first] = c->layer[il];
        shapes[il - first].local = model_layer_is_local(c, il);
        if (c->layer[il].kv_shared)
            shapes[il - first].kv_source = c->layer[il].kv_source - first;
    }
    memset(out->layer, 0, sizeof out->layer);
    memcpy(out->layer, shapes, (end - first) * sizeof shapes[0]);
    out->n_layer = end - first;
    out->swa_pattern = 0; /* locality is per layer now */
    return SW_OK;
}

sw_status model_config_check_layers(const model_config *c) {
    if (c->n_layer > MODEL_MAX_LAYERS)
        return sw_errorf(SW_ERR_FORMAT, "%u layers is more than the %u supported", c->n_layer,
                         MODEL_MAX_LAYERS);
    for (uint32_t il = 0; il < c->n_layer; il++) {
        const model_layer_shape *s = &c->layer[il];
        const uint32_t kv = model_layer_n_head_kv(c, il), hd = model_layer_head_dim(c, il);
        if (kv == 0 || kv > c->n_head_kv || c->n_head % kv != 0)
            return sw_errorf(SW_ERR_FORMAT, "layer %u: %u KV heads does not divide its %u "
                             "query heads (or exceeds the model's %u)", il, kv, c->n_head,
                             c->n_head_kv);
        if (hd == 0 || hd % 2 != 0 || hd > c->n_embd_head)
            return sw_errorf(SW_ERR_FORMAT, "layer %u: head size %u is zero, odd or above the "
                             "model's %u", il, hd, c->n_embd_head);
        if (model_layer_n_ff(c, il) == 0 || model_layer_n_ff(c, il) > c->n_ff)
            return sw_errorf(SW_ERR_FORMAT, "layer %u: feed-forward width %u is zero or above "
                             "the model's %u", il, model_layer_n_ff(c, il), c->n_ff);
        if (!s->kv_shared)
            continue;
        const uint32_t src = s->kv_source;
        if (src == MODEL_KV_TARGET && c->assistant)
            continue; /* the target's: checked when the two meet */
        if (src >= il || !model_layer_owns_kv(c, src))
            return sw_errorf(SW_ERR_FORMAT, "layer %u shares the KV cache of layer %u, which is "
                             "not an earlier layer with a cache of its own", il, src);
        if (model_layer_is_local(c, src) != model_layer_is_local(c, il) ||
            model_layer_head_dim(c, src) != hd || model_layer_n_head_kv(c, src) != kv)
            return sw_errorf(SW_ERR_FORMAT, "layer %u shares the KV cache of layer %u, whose "
                             "attention type or head shape differs", il, src);
    }
    return SW_OK;
}
