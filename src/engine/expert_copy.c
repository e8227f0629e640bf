/*
 * expert_copy.c — where the expert cache's copies come from (issue 38,
 * item 4). A copy from pageable memory runs at the pageable link rate and,
 * on CUDA, stalls the host for its length; so, in order of preference:
 *   registered: the device registers the mapped span of the cached
 *               layers' experts (cudaHostRegister, read-only) and copies
 *               from it in place — no host copy; only when the plan keeps
 *               the whole mapping in RAM (registering pins the pages);
 *   staging:    the plan's pinned staging (EXPERT_STAGE_BUFFERS of one
 *               expert each, expert_plan.h): the host copies an expert
 *               into the next buffer, the device copies it from there; a
 *               buffer's next use waits for its last copy, so the host's
 *               copy of one expert overlaps the link's of the one before;
 *   pageable:   straight from the mapping, when neither is possible.
 * SPILLWAY_EXPERT_STAGING=1 skips registration (tests cover both paths on
 * the sim, which registers anything).
 * Every path moves the same bytes into the same slot: no bit changes.
 */
#define _DEFAULT_SOURCE /* sysconf */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine_internal.h"
#include "util/error.h"

#define HPTR(m) ((void *)(uintptr_t)(m).off)   /* a host-side bmem's bytes */

/* The pinned staging the plan gave the copies; 0: none. */
static uint64_t planned_staging(const plan *p) {
    for (uint32_t i = 0; i < p->n_buffers; i++)
        if (p->buffers[i].kind == BUF_EXPERT_CACHE && p->buffers[i].tier == TIER_PINNED)
            return p->buffers[i].bytes;
    return 0;
}

/* The mapped span of every cached layer's expert slices, page-aligned. */
static void expert_span(const sw_engine *e, uintptr_t *lo, uintptr_t *hi) {
    const long page_l = sysconf(_SC_PAGESIZE);
    const uintptr_t page = page_l > 0 ? (uintptr_t)page_l : 4096;
    *lo = UINTPTR_MAX;
    *hi = 0;
    for (uint32_t il = 0; il < e->config.n_layer; il++) {
        if (!expert_plan_cached(e->plan, il))
            continue;
        for (int which = 0; which < 2; which++) {
            const btensor *w = &e->layers[il].host_w[which ? BW_DOWN_EXPS : BW_GATE_UP_EXPS];
            const uintptr_t a = (uintptr_t)HPTR(w->mem), b = a + (uintptr_t)w->n_bytes;
            *lo = a < *lo ? a : *lo;
            *hi = b > *hi ? b : *hi;
        }
    }
    if (*hi > *lo) {
        *lo = *lo / page * page;
        *hi = (*hi + page - 1) / page * page;
    }
}

/* Registers the span when the plan keeps it in RAM; false: not done. */
static bool try_register(sw_engine *e) {
    engine_xcache *x = &e->xc;
    backend *be = e->device;
    uintptr_t lo, hi;
    const char *force = getenv("SPILLWAY_EXPERT_STAGING");   /* tests and benches */
    if (be->vt->host_register == NULL || e->plan->disk_bytes_per_token != 0 ||
        (force != NULL && !strcmp(force, "1")))
        return false;
    expert_span(e, &lo, &hi);
    if (hi <= lo || hi - lo > e->plan->budget.host_bytes)
        return false;
    if (be->vt->host_register(be, (void *)lo, hi - lo) != SW_OK) {
        /* the caller stages instead; the refusal is a note, not an error */
        engine_note(e, "expert cache: %s; copies go through pinned staging\n", sw_last_error());
        return false;
    }
    x->reg_ptr = (void *)lo;
    x->reg_bytes = hi - lo;
    return true;
}

