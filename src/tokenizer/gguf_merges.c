/*
 * gguf_merges.c — a GGUF vocabulary of tokenizer.ggml.model "gemma4":
 * byte-level BPE over SentencePiece pieces ("▁" for spaces, <0xXX> byte
 * tokens), its merge rules in tokenizer.ggml.merges ("a b" strings, first
 * rule first). The rules become SentencePiece scores exactly as a
 * tokenizer.json's do (hf_merges.c says why the two algorithms then pick
 * the same pairs, and refuses rule sets for which they would not), so
 * spm.c encodes it.
 */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/hf_internal.h"
#include "util/error.h"

#define KEY "tokenizer.ggml.merges"

static sw_status gguf_rule(void *user, size_t rank, const char *side[2], size_t len[2]) {
    const gguf_value *m = user;
    const gguf_str s = m->arr.items[rank].s;
    if (!hf_split_rule(s.ptr, (size_t)s.len, side, len))
        return sw_errorf(SW_ERR_FORMAT, "%s[%zu] '%.*s' is not two pieces separated by a "
                         "space", KEY, rank, (int)(s.len < 60 ? s.len : 60), s.ptr);
    return SW_OK;
}

sw_status tok_gguf_merge_scores(const gguf_file *f, const gguf_value *tokens, float *score,
                                hf_pairs *pairs) {
    const gguf_value *m = NULL;
    sw_status st = gguf_get_array(f, KEY, &m);
    if (st == SW_ERR_ARG)
        return sw_errorf(SW_ERR_FORMAT, "a gemma4 vocabulary needs '%s', which is missing", KEY);
    if (st != SW_OK)
        return st;
    if (m->arr.elem_type != GGUF_VT_STRING || m->arr.items == NULL)
        return sw_errorf(SW_ERR_FORMAT, "'%s' holds %s elements, expected strings", KEY,
                         gguf_vtype_name(m->arr.elem_type));
    hf_vocab v;
    memset(&v, 0, sizeof v);
    v.path = KEY;
    const uint32_t n = (uint32_t)tokens->arr.n;
    if ((st = hf_vocab_alloc(&v, n)) == SW_OK) {
        v.n = n;
        for (uint32_t id = 0; id < n; id++) { /* the first of equal texts wins lookups */
            const gguf_str s = tokens->arr.items[id].s;
            if (hf_vocab_find(&v, s.ptr, (size_t)s.len) < 0)
                hf_vocab_put(&v, id, s.ptr, (size_t)s.len);
        }
        st = hf_merge_scores(&v, (size_t)m->arr.n, gguf_rule, (void *)m, score, pairs);
    }
    hf_vocab_free(&v);
    return st;
}
