/*
 * session.c — sw_session: a conversation's position over the engine's KV
 * cache, and chunked evaluation (prefill in n_batch pieces, decode one
 * token at a time). Timing is recorded for --report.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "engine/engine_internal.h"
#include "util/error.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

sw_status sw_session_create(sw_engine *e, sw_session **out) {
    if (e == NULL || out == NULL)
        return sw_errorf(SW_ERR_ARG, "sw_session_create: NULL argument");
    *out = NULL;
    if (e->has_session)
        return sw_errorf(SW_ERR_ARG, "this engine already has a live session (its KV cache "
                                     "is sized for one); destroy it first");
    sw_session *s = calloc(1, sizeof *s);
    if (s == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory creating a session");
    s->engine = e;
    e->has_session = true;
    *out = s;
    return SW_OK;
}

void sw_session_destroy(sw_session *s) {
    if (s == NULL)
        return;
    s->engine->has_session = false;
    free(s);
}

void sw_session_set_progress(sw_session *s, sw_progress_fn fn, void *user) {
    if (s == NULL)
        return;
    s->progress = fn;
    s->progress_user = user;
}

uint32_t sw_session_pos(const sw_session *s) { return s ? s->pos : 0; }

sw_status sw_session_truncate(sw_session *s, uint32_t pos) {
    if (s == NULL || pos > s->pos)
        return sw_errorf(SW_ERR_ARG, "cannot truncate the session to position %u", pos);
    /* A sliding-window layer's ring (W + n_batch - 1 rows) has overwritten
     * positions still needed once more than n_batch tokens are dropped. */
    bool has_ring = false;
    const kv_cache *kv = &s->engine->kv;
    for (uint32_t il = 0; il < kv->n_layer; il++)
        has_ring = has_ring || kv->layers[il].ring != 0;
    if (has_ring && s->pos - pos > s->engine->n_batch)
        return sw_errorf(SW_ERR_ARG, "cannot rewind %u tokens (at most %u with sliding-window "
                         "layers); start a new session", s->pos - pos, s->engine->n_batch);
    s->pos = pos;
    return SW_OK;
}

static sw_status eval_chunk(sw_session *s, const int32_t *ids, uint32_t n, float *logits,
                            bool all_logits) {
    sw_engine *e = s->engine;
    forward_args a = {
        .config = &e->config, .host_weights = &e->weights,
        .lm_head = e->plan->lm_head_place == PLACE_RESIDENT ? &e->lm_head_dev
                                                            : &e->weights.output,
        .output_norm = e->plan->lm_head_place == PLACE_RESIDENT ? e->output_norm_dev
                                                                : e->weights.output_norm,
        .lm_side = e->plan->lm_head_place == PLACE_RESIDENT ? SIDE_DEVICE : SIDE_HOST,
        .kv = &e->kv, .side = e->side,
        .layers = {ring_acquire, ring_release, e},
        .ids = ids, .pos0 = s->pos, .n_tokens = n, .logits = logits,
        .logits_dev = e->logits_dev, .all_logits = all_logits,
        .hook = s->hook, .hook_user = s->hook_user,
    };
    return model_forward(&a);
}

sw_status sw_session_eval(sw_session *s, const int32_t *ids, size_t n, float *logits,
                          int all_logits) {
    if (s == NULL || (ids == NULL && n > 0))
        return sw_errorf(SW_ERR_ARG, "sw_session_eval: NULL argument");
    sw_engine *e = s->engine;
    if (n > e->n_ctx - s->pos)
        return sw_errorf(SW_ERR_ARG, "%zu tokens do not fit: %u of the %u-token context are "
                         "used, %u free (raise -c or shorten the prompt)", n, s->pos,
                         e->n_ctx, e->n_ctx - s->pos);
    double t0 = now_s();
    for (size_t done = 0; done < n;) {
        uint32_t chunk = (uint32_t)(n - done < e->n_batch ? n - done : e->n_batch);
        bool last = done + chunk == n;
        float *out = NULL;
        if (logits != NULL && all_logits)
            out = logits + done * e->config.n_vocab;
        else if (logits != NULL && last)
            out = logits;
        sw_status st = eval_chunk(s, ids + done, chunk, out, all_logits != 0);
        if (st != SW_OK)
            return st;
        s->pos += chunk;
        done += chunk;
        if (s->progress)
            s->progress(s->progress_user, done, n);
    }
    double dt = now_s() - t0;
    if (n == 1) {
        e->decode_s += dt;
        e->n_decode_tokens++;
    } else {
        e->prefill_s += dt;
        e->n_prefill_tokens += n;
    }
    return SW_OK;
}

sw_status sw_engine_report(const sw_engine *e, sw_report *r) {
    if (e == NULL || r == NULL)
        return sw_errorf(SW_ERR_ARG, "sw_engine_report: NULL argument");
    memset(r, 0, sizeof *r);
    if (e->device) {
        backend_stats bs;
        e->device->vt->get_stats(e->device, &bs);
        r->device_budget_bytes = e->plan->budget.device_bytes;
        r->plan_device_bytes = e->plan->tier_bytes[TIER_DEVICE];
        r->peak_device_bytes = bs.peak_bytes;
        r->bytes_to_device = bs.bytes_to_device;
        r->copy_busy_s = bs.copy_busy_s;
        r->copy_stall_s = bs.wait_stall_s;
    }
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        r->peak_host_rss_bytes = (uint64_t)ru.ru_maxrss * 1024; /* Linux: KiB */
    r->n_prefill_tokens = e->n_prefill_tokens;
    r->n_decode_tokens = e->n_decode_tokens;
    r->prefill_tokens_per_s = e->prefill_s > 0 ? (double)e->n_prefill_tokens / e->prefill_s : 0;
    r->decode_tokens_per_s = e->decode_s > 0 ? (double)e->n_decode_tokens / e->decode_s : 0;
    r->pred_prefill_tokens_per_s = e->plan->prefill_tokens_per_s;
    r->pred_decode_tokens_per_s = e->plan->decode_tokens_per_s;
    r->n_replans = e->n_replans;
    r->plan_pinned_bytes = e->plan->tier_bytes[TIER_PINNED];
    r->pinned_bytes = e->hw.pinned.bytes;
    r->pinned_locked = e->hw.pinned.locked;
    r->converted_bytes = e->hw.arena_bytes + e->hw.staging_bytes;
    return SW_OK;
}