/* The largest expert as the staging holds it (two slices, the first padded). */
static uint64_t staged_expert_bytes(const sw_engine *e) {
    uint64_t most = 0;
    for (uint32_t il = 0; il < e->config.n_layer; il++) {
        if (!expert_plan_cached(e->plan, il))
            continue;
        const btensor *hw = e->layers[il].host_w;
        const uint64_t n = e->config.n_expert;
        const uint64_t b = plan_padded(hw[BW_GATE_UP_EXPS].n_bytes / n) +
                           hw[BW_DOWN_EXPS].n_bytes / n;
        most = b > most ? b : most;
    }
    return most;
}

sw_status xcopy_open(sw_engine *e) {
    engine_xcache *x = &e->xc;
    const uint64_t stage = planned_staging(e->plan);
    x->copy_source = SW_EXPERT_COPY_NONE;
    if ((expert_copy_mode)e->plan->expert_copy == EXPERT_COPY_NEVER)
        return SW_OK;
    x->copy_source = SW_EXPERT_COPY_PAGEABLE;
    if (try_register(e)) {
        x->copy_source = SW_EXPERT_COPY_REGISTERED;
        return SW_OK;
    }
    x->stage_each = stage / EXPERT_STAGE_BUFFERS / PLAN_TENSOR_ALIGN * PLAN_TENSOR_ALIGN;
    if (stage == 0 || staged_expert_bytes(e) > x->stage_each)
        return SW_OK;   /* the plan's staging cannot hold an expert: copy in place */
    if (pinned_alloc(e->device, stage, &x->stage) != SW_OK) {
        engine_note(e, "expert cache: %s; copies come straight from the mapping\n",
                    sw_last_error());
        memset(&x->stage, 0, sizeof x->stage);   /* pinned memory refused: copy in place */
        return SW_OK;
    }
    if (!x->stage.locked)
        engine_note(e, "expert cache staging: %s\n", x->stage.why);
    for (int i = 0; i < EXPERT_STAGE_BUFFERS; i++)
        SW_TRY(e->device->vt->event_create(e->device, &x->stage_ev[i]));
    x->copy_source = x->stage.locked ? SW_EXPERT_COPY_PINNED_STAGING
                                     : SW_EXPERT_COPY_PAGEABLE_STAGING;
    return SW_OK;
}

void xcopy_close(sw_engine *e) {
    engine_xcache *x = &e->xc;
    backend *be = e->device;
    for (int i = 0; i < EXPERT_STAGE_BUFFERS; i++) {
        if (x->stage_ev[i] == NULL)
            continue;
        if (x->stage_busy[i])   /* the buffer is freed below: its copy must be done */
            (void)be->vt->event_sync(be, x->stage_ev[i]);
        be->vt->event_destroy(be, x->stage_ev[i]);
        x->stage_ev[i] = NULL;
    }
    pinned_free(be, &x->stage);
    if (x->reg_ptr != NULL)
        be->vt->host_unregister(be, x->reg_ptr);
    x->reg_ptr = NULL;
}

sw_status xcopy_expert(sw_engine *e, const bmem dst[2], const uint8_t *const src[2],
                       const uint64_t bytes[2]) {
    engine_xcache *x = &e->xc;
    backend *be = e->device;
    if (x->stage.ptr == NULL) {   /* registered, or in place from the mapping */
        for (int i = 0; i < 2; i++)
            SW_TRY(be->vt->copy_h2d(be, BQ_COPY, dst[i], src[i], bytes[i]));
        return SW_OK;
    }
    const uint32_t b = x->stage_next++ % EXPERT_STAGE_BUFFERS;
    if (x->stage_busy[b])
        SW_TRY(be->vt->event_sync(be, x->stage_ev[b]));
    uint8_t *buf = (uint8_t *)x->stage.ptr + (uint64_t)b * x->stage_each;
    for (int i = 0; i < 2; i++) {
        memcpy(buf, src[i], bytes[i]);
        SW_TRY(be->vt->copy_h2d(be, BQ_COPY, dst[i], buf, bytes[i]));
        buf += plan_padded(bytes[i]);
    }
    SW_TRY(be->vt->event_record(be, x->stage_ev[b], BQ_COPY));
    x->stage_busy[b] = true;
    return SW_OK;
}
