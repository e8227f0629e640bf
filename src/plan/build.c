/*
 * build.c — plan_build(): the inputs checked, the placement search
 * (plan.c) run with the user's pins (and without them, to say what the
 * pins cost), and what it found filled into the plan (fill.c) with what
 * would help (suggest.c), or, when nothing fits, the explanation of what
 * is short and the cheapest change that fits (suggest.c).
 */
#include <stdio.h>
#include <string.h>

#include "plan/plan_internal.h"
#include "util/error.h"

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
        if (pins->experts[il] == PLACE_HOST &&
            (c->n_expert == 0 || m->convert != PLAN_CONVERT_NONE))
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
