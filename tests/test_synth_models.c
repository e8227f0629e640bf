/*
 * test_synth_models.c — `spillway synth` end to end on small files: every
 * architecture (Gemma 1, 2, 3) in every GGUF type, opened with our reader
 * and checked tensor by tensor against the catalog shape (names, shapes,
 * types, no output.weight), its config read back equal to the catalog's,
 * its weights bound, and a few tokens run through the engine with finite,
 * varied logits; the same seed giving the same bytes whatever the chunk
 * size; and Hugging Face folders (config.json keys as transformers 5.24
 * writes them, safetensors read back with HF names and shapes, norms
 * without the +1, shards with their index, tokenizer files), whose logits
 * through the engine equal those of the GGUF twin of the same seed.
 *
 * Gemma 4's E2B (5 layers: per-layer embeddings, a full layer of 512-wide
 * heads) is read back layer by layer and run; its KV-shared and expert
 * layers are too large to write here (test_synth checks their lists).
 *
 * Files are small (1 layer of the 2B shapes, 2 of gemma3-270m, 5 of E2B, a
 * 1024-token vocabulary except one full Gemma 3 vocabulary) and go to
 * /dev/shm when it exists.
 */
#define _XOPEN_SOURCE 700 /* mkdtemp, nftw */

#include <ftw.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "format/gguf.h"
#include "format/hf_model.h"
#include "format/json_util.h"
#include "format/safetensors.h"
#include "model/config.h"
#include "model/weights.h"
#include "plan/catalog.h"
#include "quant/types.h"
#include "synth/synth.h"
#include "util/sha256.h"

static char g_dir[256];

static sw_status synth(const char *shape, const char *type, const char *format, uint32_t layers,
                       uint32_t vocab, const char *name, char *path, size_t cap) {
    synth_options o = synth_options_default();
    synth_result r;
    snprintf(path, cap, "%s/%s", g_dir, name);
    o.shape = shape;
    o.type = type;
    o.format = format;
    o.path = path;
    o.n_layers = layers;
    o.n_vocab = vocab;
    o.force = true;
    return synth_write(&o, &r);
}

static model_config catalog_config(const char *shape) {
    plan_model *pm = calloc(1, sizeof *pm);
    model_config c;
    memset(&c, 0, sizeof c);
    if (pm && plan_model_from_catalog(shape, "bf16", pm) == SW_OK)
        c = pm->config;
    free(pm);
    return c;
}

/* ---- GGUF files --------------------------------------------------------------- */

typedef struct want {
    const char *suffix;
    int dims;          /* 1: vector */
    uint64_t ne0, ne1;
} want;

static uint32_t want_type(uint32_t type, const want *w) {
    if (w->dims == 1)
        return SW_TYPE_F32;
    if (type == SW_TYPE_Q4_K && w->ne0 % 256 != 0)
        return SW_TYPE_Q8_0; /* the documented fallback */
    return type;
}

static void check_tensor(const gguf_file *g, const char *name, const want *w, uint32_t type) {
    const gguf_tensor *t = gguf_find_tensor(g, name);
    SW_CHECK(t != NULL, "tensor %s present", name);
    if (t == NULL)
        return;
    SW_CHECK((int)t->n_dims == w->dims && t->ne[0] == w->ne0 &&
             (w->dims == 1 || t->ne[1] == w->ne1),
             "%s shape [%llu, %llu], want [%llu, %llu]", name, (unsigned long long)t->ne[0],
             (unsigned long long)t->ne[1], (unsigned long long)w->ne0,
             (unsigned long long)w->ne1);
    SW_CHECK(t->type == want_type(type, w), "%s type %s, want %s", name, type_name(t->type),
             type_name(want_type(type, w)));
}

