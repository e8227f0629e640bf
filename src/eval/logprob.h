/*
 * logprob.h — the per-position arithmetic of perplexity and KL divergence:
 * a logit row's log-softmax, llama.cpp's compressed record of it (the unit
 * of its .kld base files), and the comparison of a row with such a record.
 *
 * A record is lp_record_u16(n_vocab) uint16 words: two floats (the scale
 * and the smallest log-probability kept) then one word per token, the
 * token's log-probability as (value - min) / scale rounded, 0 below min;
 * min is at most 16 below the largest log-probability (smaller ones do not
 * matter to any figure). The layout and rounding are llama.cpp's, so a
 * record either tool writes, the other reads.
 */
#ifndef SW_EVAL_LOGPROB_H
#define SW_EVAL_LOGPROB_H

#include <stddef.h>
#include <stdint.h>

/* uint16 words in one record: 4 (two floats) + n_vocab rounded up to even. */
static inline size_t lp_record_u16(uint32_t n_vocab) {
    return 2 * (((size_t)n_vocab + 1) / 2) + 4;
}

/* Writes the record of `logits` (n_vocab) into rec; returns the negative
 * log-likelihood of token `tok`. */
double lp_record_write(const float *logits, uint32_t n_vocab, int32_t tok, uint16_t *rec);

/* Negative log-likelihood of `tok` under `logits` alone. */
double lp_nll(const float *logits, uint32_t n_vocab, int32_t tok);

/* Running sums over compared positions (llama.cpp's set of figures). */
typedef struct lp_sums {
    double nll, nll2, nll_base, nll_base2, nll_nll_base;
    double kld, kld2;
    double p_diff, p_diff2, p_diff4;
    uint64_t same_top, count;
} lp_sums;

/* Compares `logits` with the base record of the same position for next
 * token `tok`: adds to s, and gives this position's KL(base || logits) in
 * *kld and p(tok) - p_base(tok) in *p_diff. */
void lp_compare(const float *logits, uint32_t n_vocab, const uint16_t *rec, int32_t tok,
                lp_sums *s, float *kld, float *p_diff);

#endif
