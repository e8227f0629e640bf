/*
 * fill.c — turns the chosen placement into the plan the engine executes:
 * per-layer placement and KV tier, every buffer on every tier in a fixed
 * order (device first, in the order the engine allocates them), totals
 * per tier, predicted speeds, and one note per decision saying why.
 *
 * Invariant: tier_bytes[t] is the sum of the buffers on tier t, and the
 * device total equals the accounting the search checked against the budget.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "plan/plan_internal.h"
#include "util/error.h"

static void add_buf(plan *p, plan_tier tier, plan_buffer_kind kind, int32_t layer,
                    uint64_t bytes, const char *fmt, ...) SW_PRINTF(6, 7);

static void add_buf(plan *p, plan_tier tier, plan_buffer_kind kind, int32_t layer,
                    uint64_t bytes, const char *fmt, ...) {
    if (p->n_buffers >= PLAN_MAX_BUFFERS)
        return; /* cannot happen: at most 2 * n_layer + 10 buffers */
    plan_buffer *b = &p->buffers[p->n_buffers++];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->purpose, sizeof b->purpose, fmt, ap);
    va_end(ap);
    b->tier = tier;
    b->kind = kind;
    b->layer = layer;
    b->bytes = bytes;
    p->tier_bytes[tier] += bytes;
}

static void note(plan *p, const char *fmt, ...) SW_PRINTF(2, 3);

static void note(plan *p, const char *fmt, ...) {
    if (p->n_notes >= PLAN_MAX_NOTES)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->notes[p->n_notes++], sizeof p->notes[0], fmt, ap);
    va_end(ap);
}

static void device_buffers(const plan_ctx *x, const plan_choice *c, plan *p) {
    if (!x->b->has_device)
        return;
    add_buf(p, TIER_DEVICE, BUF_ACTIVATIONS, -1, x->dev_act_bytes, "activations");
    if (c->lm == PLACE_RESIDENT) {
        add_buf(p, TIER_DEVICE, BUF_LM_HEAD, -1, x->m->output_bytes + x->m->output_norm_bytes,
                "lm head + output norm");
        add_buf(p, TIER_DEVICE, BUF_LOGITS, -1, x->logits_bytes, "logits");
    }
    for (uint32_t il = 0; il < x->n_layer; il++)
        if (c->place[il] == PLACE_RESIDENT)
            add_buf(p, TIER_DEVICE, BUF_LAYER, (int32_t)il, plan_device_layer_bytes(x, c, il),
                    "layer %u weights", il);
    for (uint32_t k = 0; k < p->ring_slots; k++)
        add_buf(p, TIER_DEVICE, BUF_RING_SLOT, (int32_t)k, c->slot_bytes, "ring slot %u", k);
    for (uint32_t il = 0; il < x->n_layer; il++)
        if (c->place[il] != PLACE_HOST && x->kv_bytes[il] != 0) /* 0: a KV-shared layer */
            add_buf(p, TIER_DEVICE, BUF_KV, (int32_t)il, x->kv_bytes[il], "kv layer %u", il);
}

static void host_buffers(const plan_ctx *x, const plan_choice *c, plan *p) {
    if (c->stream_pinned)
        for (uint32_t il = 0; il < x->n_layer; il++)
            if (c->place[il] == PLACE_STREAMED)
                add_buf(p, TIER_PINNED, BUF_OTHER, (int32_t)il,
                        plan_device_layer_bytes(x, c, il),
                        "pinned layer %u", il);
    add_buf(p, TIER_HOST, BUF_ACTIVATIONS, -1, x->host_act_bytes, "host activations");
    add_buf(p, TIER_HOST, BUF_SCRATCH, -1, x->host_scratch_bytes, "host kernel scratch");
    for (uint32_t il = 0; il < x->n_layer; il++)
        if (c->place[il] == PLACE_HOST && x->kv_bytes[il] != 0)
            add_buf(p, TIER_HOST, BUF_KV, (int32_t)il, x->kv_bytes[il], "kv layer %u", il);
    if (c->conv_bytes)
        add_buf(p, TIER_HOST, BUF_CONVERTED, -1, c->conv_bytes, "converted weights (%s)",
                plan_convert_name(x->m->convert));
    if (c->staging_bytes)
        add_buf(p, TIER_HOST, BUF_STAGING, -1, c->staging_bytes, "conversion staging (load)");
    if (c->mapped_bytes > c->disk_bytes)
        add_buf(p, TIER_HOST, BUF_OTHER, -1, c->mapped_bytes - c->disk_bytes,
                "mapped weights read per token");
    uint64_t file = x->m->file_bytes ? x->m->file_bytes : plan_model_total_bytes(x->m);
    add_buf(p, TIER_DISK, BUF_OTHER, -1, file, "model file (mapped)");
}

