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
    int32_t *slot_of;     /* (n_expert) its slot, -1 none */
    int32_t *occupant;    /* (slots) the expert in each slot, -1 none */
    uint32_t n_held;
    uint64_t step;
    uint32_t n_need;      /* this step's distinct experts (begin .. end) */
} layer_state;

struct expert_cache {
    uint32_t n_layer, n_expert, slots;
    expert_policy policy;
    double decay;
    layer_state *l;
    uint32_t *need;       /* (n_layer * n_expert) each layer's step's distinct experts */
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
    c->need = malloc((size_t)n_layer * n_expert * sizeof *c->need);
    bool ok = c->l != NULL && c->need != NULL;
    for (uint32_t il = 0; ok && il < n_layer; il++) {
        layer_state *l = &c->l[il];
        l->held = calloc(n_expert, 1);
        l->seen = calloc(n_expert, 1);
        l->last = calloc(n_expert, sizeof *l->last);
        l->score = calloc(n_expert, sizeof *l->score);
        l->slot_of = malloc(n_expert * sizeof *l->slot_of);
        l->occupant = malloc(slots * sizeof *l->occupant);
        ok = l->held && l->seen && l->last && l->score && l->slot_of && l->occupant;
        for (uint32_t e = 0; ok && e < n_expert; e++)
            l->slot_of[e] = -1;
        for (uint32_t s = 0; ok && s < slots; s++)
            l->occupant[s] = -1;
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
        free(c->l[il].slot_of);
        free(c->l[il].occupant);
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

uint32_t expert_cache_begin(expert_cache *c, uint32_t il, const uint32_t *ids, uint32_t n) {
    if (il >= c->n_layer)
        return 0;
    layer_state *l = &c->l[il];
    uint32_t *need = c->need + (size_t)il * c->n_expert;
    uint32_t n_need = 0, hits = 0;
    l->step++;
    for (uint32_t i = 0; i < n; i++) { /* routings, and the distinct experts */
        const uint32_t e = ids[i];
        if (e >= c->n_expert)
            continue;
        c->st.routings++;
        c->st.routing_hits += l->held[e];
        if (!l->seen[e]) {
            l->seen[e] = 1;
            need[n_need++] = e;
        }
    }
    if (c->policy == EXPERT_LFU_DECAY)
        for (uint32_t e = 0; e < c->n_expert; e++)
            l->score[e] *= c->decay;
    /* every needed expert is used now, held or not; victims are chosen among
     * the others, so the order of these updates and the admissions is free */
    for (uint32_t i = 0; i < n_need; i++) {
        l->last[need[i]] = l->step;
        l->score[need[i]] += 1.0;
        hits += l->held[need[i]];
    }
    l->n_need = n_need;
    c->st.steps++;
    c->st.needed += n_need;
    c->st.hits += hits;
    c->st.misses += n_need - hits;
    return n_need;
}

int32_t expert_cache_slot(const expert_cache *c, uint32_t il, uint32_t e) {
    return il < c->n_layer && e < c->n_expert ? c->l[il].slot_of[e] : -1;
}

int32_t expert_cache_admit(expert_cache *c, uint32_t il, uint32_t e) {
    if (il >= c->n_layer || e >= c->n_expert)
        return -1;
    layer_state *l = &c->l[il];
    if (l->held[e])
        return l->slot_of[e];
    int32_t slot = -1;
    if (l->n_held < c->slots) {
        for (uint32_t s = 0; slot < 0 && s < c->slots; s++)
            slot = l->occupant[s] < 0 ? (int32_t)s : -1;
    } else {
        /* full: the policy's victim among those this step does not need (a
         * step needing more than the slots keeps the first it could) */
        const uint32_t v = victim(c, l);
        if (v == UINT32_MAX)
            return -1;
        slot = l->slot_of[v];
        l->held[v] = 0;
        l->slot_of[v] = -1;
        l->n_held--;
    }
    l->held[e] = 1;
    l->slot_of[e] = slot;
    l->occupant[slot] = (int32_t)e;
    l->n_held++;
    return slot;
}

void expert_cache_end(expert_cache *c, uint32_t il) {
    if (il >= c->n_layer)
        return;
    layer_state *l = &c->l[il];
    const uint32_t *need = c->need + (size_t)il * c->n_expert;
    for (uint32_t i = 0; i < l->n_need; i++)
        l->seen[need[i]] = 0;
    l->n_need = 0;
}

uint32_t expert_cache_prefetch(expert_cache *c, uint32_t il, const uint32_t *ids, uint32_t n,
                               uint32_t max, uint32_t *admitted, int32_t *slots) {
    if (il >= c->n_layer)
        return 0;
    layer_state *l = &c->l[il];
    uint32_t *need = c->need + (size_t)il * c->n_expert;
    uint32_t n_guess = 0, n_in = 0;
    for (uint32_t i = 0; i < n; i++) /* guessed: not victims */
        if (ids[i] < c->n_expert && !l->seen[ids[i]]) {
            l->seen[ids[i]] = 1;
            need[n_guess++] = ids[i];
        }
    for (uint32_t i = 0; i < n_guess && n_in < max; i++) {
        if (l->held[need[i]])
            continue;
        const int32_t s = expert_cache_admit(c, il, need[i]);
        if (s < 0)
            break;
        admitted[n_in] = need[i];
        slots[n_in++] = s;
    }
    for (uint32_t i = 0; i < n_guess; i++)
        l->seen[need[i]] = 0;
    return n_in;
}

void expert_cache_clear(expert_cache *c) {
    for (uint32_t il = 0; il < c->n_layer; il++) {
        layer_state *l = &c->l[il];
        memset(l->held, 0, c->n_expert);
        memset(l->seen, 0, c->n_expert);
        for (uint32_t e = 0; e < c->n_expert; e++)
            l->slot_of[e] = -1;
        for (uint32_t s = 0; s < c->slots; s++)
            l->occupant[s] = -1;
        l->n_held = 0;
        l->n_need = 0;
    }
}

uint32_t expert_cache_step(expert_cache *c, uint32_t il, const uint32_t *ids, uint32_t n) {
    if (il >= c->n_layer)
        return 0;
    const uint32_t n_need = expert_cache_begin(c, il, ids, n);
    const uint32_t *need = c->need + (size_t)il * c->n_expert;
    uint32_t misses = 0;
    for (uint32_t i = 0; i < n_need; i++)
        if (!c->l[il].held[need[i]]) {
            misses++;
            (void)expert_cache_admit(c, il, need[i]);
        }
    expert_cache_end(c, il);
    return misses;
}
