/*
 * sampler.h — what speculative decoding needs of a sampler beyond
 * spillway.h's sw_sampler_sample: the distribution it draws from, and its
 * random stream. Rejection sampling (sched/verify.c) accepts a draft with
 * the target's probability of it, so that sampling with drafts leaves the
 * target's distribution unchanged; both distributions come from here, so
 * temperature, top-k, top-p and min-p apply to them the same way.
 */
#ifndef SW_ENGINE_SAMPLER_H
#define SW_ENGINE_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>

#include "spillway.h"

/* The distribution sw_sampler_sample(s, logits) draws from: its n
 * candidates (returned), best first, with ids sampler_dist_id(s, i) and
 * probabilities sampler_dist_p(s, i) summing to 1 (greedy: the argmax
 * alone, probability 1). Valid until the next call on s. */
uint32_t sampler_dist(sw_sampler *s, const float *logits);
int32_t sampler_dist_id(const sw_sampler *s, uint32_t i);
double sampler_dist_p(const sw_sampler *s, uint32_t i);

/* The next uniform number in [0, 1) of the sampler's own stream. */
double sampler_uniform(sw_sampler *s);

/* Whether the sampler takes the argmax (temperature 0). */
bool sampler_is_greedy(const sw_sampler *s);

#endif
