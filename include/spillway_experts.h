/*
 * spillway_experts.h — the expert cache of a Gemma 4 mixture-of-experts
 * model (issue 38), as spillway.h's options and report carry it.
 * Included by spillway.h; not meant to be included alone.
 *
 * A device layer whose experts live on the host (-ncmoe, --place
 * experts:...) may keep `slots` of them in device memory: each slot one
 * expert's gate/up and down in its stored type. Each forward, the experts
 * a layer's tokens route to are hits (computed on the device from their
 * slots) or misses; per missed expert the engine either copies it into a
 * slot (evicting per `policy`) and computes it on the device, or computes
 * it on the host where it lives, whichever the cost model says is faster
 * for the tokens routed to it (`copy` overrides); `prefetch` guesses the
 * next layer's experts while this one runs. The cache never changes
 * a logit on the sim (bit-identical to the cpu backend).
 *
 *   sw_plan_options o = sw_plan_options_default();
 *   o.n_cpu_moe = 30;  o.experts.slots = -1;  (auto: what the fixed part leaves)
 */
#ifndef SPILLWAY_EXPERTS_H
#define SPILLWAY_EXPERTS_H

#include <stdint.h>

typedef struct sw_expert_options {
    int slots;           /* per cached layer: 0 none (default), N, -1 auto (what the
                          * device budget leaves after the fixed part, at most all) */
    const char *policy;  /* "lru" (default) or "lfu-decay" */
    const char *copy;    /* misses: "auto" (default: the cost model per expert and
                          * step), "always" (copy into a slot), "never" (host) */
    int prefetch;        /* 1: after each device layer, guess the next cached
                          * layer's experts (its router on this layer's output)
                          * and copy them into free or cold slots ahead of use */
    double hit_rate;     /* the share of needed experts the predictions take to be
                          * in a slot: 0 (default) slots/n_expert, what evenly
                          * spread routing gives; a replayed trace's measured rate
                          * (spillway bench --expert-trace) is better */
} sw_expert_options;

/* What the cache did (sw_report.experts); all 0 without a cache. Counts
 * are over cached layers' steps (one forward's layer): needed = the
 * distinct experts its tokens routed to = hits + misses; misses are
 * copied or computed on the host (host_experts, over host_tokens
 * expert-token pairs). */
typedef struct sw_expert_report {
    uint32_t slots, layers;          /* slots per cached layer; cached layers */
    uint64_t cache_bytes;            /* device bytes of the slots */
    uint64_t steps, routings;        /* layer steps; (token, expert) routings */
    uint64_t needed, hits, misses;
    uint64_t copied, copied_bytes;   /* misses copied into a slot, and their bytes */
    uint64_t host_experts, host_tokens;
    uint64_t prefetched, prefetch_hits; /* experts prefetched (their bytes are in
                                         * copied_bytes); ... needed at the next step */
    uint32_t copy_source;            /* where copies came from: SW_EXPERT_COPY_* */
    uint64_t staging_bytes;          /* the pinned staging allocated (0: none) */
} sw_expert_report;

/* sw_expert_report.copy_source */
enum {
    SW_EXPERT_COPY_NONE = 0,         /* no copies (no cache, or --expert-copy never) */
    SW_EXPERT_COPY_REGISTERED,       /* the mapping, registered with the device: no host copy */
    SW_EXPERT_COPY_PINNED_STAGING,   /* through the plan's pinned staging buffers */
    SW_EXPERT_COPY_PAGEABLE_STAGING, /* the same buffers, the lock refused (pageable) */
    SW_EXPERT_COPY_PAGEABLE          /* straight from the mapping at the pageable rate */
};

#endif
