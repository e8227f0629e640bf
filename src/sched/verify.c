/*
 * verify.c — turning a verify forward's rows into output tokens (spec.h):
 * greedy, the argmax while it agrees with the drafts; sampled, rejection
 * sampling (Leviathan et al. 2023; Chen et al. 2023): keep draft d with
 * probability min(1, p(d) / q(d)), else draw from max(0, p - q)
 * renormalised, and after k kept drafts draw a bonus token from p. Each
 * output token is then distributed as the target's own sampler would
 * have drawn it; p and q are the samplers' filtered distributions.
 */
#include <string.h>

#include "engine/sampler.h"
#include "sched/spec.h"

/* p of token id among the sampler's n candidates (0 outside them). */
static double p_of(const sw_sampler *s, uint32_t n, int32_t id) {
    for (uint32_t i = 0; i < n; i++)
        if (sampler_dist_id(s, i) == id)
            return sampler_dist_p(s, i);
    return 0.0;
}

/* A token from the candidates' weights max(0, p - q) (q NULL: p itself),
 * the draft `skip` getting none when q is NULL: an n-gram draft holds all
 * of q's mass. Falls back to p when the residual is empty, which only
 * rounding can make happen (p <= q everywhere means p = q, where every
 * draft is kept). */
static int32_t draw(sw_sampler *s, uint32_t n, const float *q, int32_t skip) {
    double total = 0.0;
    for (uint32_t i = 0; i < n; i++) {
        const int32_t id = sampler_dist_id(s, i);
        const double qi = q != NULL ? q[id] : id == skip ? 1.0 : 0.0;
        const double w = sampler_dist_p(s, i) - qi;
        total += w > 0.0 ? w : 0.0;
    }
    const bool residual = total > 0.0;
    if (!residual)
        total = 1.0;
    double r = sampler_uniform(s) * total;
    for (uint32_t i = 0; i < n; i++) {
        const int32_t id = sampler_dist_id(s, i);
        const double qi = !residual ? 0.0 : q != NULL ? q[id] : id == skip ? 1.0 : 0.0;
        const double w = sampler_dist_p(s, i) - qi;
        r -= w > 0.0 ? w : 0.0;
        if (r < 0.0)
            return id;
    }
    /* rounding left r >= 0: the last candidate with any weight */
    for (uint32_t i = n; i-- > 0;) {
        const int32_t id = sampler_dist_id(s, i);
        const double qi = !residual ? 0.0 : q != NULL ? q[id] : id == skip ? 1.0 : 0.0;
        if (sampler_dist_p(s, i) - qi > 0.0)
            return id;
    }
    return sampler_dist_id(s, 0);
}

uint32_t spec_verify(sw_sampler *s, const float *rows, uint32_t n_vocab,
                     const int32_t *drafts, uint32_t k, const float *q, int32_t *out) {
    for (uint32_t i = 0; i <= k; i++) {
        const float *row = rows + (size_t)i * n_vocab;
        if (sampler_is_greedy(s)) {
            out[i] = sw_sampler_sample(s, row);
            if (i == k || out[i] != drafts[i])
                return i + 1;
            continue;
        }
        const uint32_t n = sampler_dist(s, row);
        if (i == k) { /* every draft kept: a bonus token from p */
            out[i] = draw(s, n, NULL, -1);
            return i + 1;
        }
        const float *q_row = q != NULL ? q + (size_t)i * n_vocab : NULL;
        const double pd = p_of(s, n, drafts[i]);
        const double qd = q_row != NULL ? q_row[drafts[i]] : 1.0;
        if (qd > 0.0 && sampler_uniform(s) * qd < pd) { /* u < p/q, without dividing */
            out[i] = drafts[i];
            continue;
        }
        out[i] = draw(s, n, q_row, drafts[i]);
        return i + 1;
    }
    return k + 1; /* not reached: the loop returns at i == k */
}

int32_t spec_sample_draft(sw_sampler *sampler, const float *logits, uint32_t n_vocab,
                          float *q_row) {
    const uint32_t n = sampler_dist(sampler, logits);
    memset(q_row, 0, (size_t)n_vocab * sizeof *q_row);
    for (uint32_t i = 0; i < n; i++)
        q_row[sampler_dist_id(sampler, i)] = (float)sampler_dist_p(sampler, i);
    if (sampler_is_greedy(sampler))
        return sampler_dist_id(sampler, 0);
    return draw(sampler, n, NULL, -1);
}
