/*
 * vocab.c — a model's vocabulary as bytes for token masks (grammar.h):
 * each token's printed piece (what the scheduler appends to a request's
 * text), the ids with a non-empty piece sorted by their bytes, and each
 * sorted id's common prefix with the previous one, so a walk over the
 * sorted list advances the matcher only over the bytes a token does not
 * share with its predecessor (a trie walk without the trie). Built once
 * per scheduler, at the first constrained request: 262k pieces and a sort,
 * about 0.1 s.
 */
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar.h"
#include "util/error.h"

enum { MAX_PIECE = 255 }; /* longer pieces are left out: never allowed */

static const gvocab *sort_vocab; /* qsort has no context argument */

static int by_bytes(const void *pa, const void *pb) {
    const uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    const gvocab *v = sort_vocab;
    const uint32_t la = v->off[a + 1] - v->off[a], lb = v->off[b + 1] - v->off[b];
    const int c = memcmp(v->blob + v->off[a], v->blob + v->off[b], la < lb ? la : lb);
    if (c != 0)
        return c;
    return la != lb ? (la < lb ? -1 : 1) : (a > b) - (a < b);
}

/* Every piece into v->blob / v->off. */
static sw_status read_pieces(const sw_model *model, gvocab *v) {
    size_t cap = (size_t)v->n_vocab * 8, len = 0;
    v->blob = malloc(cap);
    if (v->blob == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for the vocabulary's bytes");
    for (uint32_t id = 0; id < v->n_vocab; id++) {
        char buf[MAX_PIECE + 1];
        size_t n = 0;
        v->off[id] = (uint32_t)len;
        if (sw_token_to_piece(model, (int32_t)id, buf, sizeof buf, &n) != SW_OK || n > MAX_PIECE)
            n = 0;
        if (len + n > cap) {
            uint8_t *b = realloc(v->blob, 2 * cap);
            if (b == NULL)
                return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for the vocabulary");
            v->blob = b;
            cap *= 2;
        }
        memcpy(v->blob + len, buf, n);
        len += n;
        v->max_len = n > v->max_len ? (uint32_t)n : v->max_len;
    }
    v->off[v->n_vocab] = (uint32_t)len;
    return SW_OK;
}

/* The sorted ids and their common prefixes. */
static void sort_pieces(gvocab *v) {
    v->n_sorted = 0;
    for (uint32_t id = 0; id < v->n_vocab; id++) {
        bool end = false; /* an end token is allowed only where the text is complete */
        for (uint32_t e = 0; e < v->n_end; e++)
            end = end || v->end_ids[e] == (int32_t)id;
        if (v->off[id + 1] > v->off[id] && !end)
            v->ord[v->n_sorted++] = id;
    }
    static pthread_mutex_t sort_mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&sort_mu);
    sort_vocab = v;
    qsort(v->ord, v->n_sorted, sizeof *v->ord, by_bytes);
    pthread_mutex_unlock(&sort_mu);
    for (uint32_t i = 0; i < v->n_sorted; i++) {
        uint32_t k = 0;
        if (i > 0) {
            const uint32_t a = v->ord[i - 1], b = v->ord[i];
            const uint32_t la = v->off[a + 1] - v->off[a], lb = v->off[b + 1] - v->off[b];
            while (k < la && k < lb && v->blob[v->off[a] + k] == v->blob[v->off[b] + k])
                k++;
        }
        v->lcp[i] = (uint16_t)k;
    }
    uint32_t i = 0;
    for (uint32_t b = 0; b <= 256; b++) { /* first-byte buckets */
        while (b < 256 && i < v->n_sorted && v->blob[v->off[v->ord[i]]] < b)
            i++;
        v->first[b] = b < 256 ? i : v->n_sorted;
    }
}

sw_status gvocab_create(const sw_model *model, uint32_t n_vocab, gvocab **out) {
    *out = NULL;
    gvocab *v = calloc(1, sizeof *v);
    if (v == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for the vocabulary");
    v->n_vocab = n_vocab;
    v->off = malloc(((size_t)n_vocab + 1) * sizeof *v->off);
    v->ord = malloc((size_t)n_vocab * sizeof *v->ord);
    v->lcp = malloc((size_t)n_vocab * sizeof *v->lcp);
    sw_status st = v->off && v->ord && v->lcp
                       ? read_pieces(model, v)
                       : sw_errorf(SW_ERR_OOM_HOST, "out of host memory for the vocabulary");
    sw_special_tokens sp;
    if (st == SW_OK)
        st = sw_model_special_tokens(model, &sp);
    if (st != SW_OK) {
        gvocab_destroy(v);
        return st;
    }
    const int32_t ends[2] = {sp.eos, sp.end_of_turn};
    for (int i = 0; i < 2; i++)
        if (ends[i] >= 0 && (uint32_t)ends[i] < n_vocab)
            v->end_ids[v->n_end++] = ends[i];
    sort_pieces(v);
    *out = v;
    return SW_OK;
}

sw_status gvocab_once(gvocab **slot, pthread_mutex_t *mu, const sw_model *model,
                      uint32_t n_vocab) {
    sw_status st = SW_OK;
    pthread_mutex_lock(mu);
    if (*slot == NULL)
        st = gvocab_create(model, n_vocab, slot);
    pthread_mutex_unlock(mu);
    return st;
}

void gvocab_destroy(gvocab *v) {
    if (v == NULL)
        return;
    free(v->blob);
    free(v->off);
    free(v->ord);
    free(v->lcp);
    free(v);
}
