/*
 * plan.c — plan_build(): the placement search and the plan it writes.
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
    const uint32_t max_cut =
        x->m->config.n_expert && x->b->has_device && !x->m->convert_type[0] ? x->n_layer : 0;
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

static sw_status check_inputs(const plan_model *m, const plan_budget *b, const plan_rates *r,
                              const plan_workload *w, const plan_pins *pins) {
    const model_config *c = &m->config;
    if (c->n_layer == 0 || c->n_layer > PLAN_MAX_LAYERS || c->n_embd == 0 || c->n_vocab == 0 ||
        c->n_head == 0 || c->n_head_kv == 0 || c->n_embd_head == 0)
        return sw_errorf(SW_ERR_ARG, "plan: model '%s' has an empty or oversized shape "
                         "(%u layers)", m->name, c->n_layer);
    if (w->n_ctx == 0 || w->n_batch == 0 || w->n_seq == 0 || w->n_threads == 0)
        return sw_errorf(SW_ERR_ARG, "plan: context, batch, prefill chunk and threads must be "
                         "positive (got %u, %u, %u, %u)", w->n_ctx, w->n_seq, w->n_batch,
                         w->n_threads);
    if (w->n_ctx > c->n_ctx_train)
        return sw_errorf(SW_ERR_ARG, "context %u exceeds %s's trained context of %u", w->n_ctx,
                         m->name, c->n_ctx_train);
    if (w->kv_type > PLAN_KV_BF16)
        return sw_errorf(SW_ERR_ARG, "plan: unknown KV type %d", (int)w->kv_type);
    if (!(r->h2d_pinned_Bps > 0 && r->h2d_pageable_Bps > 0 && r->host_mem_Bps > 0 &&
          r->device_mem_Bps > 0 && r->disk_read_Bps > 0 && r->host_flops > 0 &&
          r->device_flops > 0))
        return sw_errorf(SW_ERR_ARG, "plan: every rate must be positive");
    if (b->has_device)
        return SW_OK;
    for (uint32_t il = 0; il < c->n_layer; il++)
        if (pins->layer[il] == PLACE_RESIDENT || pins->layer[il] == PLACE_STREAMED)
            return sw_errorf(SW_ERR_ARG, "layer %u is pinned %s but there is no device (cpu "
                             "backend); use --backend sim|cuda or drop the pin", il,
                             plan_place_name(pins->layer[il]));
    if (pins->lm_head == PLACE_RESIDENT)
        return sw_errorf(SW_ERR_ARG, "the LM head is pinned to the device but there is no "
                         "device (cpu backend)");
    return SW_OK;
}

/* Pins that put a KV-shared layer and the layer whose cache it reads on
 * different sides. */
static sw_status check_shared_pins(const plan_model *m, const plan_pins *pins) {
    const model_config *c = &m->config;
    for (uint32_t il = 0; il < c->n_layer; il++)
        if (pins->experts[il] == PLACE_HOST && (c->n_expert == 0 || m->convert_type[0]))
            return sw_errorf(SW_ERR_ARG, "experts pinned to the host (layer %u), but %s", il,
                             c->n_expert ? "--weights converts the weights at load, which "
                                           "experts on the host do not take yet"
                                         : "the model has no experts");
    for (uint32_t il = 0; il < c->n_layer; il++) {
        const uint32_t owner = model_layer_kv_owner(c, il);
        const plan_place a = pins->layer[il], b = pins->layer[owner];
        if (a != PLACE_AUTO && b != PLACE_AUTO && (a == PLACE_HOST) != (b == PLACE_HOST))
            return sw_errorf(SW_ERR_ARG, "layer %u reads the KV cache of layer %u (KV "
                             "sharing), so both compute on one side, but they are pinned %s "
                             "and %s", il, owner, plan_place_name(a), plan_place_name(b));
    }
    return SW_OK;
}

static bool has_pins(const plan_pins *pins, uint32_t n_layer) {
    if (pins->lm_head != PLACE_AUTO)
        return true;
    for (uint32_t il = 0; il < n_layer; il++)
        if (pins->layer[il] != PLACE_AUTO)
            return true;
    return false;
}

/* Pins that cannot hold while the planner's own placement would. */
static sw_status refuse_pins(const plan_ctx *x, const search_result *pinned,
                             const search_result *free_res) {
    char need[32], budget[32], fits[32];
    if (pinned->min_host_bytes == UINT64_MAX) /* every candidate split a shared cache */
        return sw_errorf(SW_ERR_ARG, "the pinned placement (--place/-ngl) leaves a KV-shared "
                         "layer on the other side from the layer whose cache it reads; pin "
                         "them together or drop the pins");
    bool dev_short = pinned->host_ok_any;
    plan_format_size(dev_short ? pinned->min_dev_bytes : pinned->min_host_bytes, need,
                     sizeof need);
    plan_format_size(dev_short ? x->b->device_bytes : x->b->host_bytes, budget, sizeof budget);
    plan_format_size(free_res->best.dev_bytes, fits, sizeof fits);
    return sw_errorf(SW_ERR_ARG, "the pinned placement (--place/-ngl) cannot hold: it needs "
                     "at least %s of %s memory but the budget is %s; without the pins the "
                     "planner fits in %s (%u resident, %u streamed, %u host layers)", need,
                     dev_short ? "device" : "host", budget, fits, free_res->best.n_resident,
                     free_res->best.n_streamed, free_res->best.n_host);
}

sw_status plan_build(const plan_model *model, const plan_budget *budget,
                     const plan_rates *rates, const plan_workload *work,
                     const plan_pins *pins, plan *out) {
    static const plan_pins no_pins;
    plan_ctx x;
    search_result res;
    if (model == NULL || budget == NULL || rates == NULL || work == NULL || out == NULL)
        return sw_errorf(SW_ERR_ARG, "plan_build: NULL argument");
    if (pins == NULL)
        pins = &no_pins;
    sw_status st = check_inputs(model, budget, rates, work, pins);
    if (st != SW_OK || (st = check_shared_pins(model, pins)) != SW_OK)
        return st;
    plan_ctx_init(&x, model, budget, rates, work);
    plan_search(&x, pins, &res);
    if (!res.found && has_pins(pins, x.n_layer)) {
        search_result free_res;
        plan_search(&x, &no_pins, &free_res);
        if (free_res.found)
            return refuse_pins(&x, &res, &free_res);
        res = free_res;
    }
    if (!res.found)
        return plan_explain_failure(&x, &res);
    plan_fill(&x, &res.best, pins, out);
    plan_find_better(&x, &res.best, out->better, sizeof out->better);
    return SW_OK;
}
