/*
 * plan.c — plan_search(): the placement search (build.c turns what it
 * finds into a plan, or an explanation; suggest.c searches again with
 * other options).
 *
 * The search is exhaustive over a small, explainable family: layers the
 * user did not pin are split by index into a resident prefix, then a
 * streamed run, then a host suffix (R..R S..S H..H), and the LM head is on
 * the device or the host. For each LM-head choice and each host-suffix
 * length it takes the fewest streamed layers that fit (streaming a layer
 * instead of keeping it resident never speeds anything up), predicts the
 * speed (cost.c), and keeps the fastest decode; ties go to faster prefill,
 * then to what a reference accelerator behind the same link would run
 * faster (ties arise on the sim, whose device computes at host speed, so
 * the sim rehearses the placement a real card would get), then more
 * resident layers, more streamed ones, and the LM head on the device. With
 * experts (Gemma 4), each split is tried with the experts of the first N
 * device layers computed by the host from the mapping, for every N (the
 * device then holds the rest of those layers), besides those pinned there.
 * Ties keep the fewest experts on the host (the first N tried). A layer's KV
 * lives where the layer computes (device for resident and streamed layers,
 * host for host layers), as the engine's forward pass requires; so a
 * KV-shared layer (Gemma 4) computes on its cache owner's side.
 *
 * With a device, at least the LM head or one layer must use it (otherwise
 * the cpu backend is the plan to ask for), so a device budget below the
 * smallest such plan fails with SW_ERR_OOM_DEVICE; without one, every
 * layer is on the host and only the host budget can fail.
 */
#include <stdio.h>
#include <string.h>

#include "plan/plan_internal.h"
#include "util/error.h"

/* Times within a part in 10^12 are the same time summed in another order. */
static bool same_time(double a, double b) {
    double d = a > b ? a - b : b - a;
    return d <= 1e-12 * (a > b ? a : b);
}

/* Whether a beats b (see the file comment). */
static bool choice_better(const plan_choice *a, const plan_choice *b) {
    if (!same_time(a->pass_s[PASS_DECODE], b->pass_s[PASS_DECODE]))
        return a->pass_s[PASS_DECODE] < b->pass_s[PASS_DECODE];
    if (!same_time(a->pass_s[PASS_PREFILL], b->pass_s[PASS_PREFILL]))
        return a->pass_s[PASS_PREFILL] < b->pass_s[PASS_PREFILL];
    for (int p = 0; p < 2; p++)
        if (!same_time(a->ref_s[p], b->ref_s[p]))
            return a->ref_s[p] < b->ref_s[p];
    if (a->n_resident != b->n_resident)
        return a->n_resident > b->n_resident;
    if (a->n_streamed != b->n_streamed)
        return a->n_streamed > b->n_streamed;
    return a->lm == PLACE_RESIDENT && b->lm != PLACE_RESIDENT;
}

/* Places the free layers (free_idx, n_free of them): the first n_free -
 * n_stream - n_host resident, then n_stream streamed, then n_host host. */
static void split_free(const uint32_t *free_idx, uint32_t n_free, uint32_t n_stream,
                       uint32_t n_host, plan_choice *c) {
    uint32_t n_res = n_free - n_stream - n_host;
    for (uint32_t k = 0; k < n_free; k++)
        c->place[free_idx[k]] = k < n_res ? PLACE_RESIDENT
                              : k < n_res + n_stream ? PLACE_STREAMED : PLACE_HOST;
}

/* Whether every KV-shared layer computes on the side of the cache it
 * reads (its owner's: a layer's KV lives where it computes). */
static bool kv_sides_agree(const plan_ctx *x, const plan_choice *c) {
    const model_config *m = &x->m->config;
    for (uint32_t il = 0; il < x->n_layer; il++) {
        const uint32_t owner = model_layer_kv_owner(m, il);
        if ((c->place[il] == PLACE_HOST) != (c->place[owner] == PLACE_HOST))
            return false;
    }
    return true;
}

/* Checks one candidate against the budgets, records the minima for the
 * failure message, and keeps it if it fits and is best. Returns whether it
 * fits. */
static bool consider(const plan_ctx *x, plan_choice *c, search_result *res) {
    if (!kv_sides_agree(x, c))
        return false;
    plan_choice_account(x, c);
    bool uses_device = c->lm == PLACE_RESIDENT || c->n_resident + c->n_streamed > 0;
    if (x->b->has_device && !uses_device)
        return false;
    uint64_t host_need = c->host_need_bytes;
    bool host_ok = host_need <= x->b->host_bytes;
    bool dev_ok = !x->b->has_device || c->dev_bytes <= x->b->device_bytes;
    if (host_need < res->min_host_bytes)
        res->min_host_bytes = host_need;
    if (host_ok) {
        res->host_ok_any = true;
        if (c->dev_bytes < res->min_dev_bytes) {
            res->min_dev_bytes = c->dev_bytes;
            res->min_dev = *c;
        }
    }
    if (!host_ok || !dev_ok)
        return false;
    plan_choice_predict(x, c);
    if (!res->found || choice_better(c, &res->best)) {
        res->best = *c;
        res->found = true;
    }
    return true;
}

/* Which device layers' experts the host computes: those pinned there, and
 * those of the layers below `cut` (layers with experts only). */
static void place_experts(const plan_ctx *x, const plan_pins *pins, uint32_t cut,
                          plan_choice *c) {
    for (uint32_t il = 0; il < x->n_layer; il++)
        c->experts_host[il] = c->place[il] != PLACE_HOST && x->m->layer_expert_bytes[il] &&
                              (il < cut || pins->experts[il] == PLACE_HOST);
}

void plan_search(const plan_ctx *x, const plan_pins *pins, search_result *res) {
    uint32_t free_idx[PLAN_MAX_LAYERS], n_free = 0;
    plan_choice c;
    memset(res, 0, sizeof *res);
    res->min_dev_bytes = UINT64_MAX;
    res->min_host_bytes = UINT64_MAX;
    memset(&c, 0, sizeof c);
    for (uint32_t il = 0; il < x->n_layer; il++) {
        c.place[il] = pins->layer[il];
        if (pins->layer[il] == PLACE_AUTO)
            free_idx[n_free++] = il;
    }
    /* experts where pinned, and those of the first `cut` layers (-ncmoe's
     * family): every cut from none to all */
    const bool converted = x->m->convert != PLAN_CONVERT_NONE;
    const uint32_t max_cut =
        x->m->config.n_expert && x->b->has_device && !converted ? x->n_layer : 0;
    const plan_place lm_opts[2] = {PLACE_RESIDENT, PLACE_HOST};
    for (uint32_t cut = 0; cut <= max_cut; cut++) {
        for (int k = 0; k < 2; k++) {
            c.lm = lm_opts[k];
            if ((pins->lm_head != PLACE_AUTO && pins->lm_head != c.lm) ||
                (c.lm == PLACE_RESIDENT && !x->b->has_device))
                continue;
            for (uint32_t n_host = 0; n_host <= n_free; n_host++) {
                if (!x->b->has_device && n_host != n_free)
                    continue;
                for (uint32_t n_stream = 0; n_stream + n_host <= n_free; n_stream++) {
                    if (!x->b->has_device && n_stream > 0)
                        break;
                    split_free(free_idx, n_free, n_stream, n_host, &c);
                    place_experts(x, pins, cut, &c);
                    if (consider(x, &c, res))
                        break;
                }
            }
        }
    }
}