static void fill_predictions(const plan_ctx *x, const plan_choice *c, plan *p) {
    p->decode_tokens_per_s = x->w.n_seq / c->pass_s[PASS_DECODE];
    p->prefill_tokens_per_s = x->n_chunk / c->pass_s[PASS_PREFILL];
    p->pass_tokens[PASS_DECODE] = x->w.n_seq;
    p->pass_tokens[PASS_PREFILL] = x->n_chunk;
    for (int k = 0; k < 2; k++)
        for (uint32_t il = 0; il < x->n_layer; il++)
            p->expert_host_s[k][il] = c->place[il] != PLACE_HOST && c->experts_host[il]
                                          ? x->host_experts[k][il].s : 0;
    snprintf(p->decode_bottleneck, sizeof p->decode_bottleneck, "%s",
             plan_cat_name(c->cat[PASS_DECODE]));
    snprintf(p->prefill_bottleneck, sizeof p->prefill_bottleneck, "%s",
             plan_cat_name(c->cat[PASS_PREFILL]));
}

static double gbs(double Bps) { return Bps / 1e9; }

/* Why the layers sit where they do. */
static void layer_notes(const plan_ctx *x, const plan_choice *c, plan *p) {
    char r[96], sz[32], sz2[32];
    uint64_t res_bytes = 0, host_bytes = 0;
    for (uint32_t il = 0; il < x->n_layer; il++)
        res_bytes += c->place[il] == PLACE_RESIDENT ? plan_device_layer_bytes(x, c, il) : 0;
    for (uint32_t il = 0; il < x->n_layer; il++)
        host_bytes += c->place[il] == PLACE_HOST ? x->m->layer_bytes[il] : 0;
    if (c->n_resident) {
        plan_format_ranges(c->place, x->n_layer, PLACE_RESIDENT, r, sizeof r);
        plan_format_size(res_bytes, sz, sizeof sz);
        note(p, "layers %s resident (%s): copied once, read at device speed%s", r, sz,
             c->n_resident == x->n_layer ? "; every layer fits" : "; as many as fit");
    }
    /* With nothing streamed, compare against the best link rate. */
    double link = c->n_streamed ? plan_link_rate(x, c->stream_pinned) : x->r->h2d_pinned_Bps;
    if (c->n_streamed) {
        plan_format_ranges(c->place, x->n_layer, PLACE_STREAMED, r, sizeof r);
        plan_format_size(c->slot_bytes, sz, sizeof sz);
        plan_format_size(c->streamed_bytes, sz2, sizeof sz2);
        note(p, "layers %s streamed through %u slots of %s: %s per pass over the link at "
             "%.1f GB/s, vs host memory at %.1f GB/s; the device computes prefill", r,
             PLAN_RING_SLOTS, sz, sz2, gbs(link), gbs(x->r->host_mem_Bps));
    }
    if (c->n_host && x->b->has_device) {
        plan_format_ranges(c->place, x->n_layer, PLACE_HOST, r, sizeof r);
        plan_format_size(host_bytes, sz, sizeof sz);
        if (x->r->host_mem_Bps >= link)
            note(p, "layers %s on the host (%s, KV too): host memory at %.1f GB/s is at least "
                 "as fast as the link at %.1f GB/s", r, sz, gbs(x->r->host_mem_Bps), gbs(link));
        else
            note(p, "layers %s on the host (%s, KV too): the link is faster (%.1f vs %.1f GB/s) "
                 "but the device has no room for their KV and ring slots", r, sz, gbs(link),
                 gbs(x->r->host_mem_Bps));
    } else if (!x->b->has_device) {
        note(p, "no device (cpu backend): every layer, its KV and the LM head are on the host");
    }
}