/* Every tensor the official shape has, no more (gemma-facts §3.3). */
static void check_tensors(const gguf_file *g, const model_config *c, int family,
                          uint32_t n_layer, uint32_t n_vocab, uint32_t type) {
    uint64_t H = c->n_embd, Q = (uint64_t)c->n_head * c->n_embd_head;
    uint64_t KV = (uint64_t)c->n_head_kv * c->n_embd_head, F = c->n_ff, hd = c->n_embd_head;
    const want layer[] = {
        {"attn_norm", 1, H, 1}, {"attn_q", 2, H, Q}, {"attn_k", 2, H, KV},
        {"attn_v", 2, H, KV}, {"attn_output", 2, Q, H}, {"ffn_norm", 1, H, 1},
        {"ffn_gate", 2, H, F}, {"ffn_up", 2, H, F}, {"ffn_down", 2, F, H},
        {"post_attention_norm", 1, H, 1}, {"post_ffw_norm", 1, H, 1},
        {"attn_q_norm", 1, hd, 1}, {"attn_k_norm", 1, hd, 1}};
    size_t n_per_layer = family == 1 ? 9 : family == 2 ? 11 : 13;
    char name[96];
    for (uint32_t il = 0; il < n_layer; il++)
        for (size_t s = 0; s < n_per_layer; s++) {
            snprintf(name, sizeof name, "blk.%u.%s.weight", il, layer[s].suffix);
            check_tensor(g, name, &layer[s], type);
        }
    want embd = {"", 2, H, n_vocab}, norm = {"", 1, H, 1};
    check_tensor(g, "token_embd.weight", &embd, type);
    check_tensor(g, "output_norm.weight", &norm, type);
    SW_CHECK(gguf_find_tensor(g, "output.weight") == NULL, "LM head tied: no output.weight");
    SW_CHECK(g->n_tensors == n_layer * n_per_layer + 2, "%llu tensors, want %zu",
             (unsigned long long)g->n_tensors, n_layer * n_per_layer + 2);
    const gguf_tensor *t = gguf_find_tensor(g, "blk.0.attn_norm.weight");
    if (t != NULL) {
        const float *w = (const float *)(const void *)t->data;
        SW_CHECK(w[0] >= 0.9f && w[0] <= 1.1f && w[1] != w[0], "GGUF norms hold 1 + w: %g",
                 w[0]);
    }
}

static void check_config(const gguf_file *g, const char *shape, uint32_t n_layer,
                         uint32_t n_vocab) {
    model_config ref = catalog_config(shape), c;
    SW_CHECK_OK(model_config_from_gguf(g, &c));
    SW_CHECK(!strcmp(c.arch, ref.arch) && c.n_layer == n_layer && c.n_vocab == n_vocab &&
             c.n_embd == ref.n_embd && c.n_ff == ref.n_ff && c.n_head == ref.n_head &&
             c.n_head_kv == ref.n_head_kv && c.n_embd_head == ref.n_embd_head &&
             c.n_ctx_train == ref.n_ctx_train, "%s: sizes read back", shape);
    SW_CHECK(c.sliding_window == ref.sliding_window && c.swa_pattern == ref.swa_pattern &&
             c.attn_softcap == ref.attn_softcap && c.final_softcap == ref.final_softcap &&
             c.rope_base_global == ref.rope_base_global &&
             c.rope_scale_global == ref.rope_scale_global &&
             c.rope_base_local == ref.rope_base_local && c.qk_norm == ref.qk_norm &&
             c.post_norms == ref.post_norms && c.norm_eps == ref.norm_eps &&
             c.query_scale == ref.query_scale, "%s: quirks read back", shape);
    model_weights w;
    SW_CHECK_OK(model_weights_bind(g, &c, &w));
    model_weights_free(&w);
    gguf_str s;
    uint64_t n = 0;
    char name[80];
    snprintf(name, sizeof name, "synthetic %s", shape);
    SW_CHECK(gguf_get_str(g, "general.name", &s) == SW_OK && s.len == strlen(name) &&
             !memcmp(s.ptr, name, s.len), "general.name");
    const gguf_value *arr;
    SW_CHECK(gguf_get_array(g, "tokenizer.ggml.tokens", &arr) == SW_OK && arr->arr.n == n_vocab,
             "tokens array of n_vocab entries");
    SW_CHECK(gguf_get_uint(g, "tokenizer.ggml.bos_token_id", &n) == SW_OK && n == 2, "bos 2");
}

