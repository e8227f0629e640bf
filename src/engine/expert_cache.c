/*
 * expert_cache.c — issue 38's expert cache in the engine: a device layer
 * whose experts live on the host keeps the plan's number of them in device
 * slots (plan/expert_plan.h's layout). Per step (one forward's layer):
 *   device: the block up to the experts, the routing and the experts'
 *           input (block_run_route); ids, weights and input to the host;
 *   host:   the policy (plan/expert_sim.h) says which needed experts are
 *           held (hits); each miss is copied into a slot on the copy queue
 *           (evicting the policy's victim) or computed here, as the cost
 *           model (expert_plan_copy_wins) says for the tokens routed to
 *           it; the host computes its share's outputs (BOP_MOE_CACHED,
 *           rows only);
 *   device: the slot table, the host's rows, then BOP_MOE_CACHED sums
 *           every token's experts in ascending id — slots and host rows —
 *           exactly as BOP_MOE_EXPERTS would: the cache changes no bit.
 * The host waits once per cached layer (for the routing); the slots a
 * step writes were last read by work the wait saw finish.
 * Prefetch (--expert-prefetch): after a device layer, the next cached
 * layer's router on this layer's output guesses its experts; those not
 * held go into free or cold slots on the copy queue (at most half the
 * slots), and the next step waits for them; a guessed expert that step
 * needs is a prefetch hit.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "plan/expert_sim.h"
#include "util/error.h"

#define HPTR(m) ((void *)(uintptr_t)(m).off)   /* a host-side bmem's bytes */

sw_status xcache_open(sw_engine *e) {
    const plan *p = e->plan;
    engine_xcache *x = &e->xc;
    const model_config *c = &e->config;
    if (p->expert_slots == 0)
        return SW_OK;
    if (x->buf == NULL || e->device == NULL)
        return sw_errorf(SW_ERR_ARG, "internal: an expert cache without its buffer");
    expert_plan_layout(p, p->expert_slots, &x->layout);
    const size_t rows = (size_t)e->n_tok * c->n_expert_used;
    x->slot_dev = malloc(c->n_expert * sizeof *x->slot_dev);
    x->slot_host = malloc(c->n_expert * sizeof *x->slot_host);
    x->n_routed = malloc(c->n_expert * sizeof *x->n_routed);
    x->y_row = malloc(rows * sizeof *x->y_row);
    x->ids = malloc(rows * sizeof *x->ids);
    x->y = malloc(rows * c->n_embd * sizeof *x->y);
    x->guess = malloc(rows * sizeof *x->guess);
    x->pf_expert = malloc(c->n_expert * sizeof *x->pf_expert);
    x->pf_slot = malloc(c->n_expert * sizeof *x->pf_slot);
    x->pf_flag = calloc((size_t)c->n_layer * c->n_expert, 1);
    if (!x->slot_dev || !x->slot_host || !x->n_routed || !x->y_row || !x->ids || !x->y ||
        !x->guess || !x->pf_expert || !x->pf_slot || !x->pf_flag)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for the expert cache's tables");
    x->st.slots = p->expert_slots;
    x->st.layers = p->expert_layers;
    x->st.cache_bytes = p->expert_cache_bytes;
    SW_TRY(e->device->vt->event_create(e->device, &x->copied));
    SW_TRY(xcopy_open(e));
    return expert_cache_create(c->n_layer, c->n_expert, p->expert_slots,
                               (expert_policy)p->expert_policy, EXPERT_DECAY_DEFAULT, &x->policy);
}

void xcache_close(sw_engine *e) {
    engine_xcache *x = &e->xc;
    if (e->device != NULL)
        xcopy_close(e);
    if (x->copied != NULL)
        e->device->vt->event_destroy(e->device, x->copied);
    expert_cache_destroy(x->policy);
    free(x->slot_dev);
    free(x->slot_host);
    free(x->n_routed);
    free(x->y_row);
    free(x->ids);
    free(x->y);
    free(x->guess);
    free(x->pf_expert);
    free(x->pf_slot);
    free(x->pf_flag);
    memset(x, 0, sizeof *x);
}