static void lm_note(const plan_ctx *x, const plan_choice *c, const plan_pins *pins, plan *p) {
    char sz[32];
    plan_format_size(x->m->output_bytes, sz, sizeof sz);
    const char *why = pins->lm_head != PLACE_AUTO ? "pinned by --place" : NULL;
    if (c->lm == PLACE_RESIDENT)
        note(p, "LM head resident (%s, read every token)%s%s", sz,
             x->m->tied ? "; token lookups still read the host mapping" : "",
             why ? "; pinned by --place" : "");
    else if (x->b->has_device)
        note(p, "LM head on the host (%s read per token from the %s): %s", sz,
             (x->m->tied ? x->m->embd_conv_bytes : x->m->output_conv_bytes) ? "converted weights"
                                                                           : "mapping",
             why ? why : "its device space serves layers better");
}

static void kv_note(const plan_ctx *x, const plan_choice *c, plan *p) {
    char dev[32], host[32];
    uint64_t kv_dev = 0, kv_host = 0;
    uint32_t n_local = 0, local_rows = 0;
    uint64_t saved = 0;
    plan_place shared[PLAN_MAX_LAYERS];
    for (uint32_t il = 0; il < x->n_layer; il++) {
        const uint32_t owner = model_layer_kv_owner(&x->m->config, il);
        shared[il] = owner != il ? PLACE_RESIDENT : PLACE_AUTO; /* a mark for the ranges */
        saved += owner != il ? x->kv_bytes[owner] : 0;
        if (c->place[il] == PLACE_HOST)
            kv_host += x->kv_bytes[il];
        else
            kv_dev += x->kv_bytes[il];
        if (owner == il && model_layer_is_local(&x->m->config, il) &&
            x->kv_rows[il] < x->w.n_ctx) {
            n_local++;
            local_rows = x->kv_rows[il];
        }
    }
    plan_format_size(kv_dev, dev, sizeof dev);
    plan_format_size(kv_host, host, sizeof host);
    note(p, "KV %s: %s on the device, %s on the host (each layer's KV where it computes)",
         plan_kv_type_name(x->w.kv_type), dev, host);
    if (n_local)
        note(p, "%u sliding-window layers keep %u rows (window %u + chunk %u - 1), not %u",
             n_local, local_rows, x->m->config.sliding_window, x->w.n_batch, x->w.n_ctx);
    if (saved) {
        char r[96], sz[32];
        plan_format_ranges(shared, x->n_layer, PLACE_RESIDENT, r, sizeof r);
        plan_format_size(saved, sz, sizeof sz);
        note(p, "KV sharing: layers %s read earlier layers' caches and keep none (%s saved)",
             r, sz);
    }
}

static void host_notes(const plan_ctx *x, const plan_choice *c, plan *p) {
    char a[32], b[32], d[32];
    if (c->n_streamed && c->stream_pinned) {
        plan_format_size(c->streamed_bytes, a, sizeof a);
        note(p, "streamed layers are copied once into pinned memory (%s) to cross the link "
             "at the pinned rate", a);
    } else if (c->n_streamed) {
        note(p, "streamed layers are read from the file mapping (pageable, %.1f GB/s): "
             "pinning them would crowd the host budget", gbs(x->r->h2d_pageable_Bps));
    }
    if (c->disk_bytes) {
        plan_format_size(c->mapped_bytes - c->disk_bytes, a, sizeof a);
        plan_format_size(c->mapped_bytes, b, sizeof b);
        plan_format_size(c->disk_bytes, d, sizeof d);
        note(p, "the host budget caches %s of the %s of weights read per token: %s is re-read "
             "from disk every token", a, b, d);
    }
}

