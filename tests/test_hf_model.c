/*
 * test_hf_model.c — Hugging Face folders as models: each tiny random
 * Gemma 1/2/3/4 saved by transformers (bf16 safetensors, tests/data/tiny/
 * ARCH-hf) against its GGUF twin (all-F32, tests/data/tiny/ARCH.gguf,
 * written by tools/golden/make_tiny_models.py from the very same numbers).
 *
 * Checks, per architecture: the configuration read from config.json
 * equals the one read from GGUF metadata field by field; the same tensor
 * names exist; every tensor dequantizes to identical floats (bf16 values
 * are exact in f32, and norms become 1 + w in both); the engine's logits
 * over a prompt are bit-identical between the two. Then broken folders:
 * each must fail with the right code and a message, without a leak.
 * (Golden agreement with transformers itself is forward_ARCH_hf.)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "format/hf_model.h"
#include "model/config.h"
#include "model/model_internal.h"

static void check_configs(const sw_model *hf, const sw_model *gg, const char *arch) {
    model_config a, b;
    SW_CHECK_OK(model_config_from_gguf(hf->gguf, &a));
    SW_CHECK_OK(model_config_from_gguf(gg->gguf, &b));
#define SAME(field) SW_CHECK(a.field == b.field, "%s: config %s differs", arch, #field)
    SAME(n_layer); SAME(n_embd); SAME(n_ff); SAME(n_head); SAME(n_head_kv);
    SAME(n_embd_head); SAME(n_vocab); SAME(n_ctx_train); SAME(norm_eps);
    SAME(embd_scale); SAME(attn_softcap); SAME(final_softcap); SAME(sliding_window);
    SAME(swa_pattern); SAME(rope_base_global); SAME(rope_scale_global);
    SAME(rope_base_local); SAME(rope_scale_local); SAME(qk_norm); SAME(post_norms);
#undef SAME
    /* HF states 1/sqrt(query_pre_attn_scalar) computed in double; GGUF's
     * depth rule computes it in float: equal to the last bit or one ulp. */
    SW_CHECK(fabsf(a.query_scale - b.query_scale) <= 1e-7f * b.query_scale,
             "%s: query scale %.9g vs %.9g", arch, a.query_scale, b.query_scale);
}

static void check_tensors(const sw_model *hf, const sw_model *gg, const char *arch) {
    size_t n = sw_model_tensor_count(gg);
    SW_CHECK(sw_model_tensor_count(hf) == n, "%s: %zu tensors vs %zu", arch,
             sw_model_tensor_count(hf), n);
    for (size_t i = 0; i < n; i++) {
        sw_tensor_info tg, th;
        SW_CHECK_OK(sw_model_tensor_at(gg, i, &tg));
        const gguf_tensor *t = gguf_find_tensor(hf->gguf, tg.name);
        SW_CHECK(t != NULL, "%s: HF folder lacks %s", arch, tg.name);
        if (t == NULL)
            continue;
        size_t hi = (size_t)(t - hf->gguf->tensors);
        SW_CHECK_OK(sw_model_tensor_at(hf, hi, &th));
        SW_CHECK(th.ne[0] == tg.ne[0] && th.ne[1] == tg.ne[1], "%s: %s shape differs", arch,
                 tg.name);
        float *x = malloc(tg.n_elements * sizeof *x), *y = malloc(tg.n_elements * sizeof *y);
        SW_CHECK_OK(sw_model_tensor_to_f32(gg, i, x));
        SW_CHECK_OK(sw_model_tensor_to_f32(hf, hi, y));
        SW_CHECK(memcmp(x, y, tg.n_elements * sizeof *x) == 0, "%s: %s values differ", arch,
                 tg.name);
        free(x);
        free(y);
    }
}

/* Logits of a fixed prompt through the engine (2 threads, chunks of 5). */
static float *run_logits(const sw_model *m, const int32_t *ids, size_t n, uint32_t *n_vocab) {
    sw_plan_options opt = sw_plan_options_default();
    opt.n_threads = 2;
    opt.n_ctx = 64;
    opt.n_batch = 5;
    sw_engine *e = NULL;
    sw_session *s = NULL;
    float *logits = NULL;
    SW_CHECK_OK(sw_engine_launch(m, &opt, NULL, &e));
    if (e == NULL)
        return NULL;
    *n_vocab = sw_engine_n_vocab(e);
    logits = malloc(n * *n_vocab * sizeof *logits);
    SW_CHECK_OK(sw_session_create(e, &s));
    SW_CHECK_OK(sw_session_eval(s, ids, n, logits, 1));
    sw_session_destroy(s);
    sw_engine_destroy(e);
    return logits;
}