void xcache_reset(sw_engine *e) {
    engine_xcache *x = &e->xc;
    if (x->policy == NULL)
        return;
    expert_cache_clear(x->policy);
    memset(x->pf_flag, 0, (size_t)e->config.n_layer * e->config.n_expert);
    x->pf_pending = false;
}

void xcache_report(const sw_engine *e, sw_expert_report *out) {
    const engine_xcache *x = &e->xc;
    *out = x->st;
    if (x->policy == NULL)
        return;
    expert_stats s;
    expert_cache_stats(x->policy, &s);
    out->steps = s.steps;
    out->routings = s.routings;
    out->needed = s.needed;
    out->hits = s.hits;
    out->misses = s.misses;
    out->copy_source = x->copy_source;
    out->staging_bytes = x->stage.bytes;
}

/* Slot s of layer il's gate/up (which = 0) or down (1) slices, as one
 * tensor of n_slot experts. */
static btensor slot_tensor(const sw_engine *e, uint32_t il, const btensor *whole, int which) {
    const engine_xcache *x = &e->xc;
    const uint32_t n_expert = e->config.n_expert, n_slot = e->plan->expert_slots;
    const uint64_t gu_slice = e->layers[il].host_w[BW_GATE_UP_EXPS].n_bytes / n_expert;
    btensor t = *whole;
    t.ne1 = whole->ne1 / n_expert * n_slot;
    t.n_bytes = whole->n_bytes / n_expert * n_slot;
    t.mem = (bmem){x->buf, x->layout.layer[il] +
                               (which ? plan_padded(n_slot * gu_slice) : 0)};
    return t;
}

/* Queues expert ex's slices into slot s on the copy queue. */
static sw_status fill_slot(sw_engine *e, uint32_t il, uint32_t ex, int32_t s) {
    const btensor *hw = e->layers[il].host_w;
    const uint32_t n_expert = e->config.n_expert;
    bmem dst[2];
    const uint8_t *src[2];
    uint64_t bytes[2];
    for (int which = 0; which < 2; which++) {
        const btensor *w = &hw[which ? BW_DOWN_EXPS : BW_GATE_UP_EXPS];
        bytes[which] = w->n_bytes / n_expert;
        dst[which] = bmem_at(slot_tensor(e, il, w, which).mem, (uint64_t)s * bytes[which]);
        src[which] = (const uint8_t *)HPTR(w->mem) + (uint64_t)ex * bytes[which];
        e->xc.st.copied_bytes += bytes[which];
    }
    return xcopy_expert(e, dst, src, bytes);
}

/* The policy's step: hits, copies and host experts; the rows the host
 * computes numbered in the order the device reads them. *n_y: rows;
 * *n_copy: experts copied. */
static sw_status decide(sw_engine *e, uint32_t il, uint32_t n, uint32_t *n_y, uint32_t *n_copy) {
    engine_xcache *x = &e->xc;
    const uint32_t k = e->config.n_expert_used, n_expert = e->config.n_expert;
    const int32_t *ids = HPTR(e->side[SIDE_HOST].act.moe_ids);
    memset(x->n_routed, 0, n_expert * sizeof *x->n_routed);
    for (uint32_t i = 0; i < n * k; i++) {
        x->ids[i] = (uint32_t)ids[i];
        x->n_routed[x->ids[i] < n_expert ? x->ids[i] : 0]++;
    }
    expert_cache_begin(x->policy, il, x->ids, n * k);
    *n_y = *n_copy = 0;
    uint8_t *pf = x->pf_flag + (size_t)il * n_expert;
    sw_status st = SW_OK;
    for (uint32_t ex = 0; st == SW_OK && ex < n_expert; ex++) {
        int32_t s = x->n_routed[ex] ? expert_cache_slot(x->policy, il, ex) : -1;
        x->st.prefetch_hits += pf[ex] && s >= 0;
        pf[ex] = 0;
        if (x->n_routed[ex] && s < 0 && expert_plan_copy_wins(e->plan, il, x->n_routed[ex]) &&
            (s = expert_cache_admit(x->policy, il, ex)) >= 0) {
            if ((st = fill_slot(e, il, ex, s)) != SW_OK)
                break;
            x->st.copied++;
            ++*n_copy;
        }
        x->slot_dev[ex] = s;
        x->slot_host[ex] = x->n_routed[ex] && s < 0 ? (int32_t)ex : -1;
        if (x->slot_host[ex] >= 0) {
            x->st.host_experts++;
            x->st.host_tokens += x->n_routed[ex];
        }
    }
    expert_cache_end(x->policy, il);
    if (st != SW_OK)
        return st;
    for (uint32_t i = 0; i < n * k; i++)   /* rows in expert, then gathering, order */
        x->y_row[i] = -1;
    for (uint32_t ex = 0; ex < n_expert; ex++)
        for (uint32_t i = 0; x->slot_host[ex] >= 0 && i < n * k; i++)
            if (x->ids[i] == ex)
                x->y_row[i] = (int32_t)(*n_y)++;
    return SW_OK;
}