/* Runs "hello world" through the engine; logits finite and not all equal. */
static void check_runs(const char *path) {
    sw_model *m = NULL;
    sw_engine *e = NULL;
    sw_session *s = NULL;
    float *logits = NULL;
    int32_t ids[64];
    size_t n = 0;
    SW_CHECK_OK(sw_model_open(path, &m));
    sw_plan_options po = sw_plan_options_default();
    po.n_ctx = 32;
    po.n_threads = 2;
    po.backend = "cpu";
    if (m == NULL || sw_tokenize(m, "hello world", 11, SW_TOK_ADD_BOS, ids, 64, &n) != SW_OK ||
        sw_engine_launch(m, &po, NULL, &e) != SW_OK || sw_session_create(e, &s) != SW_OK) {
        SW_CHECK(0, "%s: engine: %s", path, sw_last_error());
        goto done;
    }
    uint32_t n_vocab = sw_engine_n_vocab(e);
    logits = malloc(n_vocab * sizeof *logits);
    SW_CHECK(ids[0] == 2 && n > 2, "tokenized with BOS");
    SW_CHECK_OK(sw_session_eval(s, ids, n, logits, 0));
    for (int step = 0; step < 2; step++) {
        bool finite = true;
        float lo = logits[0], hi = logits[0];
        int32_t best = 0;
        for (uint32_t i = 0; i < n_vocab; i++) {
            finite &= isfinite(logits[i]) != 0;
            lo = logits[i] < lo ? logits[i] : lo;
            if (logits[i] > hi) {
                hi = logits[i];
                best = (int32_t)i;
            }
        }
        SW_CHECK(finite && hi > lo, "%s step %d: logits finite (%d) and varied [%g, %g]", path,
                 step, finite, lo, hi);
        SW_CHECK_OK(sw_session_eval(s, &best, 1, logits, 0)); /* one greedy decode step */
    }
done:
    free(logits);
    sw_session_destroy(s);
    sw_engine_destroy(e);
    sw_model_close(m);
}

static void test_gguf_models(void) {
    static const struct { const char *shape; uint32_t layers; int family; } shapes[] = {
        {"gemma-2b", 1, 1}, {"gemma2-2b", 1, 2}, {"gemma3-270m", 2, 3}};
    static const struct { const char *name; uint32_t id; } types[] = {
        {"bf16", SW_TYPE_BF16}, {"f16", SW_TYPE_F16}, {"q8_0", SW_TYPE_Q8_0},
        {"q4_k", SW_TYPE_Q4_K}};
    char path[512];
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
            SW_CHECK_OK(synth(shapes[s].shape, types[t].name, "gguf", shapes[s].layers, 1024,
                              "m.gguf", path, sizeof path));
            gguf_file *g = NULL;
            SW_CHECK_OK(gguf_open(path, &g));
            if (g != NULL) {
                model_config c = catalog_config(shapes[s].shape);
                check_tensors(g, &c, shapes[s].family, shapes[s].layers, 1024, types[t].id);
                check_config(g, shapes[s].shape, shapes[s].layers, 1024);
                static const uint64_t file_types[] = {32, 1, 7, 14};
                uint64_t ft = 0;
                SW_CHECK(gguf_get_uint(g, "general.file_type", &ft) == SW_OK &&
                         ft == file_types[t], "file_type %llu", (unsigned long long)ft);
            }
            gguf_close(g);
            /* the engine on one type per shape, and every type of the smallest */
            if (t == 0 || shapes[s].family == 3)
                check_runs(path);
            unlink(path);
        }
    /* the official vocabulary size once: Gemma 3's 262144 tokens */
    SW_CHECK_OK(synth("gemma3-270m", "bf16", "gguf", 1, 0, "v.gguf", path, sizeof path));
    gguf_file *g = NULL;
    SW_CHECK_OK(gguf_open(path, &g));
    if (g != NULL)
        check_config(g, "gemma3-270m", 1, 262144);
    gguf_close(g);
    check_runs(path);
    unlink(path);
}

/* Gemma 4: every layer's shape read back as the catalog has it (head
 * size, KV heads, MLP width, sliding, keys as values, sharing), the
 * model-wide fields, the weights bound and the engine run. */
/* g's config (either container) is the catalog's, layer by layer. */
static void check_gemma4_config(const gguf_file *g, const char *shape, uint32_t n_layer,
                                model_config *c) {
    model_config ref = catalog_config(shape);
    if (model_config_from_gguf(g, c) != SW_OK) {
        SW_CHECK(0, "%s: read back: %s", shape, sw_last_error());
        return;
    }
    SW_CHECK(!strcmp(c->arch, "gemma4") && c->n_layer == n_layer && c->n_embd == ref.n_embd &&
             c->n_head == ref.n_head && c->n_embd_head == ref.n_embd_head &&
             c->n_embd_per_layer == ref.n_embd_per_layer && c->n_expert == ref.n_expert &&
             c->n_expert_used == ref.n_expert_used && c->n_ff_exp == ref.n_ff_exp &&
             c->sliding_window == ref.sliding_window &&
             c->final_softcap == ref.final_softcap &&
             c->rope_base_global == ref.rope_base_global &&
             c->rope_base_local == ref.rope_base_local &&
             c->rope_pairs_global == ref.rope_pairs_global && c->qk_norm && c->v_norm &&
             c->layer_scale && c->query_scale == 1.0f && c->n_ctx_train == ref.n_ctx_train,
             "%s: model-wide fields read back", shape);
    for (uint32_t il = 0; il < n_layer; il++)
        SW_CHECK(model_layer_head_dim(c, il) == model_layer_head_dim(&ref, il) &&
                 model_layer_n_head_kv(c, il) == model_layer_n_head_kv(&ref, il) &&
                 model_layer_n_ff(c, il) == model_layer_n_ff(&ref, il) &&
                 model_layer_is_local(c, il) == model_layer_is_local(&ref, il) &&
                 c->layer[il].k_eq_v == ref.layer[il].k_eq_v &&
                 model_layer_owns_kv(c, il) == model_layer_owns_kv(&ref, il),
                 "%s layer %u: shape read back", shape, il);
}

