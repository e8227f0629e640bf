/*
 * spec.h — speculative decoding inside the scheduler: where drafts come
 * from (draft.c: the sequence's own earlier n-grams, or a draft model's
 * engine; assist_draft.c: a Gemma 4 assistant over the target's caches)
 * and how a verify forward's rows turn into output tokens
 * (verify.c). The scheduler puts a lane's last token and its k drafts in
 * one forward of the target (the batched path: a streamed layer crosses
 * the link once for all k+1), keeps the agreeing prefix plus one token,
 * and rewinds the sequence over the rest; nothing below the scheduler
 * knows that tokens are speculative.
 *
 * Exact: with greedy sampling the tokens are those of plain decoding (the
 * verify forward's rows are the bits a one-token forward gives); sampled,
 * rejection sampling leaves the target's distribution unchanged.
 */
#ifndef SW_SCHED_SPEC_H
#define SW_SCHED_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "spillway.h"

/* ---- drafts from the sequence's own n-grams (prompt lookup) --------------- */

/* The longest suffix of toks[0..n) of n_max down to n_min tokens that
 * also occurs earlier; writes into out the k tokens that followed its
 * latest earlier occurrence, continued past the sequence's end by the
 * drafts themselves (a text repeating with a short period drafts whole
 * periods). Returns k, or 0 when nothing matches. */
uint32_t spec_ngram_draft(const int32_t *toks, size_t n, uint32_t n_min, uint32_t n_max,
                          uint32_t k, int32_t *out);

/* ---- drafts from a draft model --------------------------------------------- */

typedef struct spec_model spec_model;

/* One lane to draft for: the target sequence's tokens (the last one not
 * yet evaluated by the target) and what the draft model has of them. */
typedef struct spec_lane {
    uint32_t lane;            /* the draft model's sequence of this lane */
    const sw_session *session;/* the target's sequence (a Gemma 4 assistant reads it) */
    const int32_t *toks;
    size_t n_toks;
    uint32_t k;               /* drafts wanted (>= 1) */
    sw_sampler *sampler;      /* the draft's sampler: greedy, or the request's options */
    int32_t *out;             /* (k) the drafts */
    float *q;                 /* (k, n_vocab) each draft's distribution (sampled), or NULL */
} spec_lane;

/* Takes every sequence of engine (n_lanes of them at least) for n_lanes
 * lanes. Errors: SW_ERR_ARG (too few sequences, a vocabulary that differs
 * from the target's: its target_vocab tokens, their pieces), OOM. */
sw_status spec_model_create(sw_engine *engine, const sw_model *model, const sw_model *target,
                            uint32_t target_vocab, uint32_t n_lanes, spec_model **out);
void spec_model_destroy(spec_model *m);
/* The most drafts one lane can take per verify: the draft's forward size
 * allows k - 1 rewound positions at most. */
uint32_t spec_model_max_draft(const spec_model *m);
/* Forgets lane's sequence past its first `keep` tokens (a new request:
 * 0; a continued one: what it holds). Errors: the engine's. */
sw_status spec_model_reset_lane(spec_model *m, uint32_t lane, size_t keep);
/* Drafts for n lanes: each catches up on the tokens its draft sequence
 * has not seen, then the draft model generates k tokens, the lanes
 * batched in each of its forwards. */
sw_status spec_model_draft(spec_model *m, spec_lane *lanes, uint32_t n);
/* After a verify of lane's k drafts kept `accepted` of them: the draft
 * sequence keeps what still agrees with the target's tokens. */
sw_status spec_model_accept(spec_model *m, uint32_t lane, size_t n_toks_before, uint32_t k,
                            uint32_t accepted);

/* ---- drafts from a Gemma 4 assistant --------------------------------------- */

/* A Gemma 4 assistant (engine/assist.h) drafting over the target's own
 * caches: no sequences of its own. Each lane keeps the target's final
 * hidden row of the forward row that gave its last token (the target's
 * forwards write them where spec_assist_hidden_rows points); a round's
 * first step starts from it and the lane's last token, each later step
 * from the previous draft and the assistant's own hidden row. */
typedef struct spec_assist spec_assist;

/* Errors: engine_assist_create's, OOM. */
sw_status spec_assist_create(sw_engine *target, const sw_model *assistant, uint32_t n_lanes,
                             spec_assist **out);
void spec_assist_destroy(spec_assist *a);
/* (max tokens per forward, the target's n_embd): where the target's
 * forwards write each logits row's hidden row. */
float *spec_assist_hidden_rows(spec_assist *a);
/* Lane's last token came from row `row` of the last forward. */
void spec_assist_keep(spec_assist *a, uint32_t lane, uint32_t row);
/* Drafts for n lanes, the lanes batched in each step. */
sw_status spec_assist_draft(spec_assist *a, spec_lane *lanes, uint32_t n);

/* ---- verification ---------------------------------------------------------- */

/* The target's tokens for one verified decode: rows (k+1, n_vocab) are
 * the target's logits after the last token and after each of the k
 * drafts. Writes the tokens to emit into out (k+1 room) and returns how
 * many: the drafts kept, then one more (the correction, or after k kept a
 * bonus token). Greedy target sampler: the argmax of each row while it is
 * the draft. Sampled: draft i is kept with probability min(1, p(d)/q(d))
 * (q: row i of q, or all its mass on the draft when q is NULL, as for
 * n-gram drafts); a rejection samples max(0, p - q), renormalised. Both p
 * and q are the sampler's distributions (temperature, top-k, top-p,
 * min-p), and every random draw is the target sampler's. */
uint32_t spec_verify(sw_sampler *target, const float *rows, uint32_t n_vocab,
                     const int32_t *drafts, uint32_t k, const float *q, int32_t *out);

/* Row i of q for a draft sampled from sampler's distribution of logits:
 * the distribution written densely into q_row (n_vocab), and the token
 * drawn from it with the sampler's stream. */
int32_t spec_sample_draft(sw_sampler *sampler, const float *logits, uint32_t n_vocab,
                          float *q_row);

#endif
