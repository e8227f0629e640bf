/*
 * precision_util.h — what the precision tests (test_precision.c on the
 * tiny models, test_precision_model.c on the default model) share: running
 * an engine over a prompt with every position's logits, comparing logit
 * sets, and reading a run's memory facts from the engine and its plan.
 */
#ifndef SW_TESTS_PRECISION_UTIL_H
#define SW_TESTS_PRECISION_UTIL_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/engine_internal.h"

/* What one engine run produced and what it held. */
typedef struct prec_run {
    sw_status st;
    float *logits;              /* (n_tokens, n_vocab), malloc'd; NULL on failure */
    uint32_t n_tokens, n_vocab;
    sw_report rep;
    uint32_t n_resident, n_streamed, n_host;
    bool stream_pinned;
    bool streams_from_pinned;       /* every streamed layer's copies come from
                                     * the engine's pinned buffer */
    uint64_t plan_kv_device_bytes;  /* BUF_KV on the device */
    uint64_t plan_converted_bytes;  /* BUF_CONVERTED + BUF_STAGING */
    uint64_t weights_bytes;         /* plan_model_total_bytes (after --weights) */
    uint64_t stored_bytes;          /* ... as stored */
    uint32_t n_converted, n_kept;   /* matrices --weights converted / kept */
} prec_run;

/* Plan options with 2 threads, context n_ctx, chunk n_batch, backend
 * (NULL = cpu), device budget, KV type and weights (NULL = defaults). */
sw_plan_options prec_options(const char *backend_name, uint64_t device_mem, uint32_t n_ctx,
                               uint32_t n_batch, const char *kv, const char *weights);

/* Plans and creates an engine, evaluates ids (all logits, in the engine's chunks)
 * then n_decode greedy steps (their logits appended), records the facts
 * and destroys the engine. r->st says whether creation worked. */
prec_run prec_run_prompt(const sw_model *m, const sw_plan_options *o, const int32_t *ids,
                         uint32_t n, uint32_t n_decode);
void prec_run_free(prec_run *r);

/* How far logits b are from a: max |b - a|, the same relative to the
 * largest |a| of its row, and rows whose argmax agree. */
typedef struct prec_diff {
    double max_abs, max_rel;
    uint32_t same_argmax, n_rows;
} prec_diff;

void prec_compare(const float *a, const float *b, uint32_t n_rows, uint32_t n_vocab,
                  prec_diff *d);

int32_t prec_argmax(const float *x, uint32_t n);

#endif