/* Gemma 4: every layer's shape read back as the catalog has it (head
 * size, KV heads, MLP width, sliding, keys as values, sharing), the
 * model-wide fields, the weights bound and the engine run. */
static void check_gemma4(const char *shape, uint32_t n_layer, const char *type) {
    char path[512];
    SW_CHECK_OK(synth(shape, type, "gguf", n_layer, 1024, "g4.gguf", path, sizeof path));
    gguf_file *g = NULL;
    model_config c;
    SW_CHECK_OK(gguf_open(path, &g));
    if (g == NULL)
        return;
    check_gemma4_config(g, shape, n_layer, &c);
    model_weights w;
    SW_CHECK_OK(model_weights_bind(g, &c, &w));
    model_weights_free(&w);
    const gguf_value *merges;
    SW_CHECK(gguf_get_array(g, "tokenizer.ggml.merges", &merges) == SW_OK && merges->arr.n > 0,
             "a gemma4 vocabulary carries its merge rules");
    gguf_close(g);
    check_runs(path);
    unlink(path);
}

static void test_gemma4(void) {
    check_gemma4("gemma4-e2b", 5, "q4_k"); /* PLE; four sliding layers, one full */
    check_gemma4("gemma4-e2b", 5, "bf16");
    check_gemma4("gemma4-e2b", 5, "q4_k_m"); /* Q6_K LM head, down and V projections */
}

/* ---- determinism ---------------------------------------------------------------- */

static void file_sha(const char *path, char hex[65]) {
    uint8_t d[32];
    hex[0] = '\0';
    if (sha256_file(path, d, NULL, NULL) == SW_OK)
        sha256_hex(d, hex);
}

static void test_determinism(void) {
    char a[65], b[65], path[512];
    synth_options o = synth_options_default();
    synth_result r;
    snprintf(path, sizeof path, "%s/d.gguf", g_dir);
    o.shape = "gemma3-270m";
    o.path = path;
    o.n_layers = 2;
    o.n_vocab = 1024;
    o.force = true;
    static const char *const types[] = {"bf16", "q4_k"};
    for (int t = 0; t < 2; t++) {
        o.type = types[t];
        o.seed = 1;
        o.chunk_bytes = 0;
        SW_CHECK_OK(synth_write(&o, &r));
        file_sha(path, a);
        o.chunk_bytes = 4; /* one row at a time */
        SW_CHECK_OK(synth_write(&o, &r));
        file_sha(path, b);
        SW_CHECK(a[0] && !strcmp(a, b), "%s: chunk size changes nothing (%s vs %s)", types[t],
                 a, b);
        o.chunk_bytes = 3 << 20;
        SW_CHECK_OK(synth_write(&o, &r));
        file_sha(path, b);
        SW_CHECK(!strcmp(a, b), "%s: 3 MiB chunks", types[t]);
        o.seed = 2;
        SW_CHECK_OK(synth_write(&o, &r));
        file_sha(path, b);
        SW_CHECK(strcmp(a, b) != 0, "%s: another seed, other bytes", types[t]);
    }
    unlink(path);
}

/* ---- Hugging Face folders --------------------------------------------------------- */

/* The key set transformers 5.24 writes for each model_type. */
static const char *const keys_common[] = {
    "architectures", "attention_bias", "attention_dropout", "bos_token_id", "dtype",
    "eos_token_id", "head_dim", "hidden_size", "initializer_range", "intermediate_size",
    "max_position_embeddings", "model_type", "num_attention_heads", "num_hidden_layers",
    "num_key_value_heads", "pad_token_id", "rms_norm_eps", "rope_parameters",
    "tie_word_embeddings", "transformers_version", "use_bidirectional_attention", "use_cache",
    "vocab_size"};