/* What --weights changed, and what it could not. */
static void convert_note(const plan_ctx *x, plan *p) {
    const plan_model *m = x->m;
    char before[32], after[32], saved[32];
    const char *to = plan_convert_name(m->convert);
    if (m->convert == PLAN_CONVERT_NONE)
        return;
    uint64_t now = plan_model_total_bytes(m);
    plan_format_size(m->stored_bytes, before, sizeof before);
    plan_format_size(now, after, sizeof after);
    plan_format_size(m->stored_bytes > now ? m->stored_bytes - now : 0, saved, sizeof saved);
    if (m->convert == PLAN_CONVERT_BF16_DEQUANT) {   /* bigger on purpose */
        char grew[32];
        plan_format_size(now > m->stored_bytes ? now - m->stored_bytes : 0, grew, sizeof grew);
        note(p, "weights dequantized at load to BF16: %u matrices, %s -> %s (+%s); %u kept "
             "(already BF16, or F32)", m->n_converted, before, after, grew, m->n_kept);
        return;
    }
    if (m->n_converted)
        note(p, "weights converted at load to %s: %u matrices, %s -> %s (saves %s); %u kept as "
             "stored (quantized or already %s)", to, m->n_converted, before, after, saved,
             m->n_kept, to);
    else
        note(p, "--weights %s converts nothing: all %u matrices are quantized (or already %s) "
             "and kept as stored", to, m->n_kept, to);
}

static void pin_note(const plan_ctx *x, const plan_pins *pins, plan *p) {
    char r[3][64];
    const plan_place kinds[3] = {PLACE_RESIDENT, PLACE_STREAMED, PLACE_HOST};
    bool any = false;
    for (int k = 0; k < 3; k++) {
        plan_format_ranges(pins->layer, x->n_layer, kinds[k], r[k], sizeof r[k]);
        any = any || r[k][0];
    }
    if (any)
        note(p, "pinned by hand: resident [%s] streamed [%s] host [%s]; the planner placed "
             "the rest", r[0], r[1], r[2]);
}

/* Why experts sit on the host, when some do. */
static void experts_note(const plan_ctx *x, const plan_choice *c, plan *p) {
    plan_place mark[PLAN_MAX_LAYERS];
    uint64_t bytes = 0;
    uint32_t n = 0;
    for (uint32_t il = 0; il < x->n_layer; il++) {
        mark[il] = c->experts_host[il] ? PLACE_HOST : PLACE_AUTO;
        bytes += c->experts_host[il] ? x->m->layer_expert_bytes[il] : 0;
        n += c->experts_host[il];
    }
    if (n == 0)
        return;
    char r[96], sz[32];
    const model_config *m = &x->m->config;
    plan_format_ranges(mark, x->n_layer, PLACE_HOST, r, sizeof r);
    plan_format_size(bytes, sz, sizeof sz);
    note(p, "experts of layers %s on the host (%s, read from the mapping: %u of %u per "
         "token); the device holds the rest of those layers", r, sz, m->n_expert_used,
         m->n_expert);
}

void plan_fill(const plan_ctx *x, const plan_choice *c, const plan_pins *pins, plan *p) {
    memset(p, 0, sizeof *p);
    p->model = *x->m;
    p->budget = *x->b;
    p->workload = x->w;
    p->rates = *x->r;
    for (uint32_t il = 0; il < x->n_layer; il++) {
        p->layer_place[il] = c->place[il];
        p->experts_host[il] = c->experts_host[il];
        p->kv_tier[il] = c->place[il] == PLACE_HOST ? TIER_HOST : TIER_DEVICE;
        p->kv_rows[il] = x->kv_rows[il];
    }
    p->lm_head_place = c->lm;
    p->ring_slots = c->n_streamed ? PLAN_RING_SLOTS : 0;
    p->ring_slot_bytes = c->n_streamed ? c->slot_bytes : 0;
    p->stream_pinned = c->stream_pinned;
    p->n_tok = x->n_tok;
    p->disk_bytes_per_token = c->disk_bytes;
    device_buffers(x, c, p);
    host_buffers(x, c, p);
    fill_predictions(x, c, p);
    note(p, "rates: %s", x->r->measured ? "measured by spillway doctor"
                                        : "defaults (run spillway doctor to measure)");
    layer_notes(x, c, p);
    experts_note(x, c, p);
    lm_note(x, c, pins, p);
    kv_note(x, c, p);
    host_notes(x, c, p);
    convert_note(x, p);
    pin_note(x, pins, p);
}