static void check_arch(const char *arch) {
    char gpath[64], hpath[64];
    snprintf(gpath, sizeof gpath, "tiny/%s.gguf", arch);
    snprintf(hpath, sizeof hpath, "tiny/%s-hf", arch);
    sw_model *gg = NULL, *hf = NULL;
    SW_CHECK_OK(sw_model_open(sw_test_data(gpath), &gg));
    SW_CHECK_OK(sw_model_open(sw_test_data(hpath), &hf));
    if (gg == NULL || hf == NULL)
        goto done;
    sw_model_summary s;
    SW_CHECK_OK(sw_model_get_summary(hf, &s));
    SW_CHECK(!strcmp(s.container, "safetensors"), "%s: container %s", arch, s.container);
    check_configs(hf, gg, arch);
    check_tensors(hf, gg, arch);
    int32_t ids[23];
    for (int i = 0; i < 23; i++)
        ids[i] = (int32_t)((i * 37 + 11) % 512);
    ids[0] = 2;
    uint32_t va = 0, vb = 0;
    float *a = run_logits(gg, ids, 23, &va), *b = run_logits(hf, ids, 23, &vb);
    if (a && b && va == vb) {
        float max_diff = 0;
        for (size_t i = 0; i < 23 * (size_t)va; i++)
            max_diff = fmaxf(max_diff, fabsf(a[i] - b[i]));
        SW_CHECK(max_diff == 0.0f, "%s: HF vs GGUF logits differ by %g", arch, max_diff);
        printf("%s: HF folder vs GGUF: %zu tensors identical, logits max |diff| %g\n", arch,
               sw_model_tensor_count(gg), max_diff);
    }
    free(a);
    free(b);
done:
    sw_model_close(gg);
    sw_model_close(hf);
}

/* ---- broken folders ------------------------------------------------------------ */

static char g_tmp[256];

static void write_file(const char *name, const char *text) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", g_tmp, name);
    FILE *f = fopen(path, "wb");
    SW_CHECK(f != NULL, "cannot write %s", path);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* Copies ARCH's safetensors file into the temp folder as `as`. */
static void link_weights(const char *arch, const char *as) {
    char dst[512], rel[64];
    snprintf(rel, sizeof rel, "tiny/%s-hf/model.safetensors", arch);
    snprintf(dst, sizeof dst, "%s/%s", g_tmp, as);
    FILE *in = fopen(sw_test_data(rel), "rb"), *out = fopen(dst, "wb");
    SW_CHECK(in != NULL && out != NULL, "copy %s to %s", rel, dst);
    char buf[65536];
    size_t n;
    while (in && out && (n = fread(buf, 1, sizeof buf, in)) > 0)
        SW_CHECK(fwrite(buf, 1, n, out) == n, "write %s", dst);
    if (in)
        fclose(in);
    if (out)
        fclose(out);
}

static void clear_tmp(void) {
    const char *names[] = {"config.json", "model.safetensors", "model.safetensors.index.json",
                           "a.safetensors", "tokenizer.json"};
    char path[512];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", g_tmp, names[i]);
        unlink(path);
    }
}

static void expect_fail(const char *label, sw_status want, const char *needle) {
    sw_model *m = NULL;
    sw_status st = sw_model_open(g_tmp, &m);
    SW_CHECK(st == want, "%s: got %s, want %s (%s)", label, sw_status_name(st),
             sw_status_name(want), sw_last_error());
    SW_CHECK(m == NULL, "%s: a model was returned", label);
    SW_CHECK(needle == NULL || strstr(sw_last_error(), needle) != NULL,
             "%s: message '%s' lacks '%s'", label, sw_last_error(), needle);
    sw_model_close(m);
}

static const char *GOOD_CONFIG =
    "{\"architectures\":[\"GemmaForCausalLM\"],\"model_type\":\"gemma\",\"head_dim\":16,"
    "\"hidden_size\":64,\"intermediate_size\":128,\"num_attention_heads\":4,"
    "\"num_hidden_layers\":3,\"num_key_value_heads\":1,\"vocab_size\":512,"
    "\"max_position_embeddings\":256,\"rms_norm_eps\":1e-06}";

