/*
 * token_lp.h — a request's per-token log-probabilities (logprobs in
 * OpenAI's API): for each output token, log-softmax of the model's logits
 * row that produced it (what `spillway perplexity` scores a text with:
 * before temperature and the other sampling settings) and the most likely
 * alternatives. Recorded only for requests that ask.
 */
#ifndef SW_SCHED_TOKEN_LP_H
#define SW_SCHED_TOKEN_LP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "spillway.h"

typedef struct token_lps {
    sw_token_logprob *v;
    size_t n, cap;
    int top;                 /* alternatives per token; -1: not recorded */
} token_lps;

/* Appends token id's record from its logits row (n_vocab), its piece at
 * byte text_offset of the text. false: out of host memory. */
bool token_lps_add(token_lps *t, const float *row, uint32_t n_vocab, int32_t id,
                   uint32_t text_offset);
void token_lps_free(token_lps *t);

#endif
