/*
 * test_gemma4_bad.c — Gemma 4 files that lie: the tiny Gemma 4 GGUF
 * files with one value patched in memory (a metadata value, a tensor's
 * shape), each refused with SW_ERR_FORMAT and a message that names what is
 * wrong, when the config is read or the weights are bound; never a crash
 * (the sanitizer build runs this too).
 *
 * usage: test_gemma4_bad DIR   (the folder of tests/data/tiny)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "format/gguf.h"
#include "model/config.h"
#include "model/weights.h"

typedef struct blob {
    uint8_t *data;
    size_t len;
} blob;

static blob read_all(const char *dir, const char *name) {
    char path[1024];
    blob b = {0};
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return b;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        b.data = n > 0 ? malloc((size_t)n) : NULL;
        if (b.data != NULL && fseek(f, 0, SEEK_SET) == 0 &&
            fread(b.data, 1, (size_t)n, f) == (size_t)n)
            b.len = (size_t)n;
    }
    fclose(f);
    return b;
}

/* The byte after the length-prefixed string s (a key or a tensor name). */
static uint8_t *after(blob *b, const char *s) {
    const size_t n = strlen(s);
    for (size_t i = 8; i + n <= b->len; i++)
        if (!memcmp(b->data + i, s, n) && b->data[i - 8] == n && b->data[i - 7] == 0)
            return b->data + i + n;
    return NULL;
}

/* The scalar value of key `key` (after its u32 type). */
static void patch_u32(blob *b, const char *key, uint32_t v) {
    uint8_t *p = after(b, key);
    SW_CHECK(p != NULL, "key %s not found", key);
    if (p != NULL)
        memcpy(p + 4, &v, 4);
}

/* Bool i of the bool array under key (after type, element type, count). */
static void patch_bool(blob *b, const char *key, uint32_t i, uint8_t v) {
    uint8_t *p = after(b, key);
    SW_CHECK(p != NULL, "key %s not found", key);
    if (p != NULL)
        p[4 + 4 + 8 + i] = v;
}

/* Dimension d of tensor `name`'s info (after n_dims). */
static void patch_dim(blob *b, const char *name, uint32_t d, uint64_t v) {
    uint8_t *p = after(b, name);
    SW_CHECK(p != NULL, "tensor %s not found", name);
    if (p != NULL)
        memcpy(p + 4 + 8 * d, &v, 8);
}

typedef void (*patch_fn)(blob *b);

/* Applies fix to a copy of `file`, then reads the config and binds the
 * weights: one of them must fail with SW_ERR_FORMAT naming `fragment`. */
static void expect_bad(const char *dir, const char *file, const char *what, patch_fn fix,
                       const char *fragment) {
    blob b = read_all(dir, file);
    SW_CHECK(b.len > 0, "%s: cannot read %s/%s", what, dir, file);
    if (b.len == 0)
        return;
    fix(&b);
    gguf_file *g = NULL;
    model_config *c = calloc(1, sizeof *c);
    model_weights w;
    memset(&w, 0, sizeof w);
    sw_status st = gguf_open_memory(b.data, b.len, &g);
    if (st == SW_OK && c != NULL && (st = model_config_from_gguf(g, c)) == SW_OK)
        st = model_weights_bind(g, c, &w);
    SW_CHECK(st == SW_ERR_FORMAT && strstr(sw_last_error(), fragment) != NULL,
             "%s: status %d, '%s' (want '%s')", what, (int)st, st ? sw_last_error() : "",
             fragment);
    model_weights_free(&w);
    gguf_close(g);
    free(c);
    free(b.data);
}

static void no_patch(blob *b) { (void)b; }
static void experts_5(blob *b) { patch_u32(b, "gemma4.expert_count", 5); }
static void used_0(blob *b) { patch_u32(b, "gemma4.expert_used_count", 0); }
static void used_9(blob *b) { patch_u32(b, "gemma4.expert_used_count", 9); }
static void all_shared(blob *b) { patch_u32(b, "gemma4.attention.shared_kv_layers", 5); }
static void shared_4(blob *b) { patch_u32(b, "gemma4.attention.shared_kv_layers", 4); }
static void ple_short(blob *b) { patch_dim(b, "per_layer_token_embd.weight", 0, 32); }
static void ple_wide(blob *b) { patch_u32(b, "gemma4.embedding_length_per_layer_input", 16); }
static void no_sliding(blob *b) {
    /* the shared sliding layer 3 would read a sliding layer before it: none */
    patch_bool(b, "gemma4.attention.sliding_window_pattern", 0, 0);
    patch_bool(b, "gemma4.attention.sliding_window_pattern", 1, 0);
}
static void gate_up_rows(blob *b) { patch_dim(b, "blk.0.ffn_gate_up_exps.weight", 1, 16); }

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s TINY_DIR\n", argv[0]);
        return 2;
    }
    const char *d = argv[1];
    /* the files as made must pass: the patches alone make them bad */
    blob ok = read_all(d, "gemma4-moe.gguf");
    free(ok.data);
    expect_bad(d, "gemma4-moe.gguf", "5 experts declared, 4 stored", experts_5,
               "ffn_gate_inp.weight");
    expect_bad(d, "gemma4-moe.gguf", "0 experts per token", used_0, "used per token");
    expect_bad(d, "gemma4-moe.gguf", "9 of 4 experts per token", used_9, "used per token");
    expect_bad(d, "gemma4-moe.gguf", "an expert tensor of the wrong shape", gate_up_rows,
               "ffn_gate_up_exps");
    expect_bad(d, "gemma4-ple.gguf", "every layer KV-shared", all_shared, "own a cache");
    expect_bad(d, "gemma4-ple.gguf", "a full layer sharing with no full layer before it",
               shared_4, "full attention");
    expect_bad(d, "gemma4-ple.gguf", "a sliding layer sharing with no sliding one", no_sliding,
               "sliding attention");
    expect_bad(d, "gemma4-ple.gguf", "a per-layer table of the wrong shape", ple_short,
               "per_layer_token_embd");
    expect_bad(d, "gemma4-ple.gguf", "a per-layer width the tensors do not have", ple_wide,
               "per_layer");
    /* and the unpatched files read and bind */
    const char *good[] = {"gemma4-ple.gguf", "gemma4-kv.gguf", "gemma4-moe.gguf"};
    for (int i = 0; i < 3; i++) {
        blob b = read_all(d, good[i]);
        no_patch(&b);
        gguf_file *g = NULL;
        model_config *c = calloc(1, sizeof *c);
        model_weights w;
        memset(&w, 0, sizeof w);
        SW_CHECK_OK(gguf_open_memory(b.data, b.len, &g));
        if (g != NULL && c != NULL) {
            SW_CHECK_OK(model_config_from_gguf(g, c));
            SW_CHECK_OK(model_weights_bind(g, c, &w));
        }
        model_weights_free(&w);
        gguf_close(g);
        free(c);
        free(b.data);
    }
    return sw_check_finish("test_gemma4_bad");
}
