/*
 * logprob.c — see logprob.h. Sums of exponentials are in double, the rest
 * in float, as llama.cpp does them, so a figure computed here and there on
 * the same logits agrees to far more digits than it is printed with.
 */
#include "eval/logprob.h"

#include <math.h>
#include <string.h>

typedef struct row_stats {
    float max_logit, min_logit, log_sum_exp;
    int32_t argmax;            /* the first largest */
} row_stats;

static row_stats stats_of(const float *logits, uint32_t n) {
    row_stats r = {logits[0], logits[0], 0, 0};
    for (uint32_t i = 1; i < n; i++) {
        if (logits[i] > r.max_logit) {
            r.max_logit = logits[i];
            r.argmax = (int32_t)i;
        }
        r.min_logit = logits[i] < r.min_logit ? logits[i] : r.min_logit;
    }
    double sum_exp = 0;
    for (uint32_t i = 0; i < n; i++)
        sum_exp += expf(logits[i] - r.max_logit);
    r.log_sum_exp = (float)log(sum_exp);
    return r;
}

double lp_nll(const float *logits, uint32_t n_vocab, int32_t tok) {
    row_stats r = stats_of(logits, n_vocab);
    return r.max_logit + r.log_sum_exp - logits[tok];
}

double lp_record_write(const float *logits, uint32_t n_vocab, int32_t tok, uint16_t *rec) {
    row_stats r = stats_of(logits, n_vocab);
    const float min_logit = r.min_logit > r.max_logit - 16 ? r.min_logit : r.max_logit - 16;
    const float head[2] = {(r.max_logit - min_logit) / 65535.f,
                           min_logit - r.max_logit - r.log_sum_exp};
    uint16_t *q = rec + 4;
    memcpy(rec, head, sizeof head);
    memset(q, 0, (lp_record_u16(n_vocab) - 4) * sizeof *q);
    if (head[0] != 0) {
        const float inv = 1 / head[0];
        for (uint32_t i = 0; i < n_vocab; i++)
            q[i] = logits[i] > min_logit ? (uint16_t)lrintf(inv * (logits[i] - min_logit)) : 0;
    }
    return r.max_logit + r.log_sum_exp - logits[tok];
}

void lp_compare(const float *logits, uint32_t n_vocab, const uint16_t *rec, int32_t tok,
                lp_sums *s, float *kld, float *p_diff) {
    row_stats r = stats_of(logits, n_vocab);
    float head[2];
    memcpy(head, rec, sizeof head);
    const float scale = head[0], min_log_prob = head[1];
    const uint16_t *q = rec + 4;
    const float nll = r.max_logit + r.log_sum_exp - logits[tok];
    const float nll_base = -(scale * q[tok] + min_log_prob);
    const float norm = r.max_logit + r.log_sum_exp; /* log p_i = logits[i] - norm */
    double sum = 0;
    int32_t top_base = 0;
    float top_base_lp = 0;
    for (uint32_t i = 0; i < n_vocab; i++) {
        const float lp_base = scale * q[i] + min_log_prob;
        if (i == 0 || lp_base > top_base_lp) {
            top_base_lp = lp_base;
            top_base = (int32_t)i;
        }
        if (lp_base > -16.f) /* beyond, exp() adds nothing a float keeps */
            sum += expf(lp_base) * (lp_base - logits[i] + norm);
    }
    const float dp = expf(-nll) - expf(-nll_base);
    s->nll += nll;
    s->nll2 += (double)nll * nll;
    s->nll_base += nll_base;
    s->nll_base2 += (double)nll_base * nll_base;
    s->nll_nll_base += (double)nll * nll_base;
    s->kld += sum;
    s->kld2 += sum * sum;
    s->p_diff += dp;
    s->p_diff2 += (double)dp * dp;
    s->p_diff4 += (double)dp * dp * dp * dp;
    s->same_top += r.argmax == top_base;
    s->count++;
    *kld = (float)sum;
    *p_diff = dp;
}