static const char *const keys_g23[] = {
    "attn_logit_softcapping", "final_logit_softcapping", "hidden_activation", "layer_types",
    "query_pre_attn_scalar", "sliding_window"};

static int64_t get_int(json_object *o, const char *key) {
    int64_t v = -1;
    jsonu_get_i64(o, key, "config.json", &v);
    return v;
}

static void check_hf_config(const char *dir, const char *shape, int family, uint32_t layers,
                            const char *dtype) {
    char path[600];
    json_object *root = NULL;
    model_config c = catalog_config(shape);
    snprintf(path, sizeof path, "%s/config.json", dir);
    SW_CHECK_OK(jsonu_parse_file(path, JSONU_MAX_FILE_BYTES, &root));
    if (root == NULL)
        return;
    size_t n_want = sizeof keys_common / sizeof keys_common[0];
    for (size_t i = 0; i < n_want; i++)
        SW_CHECK(json_object_object_get_ex(root, keys_common[i], NULL), "%s: key %s", shape,
                 keys_common[i]);
    if (family == 1)
        SW_CHECK(json_object_object_get_ex(root, "hidden_act", NULL), "gemma: hidden_act");
    else
        for (size_t i = 0; i < sizeof keys_g23 / sizeof keys_g23[0]; i++, n_want++)
            SW_CHECK(json_object_object_get_ex(root, keys_g23[i], NULL), "%s: key %s", shape,
                     keys_g23[i]);
    n_want += family == 1 ? 1 : family == 3 ? 1 : 0; /* hidden_act / _sliding_window_pattern */
    SW_CHECK((size_t)json_object_object_length(root) == n_want, "%s: %d keys, want %zu", shape,
             json_object_object_length(root), n_want);
    const char *s = NULL;
    jsonu_get_str(root, "model_type", "config.json", &s, NULL);
    SW_CHECK(s && !strcmp(s, family == 1 ? "gemma" : family == 2 ? "gemma2" : "gemma3_text"),
             "model_type %s", s ? s : "?");
    s = NULL;
    jsonu_get_str(root, "dtype", "config.json", &s, NULL);
    SW_CHECK(s && !strcmp(s, dtype), "dtype %s", s ? s : "?");
    SW_CHECK(get_int(root, "hidden_size") == c.n_embd &&
             get_int(root, "intermediate_size") == c.n_ff &&
             get_int(root, "num_hidden_layers") == layers &&
             get_int(root, "num_attention_heads") == c.n_head &&
             get_int(root, "num_key_value_heads") == c.n_head_kv &&
             get_int(root, "head_dim") == c.n_embd_head &&
             get_int(root, "max_position_embeddings") == c.n_ctx_train &&
             get_int(root, "vocab_size") == 1024, "%s: sizes", shape);
    json_object *lt = NULL, *rope = NULL;
    if (family != 1) {
        SW_CHECK(get_int(root, "sliding_window") == c.sliding_window, "sliding_window");
        SW_CHECK(jsonu_get_arr(root, "layer_types", "config.json", &lt) == SW_OK &&
                 json_object_array_length(lt) == layers, "layer_types per layer");
        for (uint32_t il = 0; lt && il < layers; il++) {
            const char *ty = json_object_get_string(json_object_array_get_idx(lt, il));
            bool local = model_layer_is_local(&c, il);
            SW_CHECK(ty && !strcmp(ty, local ? "sliding_attention" : "full_attention"),
                     "layer %u type %s", il, ty ? ty : "?");
        }
    }
    SW_CHECK(jsonu_get_obj(root, "rope_parameters", "config.json", &rope) == SW_OK &&
             json_object_object_get_ex(rope, family == 3 ? "full_attention" : "rope_theta",
                                       NULL), "rope_parameters layout");
    json_object_put(root);
}

