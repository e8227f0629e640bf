/*
 * split_micro.c — whether a split's pass goes faster cut into micro-batches
 * (split.h): m parts of consecutive rows go through the stages one after
 * another, so that while stage k computes part j, stage k - 1 computes
 * part j + 1. A pass of m parts then takes the first part's way through
 * every stage, plus the slowest stage once for each further part:
 *   sum_k t_k(n / m) + (m - 1) * max_k t_k(n / m) + the hops,
 * with t_k(tokens) the cost model's seconds for stage k's placement, as
 * planned, over that many tokens; parts are kept where that is 1.2x faster
 * than the pass whole. Decode reads every weight once per part,
 * so a memory-bound step (a few sequences) stays whole (m = 1); a batch
 * of many sequences, or a prompt's chunk, whose time grows with its
 * tokens, gains from the stages working at once. plan_split_create asks
 * for it only on backends that give a token the same bits in any batch
 * (backend_info.rows_alone: the cpu kernels); elsewhere (cuda, pjrt:
 * kernels chosen by batch size) a pass stays whole, so that a split
 * computes what one device does.
 */
#include <stdlib.h>
#include <string.h>

#include "plan/plan_internal.h"
#include "plan/split.h"
#include "util/error.h"

/* Parts only where the model predicts them this much faster than whole:
 * its error on a pass's compute and memory time is of this order on the
 * sim (bench/results/split_2026-12-07_intel_xeon.md: 16 sequences
 * predicted 12% faster in 2 parts, measured 15% slower). */
#define MICRO_MIN_GAIN 1.2

typedef struct micro_scratch {
    plan_model stage;
    plan_ctx ctx;
    plan_choice c;
} micro_scratch;

/* Stage d's seconds for a pass of `tokens` tokens with its planned
 * placement. */
static double stage_seconds(micro_scratch *x, const plan_model *m, const plan_rates *r,
                            const plan_workload *w, const plan_split *s, uint32_t d, int pass,
                            uint32_t tokens) {
    const plan *p = &s->stage[d];
    plan_workload tw = *w;
    if (pass == PASS_DECODE)
        tw.n_seq = tokens;
    else
        tw.n_batch = tokens;
    if (plan_stage_model(m, s->first[d], s->end[d], &x->stage) != SW_OK)
        return 0; /* cannot happen: the split was planned over these ranges */
    plan_ctx_init(&x->ctx, &x->stage, &p->budget, r, &tw);
    memset(&x->c, 0, sizeof x->c);
    for (uint32_t il = 0; il < x->stage.config.n_layer; il++) {
        x->c.place[il] = p->layer_place[il];
        x->c.experts_host[il] = p->experts_host[il];
    }
    x->c.lm = p->lm_head_place;
    plan_choice_account(&x->ctx, &x->c);
    plan_choice_predict(&x->ctx, &x->c);
    return x->c.pass_s[pass];
}

/* The best part count for a pass of n tokens (1..n_dev), and its seconds. */
static uint32_t best_parts(micro_scratch *x, const plan_model *m, const plan_rates *r,
                           const plan_workload *w, const plan_split *s, int pass, uint32_t n,
                           double *best_s) {
    uint32_t best = 1;
    *best_s = 0;
    for (uint32_t parts = 1; parts <= s->n_dev && parts <= n; parts++) {
        const uint32_t tokens = (n + parts - 1) / parts;
        double sum = 0, slowest = 0;
        for (uint32_t d = 0; d < s->n_dev; d++) {
            const double t = stage_seconds(x, m, r, w, s, d, pass, tokens);
            sum += t;
            slowest = t > slowest ? t : slowest;
        }
        const double total = sum + (parts - 1) * slowest + (s->n_dev - 1) * s->hop_s[pass];
        if (parts == 1 || total * MICRO_MIN_GAIN < *best_s) {
            best = parts;
            *best_s = total;
        }
    }
    return best;
}

sw_status plan_split_micro(const plan_model *m, const plan_rates *r, const plan_workload *w,
                           plan_split *s) {
    micro_scratch *x = malloc(sizeof *x);
    if (x == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory planning a split");
    const uint32_t n_chunk = w->n_batch < w->n_ctx ? w->n_batch : w->n_ctx;
    double decode_s = 0, chunk_s = 0;
    s->decode_parts = best_parts(x, m, r, w, s, PASS_DECODE, w->n_seq, &decode_s);
    s->prefill_parts = best_parts(x, m, r, w, s, PASS_PREFILL, n_chunk, &chunk_s);
    s->decode_parts_tokens_per_s = s->decode_parts > 1 ? w->n_seq / decode_s : 0;
    s->prefill_parts_tokens_per_s = s->prefill_parts > 1 ? n_chunk / chunk_s : 0;
    free(x);
    return SW_OK;
}
