/*
 * test_tokenizer_gemma4.c — Gemma 4's vocabulary (BPE by merge rules),
 * from the tiny Gemma 4 GGUF that llama.cpp's converter wrote
 * (tokenizer.ggml.model "gemma4") or from its Hugging Face folder
 * (tokenizer.json), against the ids transformers gives for the same texts
 * (tests/data/tokenizer/gemma4_tiny.json, made by
 * tools/golden/make_gemma4_tokenizer_golden.py): special tokens parsed,
 * BOS first; and every case decodes back to its text.
 *
 * usage: test_tokenizer_gemma4 MODEL GOLDEN.json   (the GGUF, or the HF folder)
 */
#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "spillway.h"

static void check_case(const sw_model *m, const char *text, json_object *want) {
    const size_t len = strlen(text), n_want = json_object_array_length(want);
    const size_t cap = SW_TOKENIZE_MAX_IDS(len);
    int32_t *ids = malloc(cap * sizeof *ids);
    size_t n = 0;
    SW_CHECK_OK(sw_tokenize(m, text, len, SW_TOK_ADD_BOS | SW_TOK_PARSE_SPECIAL, ids, cap, &n));
    bool same = n == n_want;
    for (size_t i = 0; same && i < n; i++)
        same = ids[i] == json_object_get_int(json_object_array_get_idx(want, i));
    SW_CHECK(same, "'%s': %zu ids, transformers %zu (first differing at %zu)", text, n, n_want,
             n);
    char buf[512];
    size_t got = 0;
    if (n > 0 && len < sizeof buf) {
        SW_CHECK_OK(sw_detokenize(m, ids + 1, n - 1, buf, sizeof buf, &got));
        /* control tokens print nothing: compare only texts without them */
        if (strstr(text, "<|turn>") == NULL && strstr(text, "<turn|>") == NULL)
            SW_CHECK(got == len && !memcmp(buf, text, len), "'%s' decodes to '%.*s'", text,
                     (int)got, buf);
    }
    free(ids);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s MODEL GOLDEN.json\n", argv[0]);
        return 2;
    }
    sw_model *m = NULL;
    json_object *root = json_object_from_file(argv[2]), *cases = NULL;
    SW_CHECK(root != NULL && json_object_object_get_ex(root, "cases", &cases),
             "cannot read %s", argv[2]);
    SW_CHECK_OK(sw_model_open(argv[1], &m));
    for (size_t i = 0; m != NULL && cases != NULL && i < json_object_array_length(cases); i++) {
        json_object *c = json_object_array_get_idx(cases, i), *text = NULL, *ids = NULL;
        if (json_object_object_get_ex(c, "text", &text) &&
            json_object_object_get_ex(c, "ids", &ids))
            check_case(m, json_object_get_string(text), ids);
    }
    sw_model_close(m);
    json_object_put(root);
    return sw_check_finish("test_tokenizer_gemma4");
}
