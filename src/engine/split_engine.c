/*
 * split_engine.c — an engine over a split plan (plan/split.h): one engine
 * per device, each over its range of layers with its own device backend,
 * budget, ring, KV and activations, executing its stage's plan exactly.
 * The first stage is the engine the caller holds: it owns the others, and
 * its forward runs them in order, the later ones on threads of their own
 * (pipeline.c), the residual stream handed on device to device where the
 * backend can, else through host memory (forward.c). Sessions, positions
 * and the batch checks stay the first stage's; every stage keeps the KV of
 * its own layers at the positions each forward names. engine_forward is
 * here: every forward, split or not, starts in this file.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "engine/split_engine.h"
#include "util/error.h"

static sw_status check_split(const sw_model *model, const plan_split *s,
                             const sw_engine_options *opt) {
    model_config c;
    if (model == NULL || s == NULL)
        return sw_errorf(SW_ERR_ARG, "engine_create_split: NULL argument");
    if (s->n_dev < 2 || s->n_dev > PLAN_MAX_DEVICES)
        return sw_errorf(SW_ERR_ARG, "a split runs on 2 to %d devices, not %u",
                         PLAN_MAX_DEVICES, s->n_dev);
    SW_TRY(model_config_from_gguf(model->gguf, &c));
    if (opt != NULL && opt->expert_trace != NULL)
        return sw_errorf(SW_ERR_ARG, "--expert-trace does not follow a split over devices yet");
    for (uint32_t d = 0; d < s->n_dev; d++)
        if (s->first[d] >= s->end[d] || (d > 0 && s->first[d] != s->end[d - 1]) ||
            (d + 1 == s->n_dev && s->end[d] != c.n_layer) || (d == 0 && s->first[0] != 0))
            return sw_errorf(SW_ERR_ARG, "the split's ranges do not cover the model's %u "
                             "layers in order: plan again for this model", c.n_layer);
    return SW_OK;
}

/* One forward: the whole model's engine alone, or a split's stages, on
 * their threads (pipeline.c) or in turn. */
static sw_status forward(sw_engine *e, uint32_t n, uint32_t n_out, float *logits) {
    if (e->n_stages == 0)
        return engine_stage_forward(e, n, n_out, logits, true);
    if (e->workers != NULL) {
        const uint32_t parts = n <= e->n_seq ? e->decode_parts : e->prefill_parts;
        return parts > 1 && n_out > 0 && n >= parts ? pipeline_parts(e, n, n_out, logits, parts)
                                                    : pipeline_forward(e, n, n_out, logits);
    }
    SW_TRY(engine_stage_forward(e, n, 0, NULL, false));
    const sw_engine *prev = e;
    for (uint32_t k = 0; k < e->n_stages; k++) {
        sw_engine *s = e->stages[k];
        const bool last = k + 1 == e->n_stages;
        SW_TRY(engine_hand_on(prev, s, n));
        SW_TRY(engine_stage_forward(s, n, last ? n_out : 0, last ? logits : NULL, last));
        prev = s;
    }
    return SW_OK;
}

/* After a failed forward: each stage's device drained, ring and cache reset. */
static void reset_stage(sw_engine *e) {
    if (e->device == NULL)
        return;
    (void)ring_reset(e);
    xcache_reset(e);
}

sw_status engine_forward(sw_engine *e, uint32_t n, uint32_t n_out, float *logits) {
    sw_status st = forward(e, n, n_out, logits);
    e->n_forwards++;
    if (st == SW_OK)
        return st;
    /* Keep the first failure's message; draining reports its own. */
    char msg[512];
    snprintf(msg, sizeof msg, "%s", sw_last_error());
    if (e->workers != NULL)
        (void)pipeline_drain(e); /* the stages' threads idle before their reset */
    reset_stage(e);
    for (uint32_t k = 0; k < e->n_stages; k++)
        reset_stage(e->stages[k]);
    return sw_errorf(st, "%s", msg);
}

/* Stage k's stream goes to stage k + 1 device to device where it ends on
 * k's device, k + 1 starts on its own, and their backend copies between
 * its devices (copy_peer); else through host memory, as with
 * SPILLWAY_SPLIT_PEER=0. */
static void link_peers(sw_engine *e) {
    const char *v = getenv("SPILLWAY_SPLIT_PEER");
    if (v != NULL && !strcmp(v, "0"))
        return;
    for (uint32_t k = 0; k < e->n_stages; k++) {
        sw_engine *a = k ? e->stages[k - 1] : e, *b = e->stages[k];
        const bool ends_on_device = a->plan->layer_place[a->config.n_layer - 1] != PLACE_HOST;
        const bool starts_on_device = b->plan->layer_place[0] != PLACE_HOST;
        if (a->device != NULL && b->device != NULL && b->device->vt->copy_peer != NULL &&
            a->device->vt->copy_peer == b->device->vt->copy_peer && ends_on_device &&
            starts_on_device)
            a->peer_out = b->peer_in = true;
    }
}