/* Every HF tensor with its [out, in] shape; norms without the +1. */
static void check_hf_weights(const char *dir, int family, uint32_t layers, st_dtype dtype,
                             const char *shape) {
    model_config c = catalog_config(shape);
    uint64_t H = c.n_embd, Q = (uint64_t)c.n_head * c.n_embd_head;
    uint64_t KV = (uint64_t)c.n_head_kv * c.n_embd_head, F = c.n_ff;
    char path[600], name[128];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    st_file *f = NULL;
    SW_CHECK_OK(st_open(path, &f));
    if (f == NULL)
        return;
    const struct { const char *n; uint64_t s0, s1; int fam; } spec[] = {
        {"self_attn.q_proj", Q, H, 7}, {"self_attn.k_proj", KV, H, 7},
        {"self_attn.v_proj", KV, H, 7}, {"self_attn.o_proj", H, Q, 7},
        {"mlp.gate_proj", F, H, 7}, {"mlp.up_proj", F, H, 7}, {"mlp.down_proj", H, F, 7},
        {"input_layernorm", H, 0, 7}, {"post_attention_layernorm", H, 0, 7},
        {"pre_feedforward_layernorm", H, 0, 6}, {"post_feedforward_layernorm", H, 0, 6},
        {"self_attn.q_norm", c.n_embd_head, 0, 4}, {"self_attn.k_norm", c.n_embd_head, 0, 4}};
    uint64_t n_want = 2;
    for (uint32_t il = 0; il < layers; il++)
        for (size_t k = 0; k < sizeof spec / sizeof spec[0]; k++) {
            if (!(spec[k].fam & (1 << (family - 1))))
                continue;
            n_want++;
            snprintf(name, sizeof name, "model.layers.%u.%s.weight", il, spec[k].n);
            const st_tensor *t = st_find(f, name);
            SW_CHECK(t && t->dtype == dtype && t->n_dims == (spec[k].s1 ? 2u : 1u) &&
                     t->shape[0] == spec[k].s0 && (!spec[k].s1 || t->shape[1] == spec[k].s1),
                     "%s", name);
        }
    const st_tensor *e = st_find(f, "model.embed_tokens.weight");
    const st_tensor *nrm = st_find(f, "model.norm.weight");
    SW_CHECK(e && e->shape[0] == 1024 && e->shape[1] == H, "embed_tokens [vocab, H]");
    SW_CHECK(nrm && nrm->n_dims == 1 && nrm->shape[0] == H, "model.norm");
    SW_CHECK(f->n_tensors == n_want, "%llu tensors, want %llu (no lm_head)",
             (unsigned long long)f->n_tensors, (unsigned long long)n_want);
    if (nrm && dtype == ST_BF16) {
        const uint8_t *p = nrm->data;
        float w0 = 0, w1 = 0;
        uint32_t b0 = (uint32_t)(p[0] | p[1] << 8) << 16, b1 = (uint32_t)(p[2] | p[3] << 8) << 16;
        memcpy(&w0, &b0, 4);
        memcpy(&w1, &b1, 4);
        SW_CHECK(fabsf(w0) <= 0.1f && fabsf(w1) <= 0.1f && w0 != w1,
                 "HF norms hold w, not 1 + w: %g %g", w0, w1);
    }
    st_close(f);
}

static void check_hf_tokenizer(const char *dir) {
    char path[600];
    json_object *root = NULL, *model = NULL, *vocab = NULL, *merges = NULL, *added = NULL;
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    SW_CHECK_OK(jsonu_parse_file(path, JSONU_MAX_FILE_BYTES, &root));
    if (root == NULL)
        return;
    SW_CHECK(jsonu_get_obj(root, "model", "tokenizer.json", &model) == SW_OK &&
             jsonu_get_obj(model, "vocab", "tokenizer.json", &vocab) == SW_OK &&
             jsonu_get_arr(model, "merges", "tokenizer.json", &merges) == SW_OK &&
             jsonu_get_arr(root, "added_tokens", "tokenizer.json", &added) == SW_OK,
             "tokenizer.json layout");
    if (vocab && merges && added) {
        SW_CHECK(json_object_object_length(vocab) == 1024, "vocab of 1024");
        SW_CHECK(json_object_array_length(merges) >= 1024 - 460, "a merge per merged piece");
        json_object *id = NULL;
        SW_CHECK(json_object_object_get_ex(vocab, "<0x41>", &id) && json_object_get_int(id) > 107,
                 "byte tokens in the vocabulary");
        json_object *m0 = json_object_array_get_idx(merges, 0);
        SW_CHECK(json_object_is_type(m0, json_type_array) && json_object_array_length(m0) == 2,
                 "merges as [left, right] pairs");
        SW_CHECK(json_object_array_length(added) == 107, "ids 0-106: control tokens, turn markers");
    }
    json_object_put(root);
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    SW_CHECK_OK(jsonu_parse_file(path, JSONU_MAX_FILE_BYTES, &root));
    bool add_bos = false;
    const char *bos = NULL;
    SW_CHECK(root && jsonu_get_bool(root, "add_bos_token", "tc", &add_bos) == SW_OK && add_bos &&
             jsonu_get_str(root, "bos_token", "tc", &bos, NULL) == SW_OK && !strcmp(bos, "<bos>"),
             "tokenizer_config.json: add_bos_token, bos_token");
    json_object_put(root);
}

