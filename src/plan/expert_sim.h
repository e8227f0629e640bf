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

/* LFU-decay's factor per step where none is given (bench's --decay default,
 * the engine's cache). */
#define EXPERT_DECAY_DEFAULT 0.9

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

/* The same step in parts, for the engine, which decides per missed expert
 * whether it is brought in (copied into a slot) or computed elsewhere:
 * begin counts the step (as expert_cache_step: a miss is a needed expert
 * not held at the step's start) and returns its distinct experts; admit
 * puts missed expert e into a slot — a free one, else the policy's victim
 * among the experts this step does not need — and returns the slot (-1:
 * every slot holds an expert this step needs); end closes the step.
 * expert_cache_step is begin, admit of each miss, end: the one policy. */
uint32_t expert_cache_begin(expert_cache *c, uint32_t il, const uint32_t *ids, uint32_t n);
int32_t expert_cache_admit(expert_cache *c, uint32_t il, uint32_t e);
void expert_cache_end(expert_cache *c, uint32_t il);

/* Prefetch between steps: puts the guessed experts (ids, n; repeats
 * allowed) that layer il does not hold into free slots or the policy's
 * victims among the experts not guessed, at most `max` of them, counting
 * no step and no use. Fills admitted[i] and slots[i] (capacity max);
 * returns how many. */
uint32_t expert_cache_prefetch(expert_cache *c, uint32_t il, const uint32_t *ids, uint32_t n,
                               uint32_t max, uint32_t *admitted, int32_t *slots);

/* Empties every slot (the engine after a failed forward: what the copies
 * left is unknown); uses, scores and stats stay. */
void expert_cache_clear(expert_cache *c);

/* Expert e's slot in layer il (0 .. slots - 1), or -1 when not held. */
int32_t expert_cache_slot(const expert_cache *c, uint32_t il, uint32_t e);

/* Whether layer il holds expert e now. */
int expert_cache_holds(const expert_cache *c, uint32_t il, uint32_t e);

void expert_cache_stats(const expert_cache *c, expert_stats *out);

/* "lru" / "lfu-decay", or parses them; SW_ERR_ARG naming the choices. */
const char *expert_policy_name(expert_policy p);
sw_status expert_policy_parse(const char *s, expert_policy *out);

#endif
