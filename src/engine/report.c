/*
 * report.c — sw_engine_report: what the engine did (peak device bytes,
 * bytes moved, link time, measured speeds, pinned memory) beside what its
 * plan predicted, for --report and verify.
 */
#include <string.h>
#include <sys/resource.h>

#include "engine/engine_internal.h"
#include "engine/split_engine.h"
#include "util/error.h"

/* A split's expert caches, one per stage that has one, as one: the
 * counts summed, slots per layer the most any stage has. */
static void add_experts(sw_expert_report *t, const sw_expert_report *x) {
    t->slots = x->slots > t->slots ? x->slots : t->slots;
    t->layers += x->layers;
    t->cache_bytes += x->cache_bytes;
    t->steps += x->steps;
    t->routings += x->routings;
    t->needed += x->needed;
    t->hits += x->hits;
    t->misses += x->misses;
    t->copied += x->copied;
    t->copied_bytes += x->copied_bytes;
    t->host_experts += x->host_experts;
    t->host_tokens += x->host_tokens;
    t->prefetched += x->prefetched;
    t->prefetch_hits += x->prefetch_hits;
    t->copy_source = t->copy_source != SW_EXPERT_COPY_NONE ? t->copy_source : x->copy_source;
    t->staging_bytes += x->staging_bytes;
}

/* Pinned memory of one engine (a split's stage): the plan's and what was
 * allocated; *locked cleared where an allocation stayed pageable. */
static void add_pinned(const sw_engine *e, sw_report *r, bool *any, bool *locked) {
    r->plan_pinned_bytes += e->plan->tier_bytes[TIER_PINNED];
    r->pinned_bytes += e->hw.pinned.bytes + e->xc.stage.bytes;
    *any |= e->hw.pinned.ptr != NULL || e->xc.stage.ptr != NULL;
    *locked &= (e->hw.pinned.ptr == NULL || e->hw.pinned.locked) &&
               (e->xc.stage.ptr == NULL || e->xc.stage.locked);
}

sw_status sw_engine_report(const sw_engine *e, sw_report *r) {
    if (e == NULL || r == NULL)
        return sw_errorf(SW_ERR_ARG, "sw_engine_report: NULL argument");
    memset(r, 0, sizeof *r);
    if (e->n_stages) {
        /* a split: every device's figures summed (engine_device_stats has each) */
        for (uint32_t d = 0; d <= e->n_stages; d++) {
            engine_device_stat ds;
            if (engine_device_stats(e, d, &ds) != SW_OK)
                continue;
            r->device_budget_bytes += ds.budget_bytes;
            r->plan_device_bytes += ds.plan_bytes;
            r->peak_device_bytes += ds.peak_bytes;
            r->bytes_to_device += ds.bytes_to_device;
            r->copy_busy_s += ds.copy_busy_s;
        }
    } else if (e->device) {
        backend_stats bs;
        e->device->vt->get_stats(e->device, &bs);
        /* a drafter's reservation is part of both (the plan's drafter row) */
        r->device_budget_bytes = e->plan->budget.device_bytes + e->plan->budget.drafter_bytes;
        r->plan_device_bytes = e->plan->tier_bytes[TIER_DEVICE] + e->plan->budget.drafter_bytes;
        r->peak_device_bytes = bs.peak_bytes;
        r->bytes_to_device = bs.bytes_to_device;
        r->copy_busy_s = bs.copy_busy_s;
        r->copy_stall_s = bs.wait_stall_s;
        r->peak_device_driver_bytes = bs.driver_peak_bytes;
    }
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        r->peak_host_rss_bytes = (uint64_t)ru.ru_maxrss * 1024; /* Linux: KiB */
    r->n_prefill_tokens = e->n_prefill_tokens;
    r->n_decode_tokens = e->n_decode_tokens;
    r->prefill_tokens_per_s = e->prefill_s > 0 ? (double)e->n_prefill_tokens / e->prefill_s : 0;
    r->decode_tokens_per_s = e->decode_s > 0 ? (double)e->n_decode_tokens / e->decode_s : 0;
    r->pred_prefill_tokens_per_s =
        e->n_stages ? e->split_prefill_tokens_per_s : e->plan->prefill_tokens_per_s;
    r->pred_decode_tokens_per_s =
        e->n_stages ? e->split_decode_tokens_per_s : e->plan->decode_tokens_per_s;
    r->n_replans = e->n_replans;
    /* locked: every pinned allocation there is (none: false) */
    bool any = false, locked = true;
    add_pinned(e, r, &any, &locked);
    r->converted_bytes = e->hw.arena_bytes + e->hw.staging_bytes;
    r->n_forwards = e->n_forwards;
    xcache_report(e, &r->experts);
    for (uint32_t k = 0; k < e->n_stages; k++) {
        sw_expert_report x;
        add_pinned(e->stages[k], r, &any, &locked);
        r->converted_bytes += e->stages[k]->hw.arena_bytes + e->stages[k]->hw.staging_bytes;
        xcache_report(e->stages[k], &x);
        add_experts(&r->experts, &x);
    }
    r->pinned_locked = any && locked;
    return SW_OK;
}