/* The experts of one side: rows only (host) or the sum (device). */
static sw_status submit_cached(backend *be, const block_acts *t, btensor gu, btensor dn,
                               bmem slot_of, bmem y_row, bmem y, uint32_t n_slot, uint32_t n_y,
                               const block_args *a, bool accumulate) {
    const bop op = {.kind = BOP_MOE_CACHED,
                    .u.moe_cached = {.gate_up = gu, .down = dn, .x = t->moe_x, .ids = t->moe_ids,
                                     .weights = t->moe_w, .slot_of = slot_of, .y_row = y_row,
                                     .y = y, .out = t->moe_out, .xg = t->moe_r, .gu = t->moe_gu,
                                     .yd = t->moe_yd, .n_tokens = a->n_tokens,
                                     .n_expert = a->shape->n_expert, .n_slot = n_slot,
                                     .k = a->shape->n_expert_used, .n_y = n_y,
                                     .accumulate = accumulate}};
    return be->vt->submit(be, &op);
}

/* The host's share: its experts' outputs into xc.y. */
static sw_status host_share(sw_engine *e, uint32_t il, const block_args *a, uint32_t n_y) {
    engine_side *h = &e->side[SIDE_HOST];
    backend *hb = h->be;
    backend_buf *hm = hb->vt->host_memory(hb);
    const btensor *hw = e->layers[il].host_w;
    const bmem hp = {hm, 0};
    return submit_cached(hb, &h->act, hw[BW_GATE_UP_EXPS], hw[BW_DOWN_EXPS],
                         bmem_at(hp, (uintptr_t)e->xc.slot_host),
                         bmem_at(hp, (uintptr_t)e->xc.y_row), bmem_at(hp, (uintptr_t)e->xc.y),
                         e->config.n_expert, n_y, a, false);
}

/* Routing, ids and the experts' input from the device to the host. */
static sw_status route_to_host(sw_engine *e, const block_args *a) {
    engine_side *h = &e->side[SIDE_HOST], *d = &e->side[SIDE_DEVICE];
    backend *be = d->be;
    const uint64_t nk = (uint64_t)a->n_tokens * e->config.n_expert_used;
    SW_TRY(block_run_route(be, a));
    SW_TRY(be->vt->copy_d2h(be, BQ_COMPUTE, HPTR(h->act.moe_ids), d->act.moe_ids, nk * 4));
    SW_TRY(be->vt->copy_d2h(be, BQ_COMPUTE, HPTR(h->act.moe_w), d->act.moe_w, nk * 4));
    SW_TRY(be->vt->copy_d2h(be, BQ_COMPUTE, HPTR(h->act.moe_x), d->act.moe_x,
                            (uint64_t)a->n_tokens * e->config.n_embd * 4));
    SW_TRY(be->vt->event_record(be, d->done, BQ_COMPUTE));
    return be->vt->event_sync(be, d->done);
}

