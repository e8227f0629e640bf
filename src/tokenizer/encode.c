/*
 * encode.c — tokenizer_encode: text → ids, in llama.cpp's order of steps
 * (llama_vocab::impl::tokenize, SPM case): BOS, then the text split into
 * special tokens (partition.c) and raw stretches, each raw stretch with
 * ' ' → U+2581 (and a leading one when add_space_prefix asks) merged by
 * spm.c, then EOS if the model asks for it.
 */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_internal.h"
#include "util/error.h"

/* Longest text accepted: escaping may triple it, and symbol indexes are
 * 32-bit (spm.c). */
#define MAX_TEXT_BYTES ((size_t)128 << 20)

/* Writes text[0..n) with every ' ' replaced by U+2581 ("▁", E2 96 81),
 * after one leading "▁" when `prefix`; returns the bytes written (at most
 * 3n + 3). */
static size_t escape_spaces(const char *text, size_t n, bool prefix, char *dst) {
    static const char lower_one_eighth_block[3] = {'\xe2', '\x96', '\x81'};
    size_t m = 0;
    if (prefix) {
        memcpy(dst, lower_one_eighth_block, 3);
        m = 3;
    }
    for (size_t i = 0; i < n; i++) {
        if (text[i] == ' ') {
            memcpy(dst + m, lower_one_eighth_block, 3);
            m += 3;
        } else {
            dst[m++] = text[i];
        }
    }
    return m;
}

/* gemma4's stretches: runs of '\n' and the text between them merged
 * apart; a run of '\n' that is a token is that token. */
static sw_status encode_lines(const tokenizer *t, const char *s, size_t n, tok_out *out) {
    for (size_t i = 0; i < n;) {
        const bool nl = s[i] == '\n';
        size_t j = i;
        while (j < n && (s[j] == '\n') == nl)
            j++;
        const int32_t id = nl ? tokenizer_find(t, s + i, j - i) : -1;
        if (id >= 0) {
            tok_emit(out, id);
        } else {
            sw_status st = tok_spm_encode(t, s + i, j - i, out);
            if (st != SW_OK)
                return st;
        }
        i = j;
    }
    return SW_OK;
}

/* Encodes the raw stretches and special spans of text in order. `work`
 * has room for 3 * len + 3 bytes. */
static sw_status encode_parts(const tokenizer *t, const char *text, size_t len,
                              const tok_span *spans, size_t n_spans, char *work, tok_out *out) {
    bool prev_special = true; /* the start counts as "after a special token" */
    size_t pos = 0;
    for (size_t k = 0; k <= n_spans; k++) {
        size_t end = k < n_spans ? spans[k].pos : len;
        if (end > pos) {
            bool prefix = t->add_space_prefix && prev_special;
            size_t m = escape_spaces(text + pos, end - pos, prefix, work);
            sw_status st = t->split_newlines ? encode_lines(t, work, m, out)
                                             : tok_spm_encode(t, work, m, out);
            if (st != SW_OK)
                return st;
            prev_special = false;
        }
        if (k < n_spans) {
            tok_emit(out, spans[k].token);
            prev_special = true;
            pos = spans[k].pos + spans[k].len;
        }
    }
    return SW_OK;
}

sw_status tokenizer_encode(const tokenizer *t, const char *text, size_t len, unsigned flags,
                           int32_t *ids, size_t cap, size_t *n_ids) {
    tok_span *spans = NULL;
    size_t n_spans = 0;
    char *work = NULL;
    tok_out out = {ids, cap, 0};
    sw_status st;

    if (t == NULL || n_ids == NULL || (text == NULL && len > 0) || (ids == NULL && cap > 0))
        return sw_errorf(SW_ERR_ARG, "tokenize: NULL argument");
    *n_ids = 0;
    if (!t->can_encode)
        return sw_errorf(SW_ERR_UNSUPPORTED, "tokenizer model '%s' cannot encode: only "
                         "SentencePiece vocabularies (tokenizer.ggml.model \"llama\") and "
                         "Gemma 4's (\"gemma4\") are supported", t->model);
    if (len > MAX_TEXT_BYTES)
        return sw_errorf(SW_ERR_ARG, "tokenize: %zu bytes of text is over the %zu-byte limit; "
                         "split the input", len, MAX_TEXT_BYTES);
    bool add_special = (flags & SW_TOK_ADD_BOS) != 0;
    if (add_special && t->add_bos)
        tok_emit(&out, t->bos);
    st = tok_partition(t, text, len, (flags & SW_TOK_PARSE_SPECIAL) != 0, &spans, &n_spans);
    if (st != SW_OK)
        goto fail;
    work = malloc(3 * len + 3);
    if (work == NULL) {
        st = sw_errorf(SW_ERR_OOM_HOST, "tokenize: out of host memory for %zu bytes", len);
        goto fail;
    }
    st = encode_parts(t, text, len, spans, n_spans, work, &out);
    if (st != SW_OK)
        goto fail;
    if (add_special && t->add_eos)
        tok_emit(&out, t->eos);
    *n_ids = out.n;
fail:
    free(spans);
    free(work);
    return st;
}
