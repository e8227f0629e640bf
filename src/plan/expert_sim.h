/*
 * expert_sim.h — a per-layer cache of Gemma 4 experts in device memory,
 * as a model of what it holds: N slots per layer, and a replacement
 * policy. Each step (one forward) a layer needs a set of experts (the
 * union of its tokens' routings); those in the cache are hits, the others
 * misses, brought in by evicting the policy's victims. No weights: the
 * replay of a routing trace (`spillway bench --expert-trace`) and the
 * planner's expected hit rate use it, and so will the engine's cache,
 * so that the three agree.
 *
 * Policies (issue 38 measures them against each other on a trace):
 *   LRU        evicts the expert used longest ago;
 *   LFU-decay  each expert's score decays by `decay` per step of its
 *              layer and gains 1 per use; evicts the lowest score (ties:
 *              the one used longest ago). Routing has short-term reuse
 *              and no stable hot set, so the decay forgets old favourites.
 */
#ifndef SW_PLAN_EXPERT_SIM_H
#define SW_PLAN_EXPERT_SIM_H

#include <stdint.h>

#include "spillway.h"

typedef enum expert_policy { EXPERT_LRU = 0, EXPERT_LFU_DECAY = 1 } expert_policy;

typedef struct expert_cache expert_cache;

typedef struct expert_stats {
    uint64_t steps;       /* layer steps (a forward's layer with experts) */
    uint64_t needed;      /* distinct experts needed, summed over steps */
    uint64_t hits;        /* ... found in the cache */
    uint64_t misses;      /* ... brought in (needed - hits) */
    uint64_t routings;    /* (token, expert) routings seen */
    uint64_t routing_hits;/* ... whose expert was in the cache at the step's start */
} expert_stats;

/* A cache of `slots` experts per layer (1..n_expert) for n_layer layers
 * of n_expert experts. decay: LFU-decay's factor in (0, 1] (ignored by
 * LRU). Errors: SW_ERR_ARG, SW_ERR_OOM_HOST. */
sw_status expert_cache_create(uint32_t n_layer, uint32_t n_expert, uint32_t slots,
                              expert_policy policy, double decay, expert_cache **out);
void expert_cache_destroy(expert_cache *c);

/* One step of layer il: its n routings (expert ids, tokens' choices in
 * any order, repeats allowed). Counts into the cache's stats; returns the
 * misses of this step. Ids out of range are ignored (a caller checks). */
uint32_t expert_cache_step(expert_cache *c, uint32_t il, const uint32_t *ids, uint32_t n);

/* Whether layer il holds expert e now. */
int expert_cache_holds(const expert_cache *c, uint32_t il, uint32_t e);

void expert_cache_stats(const expert_cache *c, expert_stats *out);

/* "lru" / "lfu-decay", or parses them; SW_ERR_ARG naming the choices. */
const char *expert_policy_name(expert_policy p);
sw_status expert_policy_parse(const char *s, expert_policy *out);

#endif