sw_status xcache_run_block(sw_engine *e, uint32_t il, block_args *a) {
    engine_xcache *x = &e->xc;
    backend *be = e->side[SIDE_DEVICE].be;
    const uint64_t nk = (uint64_t)a->n_tokens * e->config.n_expert_used;
    const uint32_t n_expert = e->config.n_expert;
    uint32_t n_y = 0, n_copy = 0;
    a->phase = BLOCK_TO_EXPERTS;
    SW_TRY(be->vt->block ? be->vt->block(be, a) : block_run_ops(be, a));
    SW_TRY(route_to_host(e, a));
    SW_TRY(decide(e, il, a->n_tokens, &n_y, &n_copy));
    if (n_y > 0)
        SW_TRY(host_share(e, il, a, n_y));
    const bmem base = {x->buf, 0};
    SW_TRY(be->vt->copy_h2d(be, BQ_COMPUTE, bmem_at(base, x->layout.slot_of), x->slot_dev,
                            n_expert * 4));
    SW_TRY(be->vt->copy_h2d(be, BQ_COMPUTE, bmem_at(base, x->layout.y_row), x->y_row, nk * 4));
    if (n_y > 0)
        SW_TRY(be->vt->copy_h2d(be, BQ_COMPUTE, bmem_at(base, x->layout.y), x->y,
                                (uint64_t)n_y * e->config.n_embd * 4));
    if (n_copy > 0 || x->pf_pending) { /* fills land before the experts read them */
        SW_TRY(be->vt->event_record(be, x->copied, BQ_COPY));
        SW_TRY(be->vt->queue_wait(be, BQ_COMPUTE, x->copied));
        x->pf_pending = false;
    }
    const btensor *hw = e->layers[il].host_w;
    SW_TRY(submit_cached(be, &a->act, slot_tensor(e, il, &hw[BW_GATE_UP_EXPS], 0),
                         slot_tensor(e, il, &hw[BW_DOWN_EXPS], 1),
                         bmem_at(base, x->layout.slot_of), bmem_at(base, x->layout.y_row),
                         bmem_at(base, x->layout.y), e->plan->expert_slots, n_y, a, true));
    SW_TRY(block_run_experts_norm(be, a));
    a->phase = BLOCK_FROM_EXPERTS;
    return be->vt->block ? be->vt->block(be, a) : block_run_ops(be, a);
}

/* Layer il + 1's guessed routing onto the host: its router over layer
 * il's output (the device's expert scratch is free between layers). */
static sw_status guess_next(sw_engine *e, uint32_t il, uint32_t n) {
    engine_side *d = &e->side[SIDE_DEVICE];
    backend *be = d->be;
    block_args a = {.shape = &e->shape, .act = d->act, .n_tokens = n};
    memcpy(a.w, e->layers[il + 1].w, sizeof a.w);
    SW_TRY(block_run_route(be, &a));
    SW_TRY(be->vt->copy_d2h(be, BQ_COMPUTE, e->xc.guess, d->act.moe_ids,
                            (uint64_t)n * e->config.n_expert_used * 4));
    SW_TRY(be->vt->event_record(be, d->done, BQ_COMPUTE));
    return be->vt->event_sync(be, d->done);
}

sw_status xcache_prefetch(sw_engine *e, uint32_t il, uint32_t n) {
    engine_xcache *x = &e->xc;
    const plan *p = e->plan;
    const uint32_t next = il + 1, k = e->config.n_expert_used;
    if (!p->expert_prefetch || next >= e->config.n_layer || !expert_plan_cached(p, next) ||
        p->layer_place[next] != PLACE_RESIDENT || p->expert_copy == EXPERT_COPY_NEVER)
        return SW_OK;
    SW_TRY(guess_next(e, il, n));
    /* at most half the slots: the rest keep what the policy holds */
    const uint32_t most = (p->expert_slots + 1) / 2;
    const uint32_t got = expert_cache_prefetch(x->policy, next, x->guess, n * k, most,
                                               x->pf_expert, x->pf_slot);
    for (uint32_t i = 0; i < got; i++) {
        SW_TRY(fill_slot(e, next, x->pf_expert[i], x->pf_slot[i]));
        x->st.prefetched++;
        x->pf_flag[(size_t)next * e->config.n_expert + x->pf_expert[i]] = 1;
    }
    x->pf_pending |= got > 0;
    return SW_OK;
}
