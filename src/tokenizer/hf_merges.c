/*
 * hf_merges.c — a tokenizer.json merge list turned into SentencePiece
 * scores, and the check that this is exact.
 *
 * Circle with hf_vocab.c, on purpose: the vocabulary reader calls these
 * while it builds the table, and they look pieces up in that table
 * (hf_vocab_find); one concern, split only to keep each file short.
 *
 * Hugging Face BPE applies, again and again, the adjacent pair whose merge
 * rule ranks first. SentencePiece BPE (spm.c, as llama.cpp) merges the
 * adjacent pair whose concatenation is the token with the highest score.
 * Gemma's tokenizer.json is written from the SentencePiece model by listing,
 * for every piece, every split into two pieces, best score first (the
 * transformers converters' generate_merges). So with
 *
 *     score(piece) = -(rank of the first rule producing piece)
 *
 * the order of scores is the order of the original SentencePiece scores for
 * every piece a rule produces, and the two algorithms pick the same pair:
 * the same piece from two different splits gets one score, as in
 * SentencePiece, where ties go to the leftmost pair. A piece no rule
 * produces gets -(number of rules), below all others. Its score is never
 * read: spm.c only scores a piece it can build from two adjacent symbols (a
 * token or one character each), and hf_check_merges_complete refuses any
 * vocabulary in which such a pair has no rule, so every piece spm.c can
 * build is one a rule produces. The real Gemma 3 vocabulary read this way
 * gives llama.cpp's ids on the whole golden corpus (test_tokenizer_hf).
 */
#include <stdlib.h>
#include <string.h>

#include "format/json_util.h"
#include "tokenizer/hf_internal.h"
#include "util/error.h"

/* Scores are floats: ranks must stay exact integers. */
#define MAX_MERGES ((size_t)1 << 24)
#define EMPTY UINT64_MAX
#define UNSET 1.0f /* no rule produced this piece yet (real scores are <= 0) */

/* Bytes of a piece shown in a message. */
static int clip(size_t len) {
    return len < 60 ? (int)len : 60;
}

static size_t pair_slot(const hf_pairs *p, uint64_t key) {
    return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 17) & p->mask;
}

/* Inserts key; false when it was already there. */
static bool pairs_add(hf_pairs *p, uint64_t key) {
    size_t i = pair_slot(p, key);
    while (p->keys[i] != EMPTY) {
        if (p->keys[i] == key)
            return false;
        i = (i + 1) & p->mask;
    }
    p->keys[i] = key;
    return true;
}

static bool pairs_has(const hf_pairs *p, uint64_t key) {
    if (p->keys == NULL)
        return false;
    size_t i = pair_slot(p, key);
    while (p->keys[i] != EMPTY) {
        if (p->keys[i] == key)
            return true;
        i = (i + 1) & p->mask;
    }
    return false;
}

void hf_pairs_free(hf_pairs *p) {
    free(p->keys);
    p->keys = NULL;
    p->mask = 0;
}

/* The two sides of rule `rank`: ["a", "b"], or "a b" split at the first
 * space as the tokenizers library reads it. */
bool hf_split_rule(const char *s, size_t n, const char *side[2], size_t len[2]) {
    const char *space = memchr(s, ' ', n);
    if (space == NULL)
        return false;
    side[0] = s;
    len[0] = (size_t)(space - s);
    side[1] = space + 1;
    len[1] = n - len[0] - 1;
    return true;
}

static sw_status rule_sides(json_object *rule, const char *path, size_t rank,
                            const char *side[2], size_t len[2]) {
    if (json_object_is_type(rule, json_type_string)) {
        const char *s = json_object_get_string(rule);
        size_t n = (size_t)json_object_get_string_len(rule);
        if (!hf_split_rule(s, n, side, len))
            return sw_errorf(SW_ERR_FORMAT, "%s: model.merges[%zu] '%.60s' is not two pieces "
                             "separated by a space", path, rank, s);
        return SW_OK;
    }
    if (json_object_is_type(rule, json_type_array) && json_object_array_length(rule) == 2) {
        for (int k = 0; k < 2; k++) {
            json_object *e = json_object_array_get_idx(rule, (size_t)k);
            if (!json_object_is_type(e, json_type_string))
                break;
            side[k] = json_object_get_string(e);
            len[k] = (size_t)json_object_get_string_len(e);
            if (k == 1)
                return SW_OK;
        }
    }
    return sw_errorf(SW_ERR_FORMAT, "%s: model.merges[%zu] should be a string \"a b\" or an "
                     "array of two strings", path, rank);
}

/* Applies rule `rank` (pieces side/len): checks them and records the
 * product's score. `buf` (*cap bytes, grown as needed) holds the
 * concatenation. */
