/*
 * gguf_vocab.c — reading a tokenizer out of GGUF metadata
 * (tokenizer.ggml.*) into tokenizer_create's inputs.
 *
 * Defaults for absent keys follow llama.cpp's loader so files without them
 * tokenize the same way: for model "llama" BOS 1, EOS 2, UNK 0, BOS added,
 * a space prefix added; a special id outside the vocabulary keeps the
 * default. Wrong key types are format errors naming the key.
 */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/hf_internal.h"
#include "tokenizer/tok_internal.h"
#include "util/error.h"

/* A scalar key: absent leaves *v alone; wrong type or range is an error. */
static sw_status read_id(const gguf_file *f, const char *key, uint32_t n_vocab, int32_t *v) {
    uint64_t u;
    sw_status st = gguf_get_uint(f, key, &u);
    if (st == SW_ERR_ARG)
        return SW_OK; /* absent */
    if (st != SW_OK)
        return st;
    if (u < n_vocab)
        *v = (int32_t)u;
    return SW_OK;
}

static sw_status read_flag(const gguf_file *f, const char *key, bool *v) {
    bool b;
    sw_status st = gguf_get_bool(f, key, &b);
    if (st == SW_ERR_ARG)
        return SW_OK;
    if (st == SW_OK)
        *v = b;
    return st;
}

static sw_status read_config(const gguf_file *f, uint32_t n_vocab, tokenizer_config *cfg,
                             char *model, size_t model_cap) {
    gguf_str s = {"", 0};
    sw_status st = gguf_get_str(f, "tokenizer.ggml.model", &s);
    if (st != SW_OK && st != SW_ERR_ARG)
        return st;
    size_t len = s.len < model_cap - 1 ? (size_t)s.len : model_cap - 1;
    memcpy(model, s.ptr, len);
    model[len] = '\0';
    bool spm = strcmp(model, "llama") == 0;
    *cfg = (tokenizer_config){model, spm ? 1 : -1, spm ? 2 : -1, spm ? 0 : -1, -1,
                              spm, false, spm};
    if (cfg->bos >= (int32_t)n_vocab) cfg->bos = -1;
    if (cfg->eos >= (int32_t)n_vocab) cfg->eos = -1;
    if (cfg->unk >= (int32_t)n_vocab) cfg->unk = -1;
    if ((st = read_id(f, "tokenizer.ggml.bos_token_id", n_vocab, &cfg->bos)) != SW_OK ||
        (st = read_id(f, "tokenizer.ggml.eos_token_id", n_vocab, &cfg->eos)) != SW_OK ||
        (st = read_id(f, "tokenizer.ggml.unknown_token_id", n_vocab, &cfg->unk)) != SW_OK ||
        (st = read_id(f, "tokenizer.ggml.padding_token_id", n_vocab, &cfg->pad)) != SW_OK ||
        (st = read_flag(f, "tokenizer.ggml.add_bos_token", &cfg->add_bos)) != SW_OK ||
        (st = read_flag(f, "tokenizer.ggml.add_eos_token", &cfg->add_eos)) != SW_OK ||
        (st = read_flag(f, "tokenizer.ggml.add_space_prefix", &cfg->add_space_prefix)) != SW_OK)
        return st;
    return SW_OK;
}

/* An optional per-token array: absent → NULL; otherwise it must hold at
 * least n_vocab elements of one of the allowed element types. */
static sw_status optional_array(const gguf_file *f, const char *key, uint32_t t1, uint32_t t2,
                                uint64_t n_vocab, const gguf_value **out) {
    *out = NULL;
    sw_status st = gguf_get_array(f, key, out);
    if (st == SW_ERR_ARG) {
        *out = NULL;
        return SW_OK;
    }
    if (st != SW_OK)
        return st;
    if ((*out)->arr.elem_type != t1 && (*out)->arr.elem_type != t2)
        return sw_errorf(SW_ERR_FORMAT, "key '%s' holds %s elements, expected %s; the "
                         "tokenizer metadata is malformed", key,
                         gguf_vtype_name((*out)->arr.elem_type), gguf_vtype_name(t1));
    if ((*out)->arr.n < n_vocab)
        return sw_errorf(SW_ERR_FORMAT, "key '%s' has %llu entries for %llu tokens", key,
                         (unsigned long long)(*out)->arr.n, (unsigned long long)n_vocab);
    return SW_OK;
}

