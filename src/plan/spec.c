/*
 * spec.c — the cost model of speculative decoding over a plan: what one
 * forward of n tokens costs, and what decoding with k drafts per verify
 * yields at an acceptance rate. A forward's time is the plan's own
 * predictions, linear between its decode pass (n_seq tokens) and its
 * prefill pass (a chunk of n_batch tokens): streamed and host weights are
 * read once per forward whatever its width, compute grows with the
 * tokens. So a link-bound plan verifies 9 tokens for little more than 1,
 * and its best draft length is long; a compute-bound one's is short.
 */
#include <math.h>

#include "plan/plan_api.h"

double sw_plan_forward_seconds(const sw_plan *sp, uint32_t n_tokens) {
    const plan *p = plan_of(sp);
    const double n_seq = p->workload.n_seq ? p->workload.n_seq : 1;
    const double chunk = p->workload.n_batch < p->workload.n_ctx ? p->workload.n_batch
                                                                 : p->workload.n_ctx;
    if (!(p->decode_tokens_per_s > 0.0) || n_tokens == 0)
        return 0.0;
    const double t_dec = n_seq / p->decode_tokens_per_s;
    if (!(p->prefill_tokens_per_s > 0.0) || chunk <= n_seq)
        return t_dec * n_tokens / n_seq;
    const double t_pre = chunk / p->prefill_tokens_per_s;
    const double t = t_dec + (n_tokens - n_seq) * (t_pre - t_dec) / (chunk - n_seq);
    return t > 0.0 ? t : t_dec * n_tokens / n_seq;
}

double sw_plan_speculative_tokens_per_s(const sw_plan *sp, uint32_t k, double acceptance,
                                        double draft_s) {
    const double a = acceptance < 0.0 ? 0.0 : acceptance > 1.0 ? 1.0 : acceptance;
    /* expected tokens per verify: drafts kept before the first rejection,
     * plus the target's own token */
    const double e = a >= 1.0 ? k + 1.0 : (1.0 - pow(a, k + 1.0)) / (1.0 - a);
    const double t = sw_plan_forward_seconds(sp, k + 1) + k * draft_s;
    return t > 0.0 ? e / t : 0.0;
}

uint32_t sw_plan_best_draft_max(const sw_plan *sp, double acceptance, double draft_s,
                                uint32_t k_max) {
    uint32_t best = 1;
    double best_tps = 0.0;
    for (uint32_t k = 1; k <= k_max; k++) {
        const double tps = sw_plan_speculative_tokens_per_s(sp, k, acceptance, draft_s);
        if (tps > best_tps * 1.01) { /* a longer draft must earn its keep */
            best = k;
            best_tps = tps;
        }
    }
    return best;
}

double sw_plan_drafter_seconds(const sw_plan *sp, uint64_t bytes) {
    const plan *p = plan_of(sp);
    const double rate = p->budget.has_device && p->budget.drafter_bytes
                            ? p->rates.device_mem_Bps
                            : p->rates.host_mem_Bps;
    return rate > 0.0 ? (double)bytes / rate : 0.0;
}