static sw_status read_rule(const hf_vocab *v, const char *side[2], const size_t len[2],
                           size_t rank, float *score, hf_pairs *pairs, char **buf,
                           size_t *cap) {
    int32_t id[2];
    for (int k = 0; k < 2; k++)
        if ((id[k] = hf_vocab_find(v, side[k], len[k])) < 0)
            return sw_errorf(SW_ERR_FORMAT, "%s: model.merges[%zu] names '%.*s', which is not "
                             "in the vocabulary", v->path, rank, clip(len[k]), side[k]);
    if (len[0] + len[1] > *cap) {
        char *nb = realloc(*buf, len[0] + len[1]);
        if (nb == NULL)
            return sw_errorf(SW_ERR_OOM_HOST, "tokenizer: out of host memory reading merges");
        *buf = nb;
        *cap = len[0] + len[1];
    }
    memcpy(*buf, side[0], len[0]);
    memcpy(*buf + len[0], side[1], len[1]);
    int32_t product = hf_vocab_find(v, *buf, len[0] + len[1]);
    if (product < 0)
        return sw_errorf(SW_ERR_FORMAT, "%s: model.merges[%zu] joins '%.*s' and '%.*s' into a "
                         "piece that is not in the vocabulary", v->path, rank, clip(len[0]),
                         side[0], clip(len[1]), side[1]);
    if (!pairs_add(pairs, (uint64_t)id[0] << 32 | (uint32_t)id[1]))
        return sw_errorf(SW_ERR_FORMAT, "%s: model.merges[%zu] ('%.*s' + '%.*s') is listed "
                         "twice", v->path, rank, clip(len[0]), side[0], clip(len[1]), side[1]);
    if (score[product] == UNSET)
        score[product] = -(float)rank;
    return SW_OK;
}

typedef struct json_rules {
    const json_object *merges;
    const char *path;
} json_rules;

static sw_status json_rule(void *user, size_t rank, const char *side[2], size_t len[2]) {
    const json_rules *j = user;
    return rule_sides(json_object_array_get_idx(j->merges, rank), j->path, rank, side, len);
}

sw_status hf_read_merges(const hf_vocab *v, const json_object *merges, float *score,
                         hf_pairs *pairs) {
    json_rules j = {merges, v->path};
    return hf_merge_scores(v, json_object_array_length(merges), json_rule, &j, score, pairs);
}

sw_status hf_merge_scores(const hf_vocab *v, size_t n, hf_rule_fn rule, void *user,
                          float *score, hf_pairs *pairs) {
    size_t n_slots = 16, cap = 0;
    char *buf = NULL;
    sw_status st = SW_OK;
    if (n > MAX_MERGES)
        return sw_errorf(SW_ERR_UNSUPPORTED, "%s: %zu merges are more than the %zu supported",
                         v->path, n, MAX_MERGES);
    while (n_slots < 2 * n)
        n_slots *= 2;
    pairs->keys = malloc(n_slots * sizeof *pairs->keys);
    if (pairs->keys == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "tokenizer: out of host memory for %zu merges", n);
    memset(pairs->keys, 0xff, n_slots * sizeof *pairs->keys);
    pairs->mask = n_slots - 1;
    for (uint32_t id = 0; id < v->n; id++)
        score[id] = UNSET;
    for (size_t rank = 0; rank < n && st == SW_OK; rank++) {
        const char *side[2];
        size_t len[2];
        if ((st = rule(user, rank, side, len)) == SW_OK)
            st = read_rule(v, side, len, rank, score, pairs, &buf, &cap);
    }
    for (uint32_t id = 0; id < v->n; id++)
        if (score[id] == UNSET)
            score[id] = -(float)n;
    free(buf);
    if (st != SW_OK)
        hf_pairs_free(pairs);
    return st;
}

/* Bytes of the UTF-8 character led by c, judged from c alone as spm.c
 * splits text into symbols. */
static size_t char_len(unsigned char c) {
    static const unsigned char len[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return len[c >> 4];
}

/* Checks every split of token id into two symbols spm.c could hold. */
static sw_status check_token(const tokenizer *t, const hf_pairs *pairs, const char *path,
                             int32_t id) {
    size_t len;
    const char *s = tokenizer_token_text(t, id, &len);
    if (memchr(s, ' ', len) != NULL)
        return SW_OK; /* spm.c never sees a space: encode.c turns them into U+2581 */
    size_t first = char_len((unsigned char)s[0]);
    for (size_t k = first; k < len; k += char_len((unsigned char)s[k])) {
        int32_t l = tokenizer_find(t, s, k), r = tokenizer_find(t, s + k, len - k);
        bool l_sym = l >= 0 || k == first;
        bool r_sym = r >= 0 || k + char_len((unsigned char)s[k]) >= len;
        if (!l_sym || !r_sym)
            continue;
        if (l < 0 || r < 0 || !pairs_has(pairs, (uint64_t)l << 32 | (uint32_t)r))
            return sw_errorf(SW_ERR_UNSUPPORTED, "%s: no merge rule joins '%.*s' and '%.*s', "
                             "although together they are token %d; SentencePiece merging would "
                             "join them, so ids could differ from the tokenizer's own. Merges "
                             "written by transformers' SentencePiece converters list every such "
                             "pair", path, clip(k), s, clip(len - k), s + k, id);
    }
    return SW_OK;
}

sw_status hf_check_merges_complete(const tokenizer *t, const hf_pairs *pairs, const char *path) {
    sw_status st = SW_OK;
    int32_t n = (int32_t)tokenizer_n_vocab(t);
    for (int32_t id = 0; id < n && st == SW_OK; id++)
        st = check_token(t, pairs, path, id);
    return st;
}