static void check_bad_folders(void) {
    snprintf(g_tmp, sizeof g_tmp, "/tmp/sw_hf_test_%d", (int)getpid());
    mkdir(g_tmp, 0700);
    clear_tmp();
    expect_fail("empty folder", SW_ERR_IO, "config.json");
    write_file("config.json", GOOD_CONFIG);
    expect_fail("no weights", SW_ERR_IO, "model.safetensors");
    link_weights("gemma1", "model.safetensors");
    sw_model *m = NULL;
    SW_CHECK_OK(sw_model_open(g_tmp, &m)); /* the minimal config is enough */
    sw_model_close(m);
    static const struct { const char *label, *config; sw_status want; const char *needle; }
    cases[] = {
        {"not JSON", "{\"architectures\": [", SW_ERR_FORMAT, "JSON"},
        {"top-level array", "[1,2]", SW_ERR_FORMAT, "object"},
        {"llama", "{\"architectures\":[\"LlamaForCausalLM\"]}", SW_ERR_UNSUPPORTED,
         "LlamaForCausalLM"},
        {"string size", "{\"architectures\":[\"GemmaForCausalLM\"],\"hidden_size\":\"64\"}",
         SW_ERR_FORMAT, "hidden_size"},
        {"negative layers", "{\"model_type\":\"gemma\",\"num_hidden_layers\":-3}",
         SW_ERR_FORMAT, "num_hidden_layers"},
        {"activation", "{\"model_type\":\"gemma2\",\"hidden_activation\":\"silu\"}",
         SW_ERR_UNSUPPORTED, "silu"},
        {"rope yarn", "{\"model_type\":\"gemma\",\"rope_parameters\":{\"rope_type\":\"yarn\","
         "\"rope_theta\":10000}}", SW_ERR_UNSUPPORTED, "yarn"},
        {"layer types", "{\"model_type\":\"gemma2\",\"num_hidden_layers\":3,\"layer_types\":"
         "[\"full_attention\",\"sliding_attention\",\"full_attention\"]}", SW_ERR_UNSUPPORTED,
         "layer_types"},
        {"heads", "{\"model_type\":\"gemma\",\"num_attention_heads\":4,"
         "\"num_key_value_heads\":3}", SW_ERR_FORMAT, "num_key_value_heads"},
        {"bias", "{\"model_type\":\"gemma\",\"attention_bias\":true}", SW_ERR_UNSUPPORTED,
         "attention_bias"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_file("config.json", cases[i].config);
        expect_fail(cases[i].label, cases[i].want, cases[i].needle);
    }
    write_file("config.json", GOOD_CONFIG);
    write_file("model.safetensors.index.json", "{\"weight_map\":{\"model.norm.weight\":"
               "\"../x.safetensors\"}}");
    expect_fail("index escapes the folder", SW_ERR_FORMAT, "weight_map");
    write_file("model.safetensors.index.json", "{\"weight_map\":{\"model.nope.weight\":"
               "\"a.safetensors\"}}");
    link_weights("gemma1", "a.safetensors");
    expect_fail("index names a missing tensor", SW_ERR_FORMAT, "model.nope.weight");
    write_file("model.safetensors.index.json", "{\"weight_map\":{\"model.norm.weight\":"
               "\"b.safetensors\"}}");
    expect_fail("index names a missing file", SW_ERR_IO, "b.safetensors");
    write_file("model.safetensors.index.json", "{\"metadata\":{}}");
    expect_fail("index without weight_map", SW_ERR_FORMAT, "weight_map");
    write_file("model.safetensors.index.json", "{\"weight_map\":{\"model.norm.weight\":"
               "\"a.safetensors\"}}");
    SW_CHECK_OK(sw_model_open(g_tmp, &m)); /* a one-shard index */
    sw_model_close(m);
    write_file("model.safetensors.index.json", "");
    expect_fail("empty index", SW_ERR_FORMAT, NULL);
    clear_tmp();
    write_file("config.json", "{\"model_type\":\"gemma\",\"tie_word_embeddings\":false,"
               "\"head_dim\":16,\"hidden_size\":64,\"intermediate_size\":128,"
               "\"num_attention_heads\":4,\"num_hidden_layers\":3,\"num_key_value_heads\":1,"
               "\"vocab_size\":512}");
    link_weights("gemma1", "model.safetensors");
    expect_fail("untied without lm_head", SW_ERR_FORMAT, "lm_head");
    clear_tmp();
    rmdir(g_tmp);
}

int main(void) {
    check_arch("gemma1");
    check_arch("gemma2");
    check_arch("gemma3");
    check_arch("gemma4-ple"); /* released checkpoints' config layout */
    check_arch("gemma4-kv");  /* transformers 5.2x's per_layer_config */
    check_arch("gemma4-moe");
    check_bad_folders();
    return sw_check_finish("test_hf_model");
}