sw_status engine_create_split(const sw_model *model, const plan_split *s,
                              const sw_engine_options *opt, const engine_hooks *hooks,
                              sw_engine **out, sw_alloc_failure *failure) {
    sw_engine *e = NULL;
    if (out == NULL)
        return sw_errorf(SW_ERR_ARG, "engine_create_split: NULL argument");
    *out = NULL;
    SW_TRY(check_split(model, s, opt));
    SW_TRY(engine_create_stage(model, &s->stage[0], s->first[0], s->end[0], s->device[0], opt,
                               hooks, &e, failure));
    sw_status st = SW_OK;
    if ((e->stages = calloc(s->n_dev - 1, sizeof *e->stages)) == NULL)
        st = sw_errorf(SW_ERR_OOM_HOST, "out of host memory creating the engine");
    for (uint32_t d = 1; st == SW_OK && d < s->n_dev; d++) {
        st = engine_create_stage(model, &s->stage[d], s->first[d], s->end[d], s->device[d], opt,
                                 hooks, &e->stages[d - 1], failure);
        if (st == SW_OK)
            e->n_stages++;
        else {
            char msg[512]; /* sw_last_error() is the buffer sw_errorf writes */
            snprintf(msg, sizeof msg, "%s", sw_last_error());
            st = sw_errorf(st, "device %u (layers %u-%u): %s", d, s->first[d], s->end[d] - 1,
                           msg);
        }
    }
    if (st == SW_OK)
        link_peers(e);
    /* the devices at once on a long prompt's chunks; SPILLWAY_SPLIT_PIPELINE=0
     * runs them in turn (what bench/split.sh compares against) */
    const char *pipe = getenv("SPILLWAY_SPLIT_PIPELINE");
    if (st == SW_OK && !(pipe != NULL && !strcmp(pipe, "0")))
        st = pipeline_start(e);
    /* micro-batches where the plan found them faster; SPILLWAY_SPLIT_PARTS=0:
     * never, =N (2..8): always N (the tests and benches, on any machine) */
    const char *parts = getenv("SPILLWAY_SPLIT_PARTS");
    const long forced = parts != NULL ? strtol(parts, NULL, 10) : -1;
    if (st == SW_OK && e->workers != NULL && forced != 0) {
        const bool force = forced >= 2 && forced <= PLAN_MAX_DEVICES;
        e->decode_parts = force ? (uint32_t)forced : s->decode_parts;
        e->prefill_parts = force ? (uint32_t)forced : s->prefill_parts;
        if ((e->parts_meta = malloc(4 * (size_t)e->n_tok * sizeof *e->parts_meta)) == NULL)
            st = sw_errorf(SW_ERR_OOM_HOST, "out of host memory for a batch's parts");
    }
    if (st != SW_OK) {
        sw_engine_destroy(e);
        return st;
    }
    e->split_decode_tokens_per_s = s->decode_tokens_per_s;
    /* the stages at once: the pipelined figure (a prompt of several chunks),
     * and a decode step in the parts it goes in */
    e->split_prefill_tokens_per_s =
        e->workers != NULL ? s->prefill_tokens_per_s : s->prefill_serial_tokens_per_s;
    if (e->decode_parts > 1)
        e->split_decode_tokens_per_s = s->decode_parts_tokens_per_s;
    *out = e;
    return SW_OK;
}

uint32_t engine_n_devices(const sw_engine *e) {
    return e == NULL ? 0 : e->n_stages ? e->n_stages + 1 : e->device != NULL;
}

sw_status engine_device_stats(const sw_engine *e, uint32_t d, engine_device_stat *out) {
    if (e == NULL || out == NULL || d >= engine_n_devices(e))
        return sw_errorf(SW_ERR_ARG, "engine_device_stats: no device %u", d);
    if (e->workers != NULL) /* the figures of finished forwards: the stages idle */
        (void)pipeline_drain((sw_engine *)(uintptr_t)e);
    const sw_engine *s = d == 0 ? e : e->stages[d - 1];
    backend_stats bs;
    s->device->vt->get_stats(s->device, &bs);
    memset(out, 0, sizeof *out);
    out->device = s->device_index;
    out->first_layer = s->first_layer;
    out->end_layer = s->stage_end ? s->stage_end : s->config.n_layer;
    out->budget_bytes = s->plan->budget.device_bytes + s->plan->budget.drafter_bytes;
    out->plan_bytes = s->plan->tier_bytes[TIER_DEVICE] + s->plan->budget.drafter_bytes;
    out->peak_bytes = bs.peak_bytes;
    out->bytes_to_device = bs.bytes_to_device;
    out->copy_busy_s = bs.copy_busy_s;
    out->busy_s = s->busy_s;
    out->peer_bytes = bs.peer_bytes;
    out->peer_in = s->peer_in;
    return SW_OK;
}
