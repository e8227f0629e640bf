/*
 * tokens.c — the public tokenizer functions of include/spillway.h over the
 * model's tokenizer (built by sw_model_open when the file has a vocabulary).
 * Argument checks and "this model has no vocabulary" live here; the work is
 * in encode.c / decode.c.
 */
#include "model/model_internal.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

/* The model's tokenizer, or an error naming what is missing. */
static sw_status model_tokenizer(const sw_model *m, const char *fn, const tokenizer **out) {
    if (m == NULL)
        return sw_errorf(SW_ERR_ARG, "%s: no model", fn);
    if (m->tok == NULL)
        return sw_errorf(SW_ERR_UNSUPPORTED, "%s: model %s has no vocabulary "
                         "(tokenizer.ggml.tokens is missing)", fn, m->path);
    *out = m->tok;
    return SW_OK;
}

sw_status sw_tokenize(const sw_model *m, const char *text, size_t len, unsigned flags,
                      int32_t *ids, size_t cap, size_t *n_ids) {
    const tokenizer *t = NULL;
    sw_status st = model_tokenizer(m, "sw_tokenize", &t);
    if (st != SW_OK)
        return st;
    st = tokenizer_encode(t, text, len, flags, ids, cap, n_ids);
    /* The bound callers size their buffers by (serve, the CLI): past it a
     * caller would read ids never written. vocab.c refuses the vocabularies
     * known to break it; this catches any other. */
    if (st == SW_OK && *n_ids > SW_TOKENIZE_MAX_IDS(len))
        return sw_errorf(SW_ERR_FORMAT, "sw_tokenize: %s's vocabulary encoded %zu bytes as %zu "
                         "ids, beyond the bound of %zu", m->path, len, *n_ids,
                         SW_TOKENIZE_MAX_IDS(len));
    return st;
}

sw_status sw_token_to_piece(const sw_model *m, int32_t id, char *buf, size_t cap,
                            size_t *len) {
    const tokenizer *t = NULL;
    sw_status st = model_tokenizer(m, "sw_token_to_piece", &t);
    if (st != SW_OK)
        return st;
    return tokenizer_token_to_piece(t, id, buf, cap, len);
}

sw_status sw_detokenize(const sw_model *m, const int32_t *ids, size_t n, char *buf,
                        size_t cap, size_t *len) {
    const tokenizer *t = NULL;
    sw_status st = model_tokenizer(m, "sw_detokenize", &t);
    if (st != SW_OK)
        return st;
    return tokenizer_decode(t, ids, n, buf, cap, len);
}

const char *sw_token_text(const sw_model *m, int32_t id) {
    return m ? tokenizer_token_text(m->tok, id, NULL) : NULL;
}

size_t sw_vocab_size(const sw_model *m) {
    return m ? tokenizer_n_vocab(m->tok) : 0;
}

sw_status sw_model_special_tokens(const sw_model *m, sw_special_tokens *out) {
    if (m == NULL || out == NULL)
        return sw_errorf(SW_ERR_ARG, "sw_model_special_tokens: NULL argument");
    *out = (sw_special_tokens){-1, -1, -1, -1, -1, -1, 0};
    if (m->tok != NULL)
        tokenizer_special(m->tok, out);
    return SW_OK;
}
