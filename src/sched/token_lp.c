/*
 * token_lp.c — per-token log-probabilities (token_lp.h): one pass over the
 * row for its log-sum-exp (in double, as perplexity's), one for the top
 * alternatives (util/topk.h: at most SW_LOGPROBS_MAX).
 */
#include <math.h>
#include <stdlib.h>

#include "sched/token_lp.h"
#include "util/topk.h"

bool token_lps_add(token_lps *t, const float *row, uint32_t n_vocab, int32_t id,
                   uint32_t text_offset) {
    if (t->n == t->cap) {
        const size_t cap = t->cap ? 2 * t->cap : 64;
        sw_token_logprob *v = realloc(t->v, cap * sizeof *v);
        if (v == NULL)
            return false;
        t->v = v;
        t->cap = cap;
    }
    float mx = row[0];
    for (uint32_t i = 1; i < n_vocab; i++)
        mx = row[i] > mx ? row[i] : mx;
    double sum = 0.0;
    for (uint32_t i = 0; i < n_vocab; i++)
        sum += exp((double)row[i] - mx);
    const double lse = mx + log(sum);
    sw_token_logprob *e = &t->v[t->n++];
    *e = (sw_token_logprob){.id = id, .logprob = (float)(row[id] - lse),
                            .text_offset = text_offset};
    const uint32_t k = t->top > SW_LOGPROBS_MAX ? SW_LOGPROBS_MAX : (uint32_t)t->top;
    uint32_t top[SW_LOGPROBS_MAX];
    e->n_top = topk_indices(row, n_vocab, k, top); /* ties: the lower id first */
    while (e->n_top > 0 && isinf(row[top[e->n_top - 1]])) /* masked by a grammar: none */
        e->n_top--;
    for (uint32_t j = 0; j < e->n_top; j++) {
        e->top_id[j] = (int32_t)top[j];
        e->top_logprob[j] = (float)(row[top[j]] - lse);
    }
    return true;
}

void token_lps_free(token_lps *t) {
    free(t->v);
    t->v = NULL;
    t->n = t->cap = 0;
}
