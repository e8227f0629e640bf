/*
 * assist.h — a Gemma 4 assistant (Gemma4AssistantForCausalLM, the MTP
 * drafter Google ships for each Gemma 4 size) attached to its target's
 * engine. It keeps no cache: each of its layers attends over the target's
 * cache of the same attention type (the target's last full and last
 * sliding layer that keep one), so it runs on the side where those caches
 * live, with its weights copied there (device) or read in place (host).
 *
 * One draft step for a row (transformers' SinglePositionMultiTokenCandidate-
 * Generator, gemma4_assistant/modeling):
 *   x = pre_proj(concat(target_embed(token) * sqrt(H_target), hidden))
 *   x = the assistant's layers at position q (the token's, which the
 *       target has not evaluated), attending to the target's keys before
 *       q: positions 0..q-1 (full), q-W..q-1 (sliding)
 *   h = rmsnorm(x, output_norm)
 *   hidden' = post_proj(h)            (the next step's hidden)
 *   logits = h · head                 (dense: the tied embedding; no cap)
 *          | centroid-masked: the top centroid_top_k of h · centroids, their
 *            tokens (token_order) scored by the embedding's rows, every
 *            other token at (their least score - 1)
 * The first step of a round takes the bonus token and the target's final
 * hidden state (after its output norm) of the row that produced it; later
 * steps take the previous draft and hidden'. q stays the bonus token's.
 */
#ifndef SW_ENGINE_ASSIST_H
#define SW_ENGINE_ASSIST_H

#include <stdint.h>

#include "spillway.h"

typedef struct engine_assist engine_assist;

/* One row of a draft step. */
typedef struct assist_row {
    const sw_session *session;   /* the target's sequence; the query sits at its
                                  * position (the next one to evaluate) */
    int32_t token;
    const float *hidden;         /* (the target's n_embd) */
} assist_row;

/* Attaches `model` (borrowed; outlives the assistant) to target for up to
 * n_rows rows per step. Errors: SW_ERR_ARG (not a Gemma 4 assistant, a
 * target that is not Gemma 4, a vocabulary, backbone width, head shape or
 * window that does not match the target's, the two caches it reads on
 * different sides), SW_ERR_OOM_HOST, the device's allocation error. */
sw_status engine_assist_create(sw_engine *target, const sw_model *model, uint32_t n_rows,
                               engine_assist **out);
void engine_assist_destroy(engine_assist *a);

/* The target's residual width (a hidden row's floats) and vocabulary. */
uint32_t engine_assist_n_embd(const engine_assist *a);
uint32_t engine_assist_n_vocab(const engine_assist *a);

/* One draft step for n rows (n <= n_rows): logits (n, n_vocab) and the
 * next hidden rows (n, n_embd), both host memory. Errors: SW_ERR_ARG (too
 * many rows, a token out of range, a sequence at position 0), the
 * backend's. */
sw_status engine_assist_step(engine_assist *a, const assist_row *rows, uint32_t n,
                             float *logits, float *hidden);

/* A forward of the target (sw_engine_eval_batch) that also writes, for
 * each row with logits, its final hidden state after the output norm into
 * hidden (n_out, n_embd), the rows an assistant drafts from. */
sw_status engine_eval_batch_hidden(sw_engine *e, const sw_batch_item *items, size_t n,
                                   float *logits, float *hidden);

#endif
