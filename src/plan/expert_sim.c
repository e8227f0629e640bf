/*
 * expert_sim.c — the expert cache's contents and policies (expert_sim.h).
 * Per layer: which experts sit in the slots, when each was last used (a
 * step counter of that layer) and its decayed use count. Small arrays of
 * n_expert entries per layer; a step is O(n + n_expert).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "plan/expert_sim.h"
#include "util/error.h"

typedef struct layer_state {
    uint8_t *held;        /* (n_expert) 1: in a slot */
    uint8_t *seen;        /* (n_expert) this step's mark */
    uint64_t *last;       /* (n_expert) the step it was last used, +1 (0: never) */
    double *score;        /* (n_expert) LFU-decay's count */
    uint32_t n_held;
    uint64_t step;
} layer_state;

struct expert_cache {
    uint32_t n_layer, n_expert, slots;
    expert_policy policy;
    double decay;
    layer_state *l;
    uint32_t *need;       /* (n_expert) this step's distinct experts */
    expert_stats st;
};

const char *expert_policy_name(expert_policy p) {
    return p == EXPERT_LFU_DECAY ? "lfu-decay" : "lru";
}

sw_status expert_policy_parse(const char *s, expert_policy *out) {
    if (s != NULL && !strcmp(s, "lru")) {
        *out = EXPERT_LRU;
        return SW_OK;
    }
    if (s != NULL && (!strcmp(s, "lfu-decay") || !strcmp(s, "lfu"))) {
        *out = EXPERT_LFU_DECAY;
        return SW_OK;
    }
    return sw_errorf(SW_ERR_ARG, "expert cache policy '%s': lru or lfu-decay", s ? s : "");
}

sw_status expert_cache_create(uint32_t n_layer, uint32_t n_expert, uint32_t slots,
                              expert_policy policy, double decay, expert_cache **out) {
    *out = NULL;
    if (n_layer == 0 || n_expert == 0 || slots == 0 || slots > n_expert)
        return sw_errorf(SW_ERR_ARG, "an expert cache of %u slots for %u experts in %u "
                         "layers: 1 to %u slots", slots, n_expert, n_layer, n_expert);
    if (!(decay > 0.0 && decay <= 1.0))
        return sw_errorf(SW_ERR_ARG, "expert cache decay %g: in (0, 1]", decay);
    expert_cache *c = calloc(1, sizeof *c);
    if (c == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for an expert cache");
    *c = (expert_cache){.n_layer = n_layer, .n_expert = n_expert, .slots = slots,
                        .policy = policy, .decay = decay};
    c->l = calloc(n_layer, sizeof *c->l);
    c->need = malloc(n_expert * sizeof *c->need);
    bool ok = c->l != NULL && c->need != NULL;
    for (uint32_t il = 0; ok && il < n_layer; il++) {
        layer_state *l = &c->l[il];
        l->held = calloc(n_expert, 1);
        l->seen = calloc(n_expert, 1);
        l->last = calloc(n_expert, sizeof *l->last);
        l->score = calloc(n_expert, sizeof *l->score);
        ok = l->held && l->seen && l->last && l->score;
    }
    if (!ok) {
        expert_cache_destroy(c);
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for an expert cache of %u "
                         "layers", n_layer);
    }
    *out = c;
    return SW_OK;
}

void expert_cache_destroy(expert_cache *c) {
    if (c == NULL)
        return;
    for (uint32_t il = 0; c->l != NULL && il < c->n_layer; il++) {
        free(c->l[il].held);
        free(c->l[il].seen);
        free(c->l[il].last);
        free(c->l[il].score);
    }
    free(c->l);
    free(c->need);
    free(c);
}

int expert_cache_holds(const expert_cache *c, uint32_t il, uint32_t e) {
    return il < c->n_layer && e < c->n_expert && c->l[il].held[e];
}

void expert_cache_stats(const expert_cache *c, expert_stats *out) {
    *out = c->st;
}

/* The held expert not needed this step that the policy gives up. */
static uint32_t victim(const expert_cache *c, const layer_state *l) {
    uint32_t v = UINT32_MAX;
    for (uint32_t e = 0; e < c->n_expert; e++) {
        if (!l->held[e] || l->seen[e])
            continue;
        if (v == UINT32_MAX) {
            v = e;
            continue;
        }
        const bool older = l->last[e] < l->last[v];
        if (c->policy == EXPERT_LRU ? older
                                    : l->score[e] < l->score[v] ||
                                          (l->score[e] == l->score[v] && older))
            v = e;
    }
    return v;
}

uint32_t expert_cache_step(expert_cache *c, uint32_t il, const uint32_t *ids, uint32_t n) {
    if (il >= c->n_layer)
        return 0;
    layer_state *l = &c->l[il];
    uint32_t n_need = 0, misses = 0;
    l->step++;
    for (uint32_t i = 0; i < n; i++) { /* routings, and the distinct experts */
        const uint32_t e = ids[i];
        if (e >= c->n_expert)
            continue;
        c->st.routings++;
        c->st.routing_hits += l->held[e];
        if (!l->seen[e]) {
            l->seen[e] = 1;
            c->need[n_need++] = e;
        }
    }
    if (c->policy == EXPERT_LFU_DECAY)
        for (uint32_t e = 0; e < c->n_expert; e++)
            l->score[e] *= c->decay;
    for (uint32_t i = 0; i < n_need; i++) {
        const uint32_t e = c->need[i];
        if (!l->held[e]) {
            misses++;
            /* full: the policy's victim among those this step does not need
             * (a step needing more than the slots keeps the first it could) */
            const uint32_t v = l->n_held == c->slots ? victim(c, l) : UINT32_MAX;
            if (v != UINT32_MAX) {
                l->held[v] = 0;
                l->n_held--;
            }
            if (l->n_held < c->slots) {
                l->held[e] = 1;
                l->n_held++;
            }
        }
        l->last[e] = l->step;
        l->score[e] += 1.0;
    }
    for (uint32_t i = 0; i < n_need; i++)
        l->seen[c->need[i]] = 0;
    c->st.steps++;
    c->st.needed += n_need;
    c->st.misses += misses;
    c->st.hits += n_need - misses;
    return misses;
}