/* A sharded folder: every shard holds what the index says. */
static void check_hf_shards(const char *dir) {
    char path[600];
    json_object *root = NULL, *meta = NULL, *map = NULL;
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    SW_CHECK_OK(jsonu_parse_file(path, JSONU_MAX_FILE_BYTES, &root));
    if (root == NULL || jsonu_get_obj(root, "metadata", "index", &meta) != SW_OK ||
        jsonu_get_obj(root, "weight_map", "index", &map) != SW_OK) {
        SW_CHECK(0, "index layout");
        json_object_put(root);
        return;
    }
    int64_t total = -1, sum = 0, n_found = 0;
    jsonu_get_i64(meta, "total_size", "index", &total);
    json_object_object_foreach(map, name, file) {
        st_file *f = NULL;
        snprintf(path, sizeof path, "%s/%s", dir, json_object_get_string(file));
        if (st_open(path, &f) == SW_OK) {
            const st_tensor *t = st_find(f, name);
            n_found += t != NULL;
            sum += t ? (int64_t)t->n_bytes : 0;
        }
        st_close(f);
    }
    SW_CHECK(n_found == json_object_object_length(map) && sum == total,
             "index: %lld of %d tensors found, %lld of %lld bytes", (long long)n_found,
             json_object_object_length(map), (long long)sum, (long long)total);
    unsigned k = 0, n = 0;
    json_object *first = NULL;
    json_object_object_get_ex(map, "model.embed_tokens.weight", &first);
    SW_CHECK(first && sscanf(json_object_get_string(first), "model-%5u-of-%5u.safetensors", &k,
                             &n) == 2 && k == 1 && n > 1, "shards named model-0000k-of-0000n");
    for (unsigned i = 1; i <= n && n < 100; i++) {
        snprintf(path, sizeof path, "%s/model-%05u-of-%05u.safetensors", dir, i, n);
        SW_CHECK(access(path, F_OK) == 0, "shard %u of %u", i, n);
    }
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    SW_CHECK(access(path, F_OK) != 0, "no model.safetensors beside shards");
    json_object_put(root);
}

/* The GGUF and HF outputs of one seed hold the same matrix bytes. */
static void check_twin(const char *hf_dir, const char *gguf_path) {
    char path[600];
    st_file *f = NULL;
    gguf_file *g = NULL;
    snprintf(path, sizeof path, "%s/model.safetensors", hf_dir);
    if (st_open(path, &f) == SW_OK && gguf_open(gguf_path, &g) == SW_OK) {
        const st_tensor *a = st_find(f, "model.layers.0.mlp.down_proj.weight");
        const gguf_tensor *b = gguf_find_tensor(g, "blk.0.ffn_down.weight");
        SW_CHECK(a && b && a->n_bytes == b->n_bytes && !memcmp(a->data, b->data, a->n_bytes),
                 "HF and GGUF twins hold the same ffn_down bytes");
    } else {
        SW_CHECK(0, "twin files open: %s", sw_last_error());
    }
    st_close(f);
    gguf_close(g);
}

/* Last-token logits of ids through the CPU engine, or NULL. */
static float *eval_logits(const char *path, const int32_t *ids, size_t n, uint32_t *n_vocab) {
    sw_model *m = NULL;
    sw_engine *e = NULL;
    sw_session *s = NULL;
    float *lg = NULL;
    sw_plan_options po = sw_plan_options_default();
    po.backend = "cpu";
    po.n_threads = 2;
    po.n_ctx = 32;
    if (sw_model_open(path, &m) == SW_OK && sw_engine_launch(m, &po, NULL, &e) == SW_OK &&
        sw_session_create(e, &s) == SW_OK) {
        *n_vocab = sw_engine_n_vocab(e);
        lg = malloc(*n_vocab * sizeof *lg);
        if (lg && sw_session_eval(s, ids, n, lg, 0) != SW_OK) {
            free(lg);
            lg = NULL;
        }
    }
    if (lg == NULL)
        SW_CHECK(0, "%s: %s", path, sw_last_error());
    sw_session_destroy(s);
    sw_engine_destroy(e);
    sw_model_close(m);
    return lg;
}

