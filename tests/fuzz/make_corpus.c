/*
 * make_corpus.c — writes the GGUF fuzz seed corpus (tests/fuzz/corpus).
 *
 *   gguf_make_corpus DIR
 *
 * Seeds are small valid files from gguf_build: the sample file in v2 and v3
 * with default, small and large alignment, a header-only file, maximally
 * nested arrays, a metadata-only file in the shape of a tokenizer, and a
 * file with many tiny tensors. The fuzzer mutates them into the bad cases.
 * Deterministic: rerunning it rewrites identical bytes.
 */
#include <inttypes.h>
#include <stdio.h>

#include "format/gguf.h"
#include "gguf_build.h"
#include "quant/types.h"

static int save(const char *dir, const char *name, gb *b) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *fp = fopen(path, "wb");
    int ok = fp != NULL && !b->failed && fwrite(b->data, 1, b->len, fp) == b->len;
    if (fp != NULL && fclose(fp) != 0)
        ok = 0;
    if (!ok)
        fprintf(stderr, "gguf_make_corpus: cannot write %s\n", path);
    gb_free(b);
    return ok ? 0 : 1;
}

static void tokenizer_like(gb *b) {
    static const char *const tokens[] = {"<pad>", "<eos>", "<bos>", "\xe2\x96\x81the", "<0x0A>"};
    gb_header(b, 3, 0, 4);
    gb_kv_str(b, "tokenizer.ggml.model", "llama");
    gb_kv_begin(b, "tokenizer.ggml.tokens", GGUF_VT_ARRAY);
    gb_array_begin(b, GGUF_VT_STRING, 5);
    for (int i = 0; i < 5; i++)
        gb_str(b, tokens[i]);
    gb_kv_begin(b, "tokenizer.ggml.scores", GGUF_VT_ARRAY);
    gb_array_begin(b, GGUF_VT_F32, 5);
    for (int i = 0; i < 5; i++)
        gb_f32(b, -(float)i);
    gb_kv_begin(b, "tokenizer.ggml.token_type", GGUF_VT_ARRAY);
    gb_array_begin(b, GGUF_VT_I32, 5);
    for (int i = 0; i < 5; i++)
        gb_u32(b, i < 3 ? 3 : 1);
}

static void many_tensors(gb *b) {
    static char names[24][16];
    gb_tensor t[24];
    static const uint32_t types[] = {SW_TYPE_F32, SW_TYPE_F16, SW_TYPE_Q8_0, SW_TYPE_Q4_0,
                                     SW_TYPE_Q5_0, SW_TYPE_BF16};
    for (int i = 0; i < 24; i++) {
        snprintf(names[i], sizeof names[i], "blk.%d.w", i);
        uint64_t ne0 = types[i % 6] == SW_TYPE_F32 || types[i % 6] == SW_TYPE_F16 ||
                               types[i % 6] == SW_TYPE_BF16 ? 4 : 32;
        t[i] = (gb_tensor){names[i], types[i % 6], 1 + (uint32_t)(i % 4), {ne0, 1, 1, 1}};
    }
    gb_header(b, 3, 24, 1);
    gb_kv_u32(b, "general.alignment", 16);
    gb_tensors(b, t, 24, 16, NULL);
}

int main(int argc, char **argv) {
    gb b;
    int rc = 0;
    if (argc != 2) {
        fprintf(stderr, "usage: gguf_make_corpus DIR\n");
        return 2;
    }
    const char *dir = argv[1];
    static const uint32_t alignments[] = {0, 8, 64};
    for (uint32_t version = 2; version <= 3; version++)
        for (int a = 0; a < 3; a++) {
            char name[64];
            snprintf(name, sizeof name, "sample_v%" PRIu32 "_align%" PRIu32 ".gguf", version,
                     alignments[a]);
            gb_init(&b), gb_sample(&b, version, alignments[a], NULL);
            rc |= save(dir, name, &b);
        }
    gb_init(&b), gb_header(&b, 3, 0, 0);
    rc |= save(dir, "header_only.gguf", &b);
    gb_init(&b), gb_header(&b, 3, 0, 1), gb_kv_begin(&b, "deep", GGUF_VT_ARRAY);
    for (int level = 1; level < GGUF_MAX_DEPTH; level++)
        gb_array_begin(&b, GGUF_VT_ARRAY, 1);
    gb_array_begin(&b, GGUF_VT_U16, 2), gb_u16(&b, 1), gb_u16(&b, 2);
    rc |= save(dir, "nested_max.gguf", &b);
    gb_init(&b), tokenizer_like(&b);
    rc |= save(dir, "tokenizer.gguf", &b);
    gb_init(&b), many_tensors(&b);
    rc |= save(dir, "many_tensors.gguf", &b);
    return rc;
}
