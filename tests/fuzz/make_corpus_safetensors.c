/*
 * make_corpus_safetensors.c — writes the safetensors fuzz seed corpus
 * (tests/fuzz/corpus_safetensors).
 *
 *   st_make_corpus DIR
 *
 * Seeds are small files from safetensors_build: valid ones (every dtype,
 * a Hugging Face-like BF16 checkpoint with __metadata__, scalars and
 * zero-size tensors, escaped and non-ASCII names, an empty header) and a
 * few near-misses (duplicate name, hole, misalignment, bad escape) whose
 * neighbours the fuzzer explores. Deterministic: rerunning it rewrites
 * identical bytes. Files named regress_* in that folder come from fuzzer
 * runs (inputs that once got a wrong answer) and are kept by hand.
 */
#include <stdio.h>

#include "safetensors_build.h"

static int save(const char *dir, const char *name, sb *b) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *fp = fopen(path, "wb");
    int ok = fp != NULL && !b->failed && fwrite(b->data, 1, b->len, fp) == b->len;
    if (fp != NULL && fclose(fp) != 0)
        ok = 0;
    if (!ok)
        fprintf(stderr, "st_make_corpus: cannot write %s\n", path);
    sb_free(b);
    return ok ? 0 : 1;
}

static void all_dtypes(sb *b) {
    static const char *const names[] = {"F64", "I64", "U64", "F32", "I32", "U32", "F16",
                                        "BF16", "I16", "U16", "I8", "U8", "BOOL",
                                        "F8_E4M3", "F8_E5M2"};
    static const uint32_t sizes[] = {8, 8, 8, 4, 4, 4, 2, 2, 2, 2, 1, 1, 1, 1, 1};
    static char tname[15][16];
    sb_tensor t[15];
    for (int i = 0; i < 15; i++) {
        snprintf(tname[i], sizeof tname[i], "t.%s", names[i]);
        t[i] = (sb_tensor){tname[i], names[i], 1, {2}, sizes[i]};
    }
    sb_tensors(b, t, 15, NULL);
}

/* The shape of a transformers save_pretrained file, much smaller. */
static void hf_like(sb *b) {
    static const sb_tensor t[] = {
        {"model.embed_tokens.weight", "BF16", 2, {16, 8}, 2},
        {"model.layers.0.input_layernorm.weight", "BF16", 1, {8}, 2},
        {"model.layers.0.mlp.down_proj.weight", "BF16", 2, {8, 4}, 2},
        {"model.layers.0.self_attn.q_proj.weight", "BF16", 2, {8, 8}, 2},
        {"model.norm.weight", "BF16", 1, {8}, 2},
    };
    sb_tensors(b, t, 5, "{\"format\":\"pt\"}");
}

static void edges(sb *b) {
    static const sb_tensor t[] = {
        {"scalar", "F32", 0, {0}, 4},          {"empty", "F32", 3, {2, 0, 3}, 4},
        {"caf\\u00e9", "F16", 1, {2}, 2},      {"\\ud83d\\ude00", "U8", 1, {3}, 1},
        {"na\xc3\xafve\\\"q\\\\", "U8", 8, {1, 1, 1, 1, 1, 1, 1, 1}, 1},
    };
    sb_tensors(b, t, 5, "{\"a\":\"x\\ny\",\"b\":\"\"}");
}

#define ENTRY(name, dtype, shape, off) \
    "\"" name "\":{\"dtype\":\"" dtype "\",\"shape\":" shape ",\"data_offsets\":" off "}"

int main(int argc, char **argv) {
    sb b;
    int rc = 0;
    if (argc != 2) {
        fprintf(stderr, "usage: st_make_corpus DIR\n");
        return 2;
    }
    const char *dir = argv[1];
    sb_init(&b), all_dtypes(&b);
    rc |= save(dir, "all_dtypes.safetensors", &b);
    sb_init(&b), hf_like(&b);
    rc |= save(dir, "hf_like.safetensors", &b);
    sb_init(&b), edges(&b);
    rc |= save(dir, "edges.safetensors", &b);
    sb_init(&b), sb_file(&b, "{}", 0);
    rc |= save(dir, "empty.safetensors", &b);
    sb_init(&b), sb_file(&b, "{\"__metadata__\":{\"format\":\"pt\",\"k\":\"v\"}}", 0);
    rc |= save(dir, "meta_only.safetensors", &b);
    sb_init(&b), sb_file(&b, "{" ENTRY("a", "F32", "[2]", "[0,8]") ","
                         ENTRY("a", "F32", "[2]", "[8,16]") "}", 16);
    rc |= save(dir, "bad_duplicate.safetensors", &b);
    sb_init(&b), sb_file(&b, "{" ENTRY("a", "F32", "[2]", "[0,8]") ","
                         ENTRY("b", "F32", "[2]", "[16,24]") "}", 24);
    rc |= save(dir, "bad_hole.safetensors", &b);
    sb_init(&b), sb_file(&b, "{" ENTRY("a", "U8", "[1]", "[0,1]") ","
                         ENTRY("b", "BF16", "[1]", "[1,3]") "}", 3);
    rc |= save(dir, "bad_misaligned.safetensors", &b);
    sb_init(&b), sb_file(&b, "{" ENTRY("\\ud800", "U8", "[1]", "[0,1]") "}", 1);
    rc |= save(dir, "bad_surrogate.safetensors", &b);
    return rc;
}