/* One seed, two containers, one model: the HF folder read through
 * src/format/hf_model.c gives the GGUF file's logits bit for bit (bf16
 * matrices are the same bytes; 1 + w is exact in f32 for bf16 w). */
static void check_twin_logits(const char *hf_dir, const char *gguf_path) {
    static const int32_t ids[] = {2, 300, 401, 502, 7, 1000};
    uint32_t na = 0, nb = 0;
    float *a = eval_logits(gguf_path, ids, 6, &na), *b = eval_logits(hf_dir, ids, 6, &nb);
    SW_CHECK(a && b && na == nb && !memcmp(a, b, na * sizeof *a),
             "GGUF and HF twins give identical logits (%s)", hf_dir);
    free(a);
    free(b);
}

static int rm_entry(const char *p, const struct stat *s, int flag, struct FTW *f) {
    (void)s, (void)flag, (void)f;
    return remove(p);
}

static void test_hf(void) {
    static const struct { const char *shape; int family; uint32_t layers; } shapes[] = {
        {"gemma-2b", 1, 1}, {"gemma2-2b", 2, 1}, {"gemma3-270m", 3, 2}};
    char dir[512], gpath[512];
    for (size_t s = 0; s < 3; s++)
        for (int t = 0; t < 2; t++) {
            if ((s == 0 && t == 1) || (s == 1 && t == 0))
                continue; /* the big shapes in one dtype each: gemma bf16, gemma2 f16 */
            const char *type = t ? "f16" : "bf16";
            SW_CHECK_OK(synth(shapes[s].shape, type, "hf", shapes[s].layers, 1024, "hf", dir,
                              sizeof dir));
            check_hf_config(dir, shapes[s].shape, shapes[s].family, shapes[s].layers,
                            t ? "float16" : "bfloat16");
            check_hf_weights(dir, shapes[s].family, shapes[s].layers, t ? ST_F16 : ST_BF16,
                             shapes[s].shape);
            if (t == 0 || s == 1) { /* bf16 twins (and gemma2's f16) through the engine */
                SW_CHECK_OK(synth(shapes[s].shape, type, "gguf", shapes[s].layers, 1024,
                                  "twin.gguf", gpath, sizeof gpath));
                if (s == 2)
                    check_twin(dir, gpath);
                check_twin_logits(dir, gpath);
                unlink(gpath);
            }
            if (s == 2 && t == 0)
                check_hf_tokenizer(dir);
            nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
        }
    /* Gemma 4 (E2B, 5 layers: PLE, a full layer): the config's per-layer
     * shape and the twins' logits; a folder must end on a full layer */
    SW_CHECK_OK(synth("gemma4-e2b", "bf16", "hf", 5, 1024, "hf4", dir, sizeof dir));
    SW_CHECK_OK(synth("gemma4-e2b", "bf16", "gguf", 5, 1024, "twin4.gguf", gpath, sizeof gpath));
    check_twin_logits(dir, gpath);
    gguf_file *g4 = NULL;
    hf_model_info info;
    model_config c4;
    SW_CHECK_OK(hf_model_open(dir, &g4, &info));
    if (g4 != NULL)
        check_gemma4_config(g4, "gemma4-e2b", 5, &c4);
    gguf_close(g4);
    unlink(gpath);
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    SW_CHECK(synth("gemma4-e2b", "bf16", "hf", 6, 1024, "hf6", dir, sizeof dir) == SW_ERR_ARG,
             "a Gemma 4 folder ending on a sliding layer is refused");
    /* shards: 5 MB per file splits gemma3-270m's 2 layers (~22 MB) */
    synth_options o = synth_options_default();
    synth_result r;
    snprintf(dir, sizeof dir, "%s/sharded", g_dir);
    o.shape = "gemma3-270m";
    o.type = "bf16";
    o.format = "hf";
    o.path = dir;
    o.n_layers = 2;
    o.n_vocab = 1024;
    o.shard_bytes = 5000000;
    SW_CHECK_OK(synth_write(&o, &r));
    check_hf_shards(dir);
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int main(void) {
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(g_dir, sizeof g_dir, "%s/sw_synth_models_XXXXXX", base);
    if (mkdtemp(g_dir) == NULL) {
        SW_CHECK(0, "mkdtemp in %s failed", base);
        return sw_check_finish("test_synth_models");
    }
    test_gguf_models();
    test_gemma4();
    test_determinism();
    test_hf();
    nftw(g_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return sw_check_finish("test_synth_models");
}