static sw_status read_tokens(const gguf_file *f, const gguf_value **tokens) {
    sw_status st = gguf_get_array(f, "tokenizer.ggml.tokens", tokens);
    if (st == SW_ERR_ARG)
        return sw_errorf(SW_ERR_FORMAT, "key 'tokenizer.ggml.tokens' is missing");
    if (st != SW_OK)
        return st;
    if ((*tokens)->arr.elem_type != GGUF_VT_STRING || (*tokens)->arr.items == NULL)
        return sw_errorf(SW_ERR_FORMAT, "key 'tokenizer.ggml.tokens' holds %s elements, "
                         "expected strings", gguf_vtype_name((*tokens)->arr.elem_type));
    if ((*tokens)->arr.n > INT32_MAX - 1)
        return sw_errorf(SW_ERR_FORMAT, "key 'tokenizer.ggml.tokens' has %llu entries, more "
                         "than 32-bit ids allow", (unsigned long long)(*tokens)->arr.n);
    return SW_OK;
}

/* A gemma4 vocabulary: scores from the merge rules, and the rules checked
 * complete against the built tokenizer (gguf_merges.c). */
static sw_status create_bpe(const gguf_file *f, const gguf_value *tokens,
                            const tokenizer_config *cfg, tokenizer_token *list,
                            tokenizer **out) {
    const uint32_t n = (uint32_t)tokens->arr.n;
    float *score = malloc((n ? n : 1) * sizeof *score);
    hf_pairs pairs = {NULL, 0};
    if (score == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "tokenizer: out of host memory for %u scores", n);
    sw_status st = tok_gguf_merge_scores(f, tokens, score, &pairs);
    for (uint32_t i = 0; st == SW_OK && i < n; i++)
        list[i].score = score[i];
    if (st == SW_OK)
        st = tokenizer_create(cfg, list, n, out);
    if (st == SW_OK && (st = hf_check_merges_complete(*out, &pairs,
                                                      "tokenizer.ggml.merges")) != SW_OK) {
        tokenizer_destroy(*out);
        *out = NULL;
    }
    hf_pairs_free(&pairs);
    free(score);
    return st;
}

sw_status tokenizer_create_from_gguf(const gguf_file *f, tokenizer **out) {
    const gguf_value *tokens, *scores, *types;
    tokenizer_token *list = NULL;
    tokenizer_config cfg;
    char model[32];
    sw_status st;

    if (f == NULL || out == NULL)
        return sw_errorf(SW_ERR_ARG, "tokenizer_create_from_gguf: NULL argument");
    *out = NULL;
    if ((st = read_tokens(f, &tokens)) != SW_OK)
        goto fail;
    uint32_t n = (uint32_t)tokens->arr.n;
    if ((st = optional_array(f, "tokenizer.ggml.scores", GGUF_VT_F32, GGUF_VT_I32, n,
                             &scores)) != SW_OK ||
        (st = optional_array(f, "tokenizer.ggml.token_type", GGUF_VT_I32, GGUF_VT_I32, n,
                             &types)) != SW_OK ||
        (st = read_config(f, n, &cfg, model, sizeof model)) != SW_OK)
        goto fail;
    list = malloc((n ? n : 1) * sizeof *list);
    if (list == NULL) {
        st = sw_errorf(SW_ERR_OOM_HOST, "tokenizer: out of host memory reading %u tokens", n);
        goto fail;
    }
    for (uint32_t i = 0; i < n; i++) {
        list[i].text = tokens->arr.items[i].s.ptr;
        list[i].len = (size_t)tokens->arr.items[i].s.len;
        list[i].score = scores ? (float)gguf_array_float(scores, i) : 0.0f;
        list[i].type = types ? (int32_t)gguf_array_int(types, i) : TOK_TYPE_NORMAL;
    }
    if (!strcmp(model, "gemma4")) {
        st = create_bpe(f, tokens, &cfg, list, out);
        goto fail;
    }
    st = tokenizer_create(&cfg, list, n, out);
fail:
    free(list);
    return st;
}
