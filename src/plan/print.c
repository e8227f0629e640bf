/*
 * print.c — a plan for people (a table readable at a glance) and for
 * programs (JSON with a fixed field order, exact integers, every buffer).
 * Both print only what is in the plan, so a plan printed before loading
 * and one printed by a running engine look the same. The JSON is a
 * regression snapshot format (tests/data/plan/): change it deliberately.
 */
#include <inttypes.h>
#include <string.h>

#include "format/json_write.h"
#include "plan/expert_plan.h"
#include "plan/expert_sim.h"
#include "plan/plan_internal.h"
#include "quant/types.h"
#include "util/error.h"

/* Compact size for the holds column: "9.4G", "340M", "12K". */
static void short_size(uint64_t b, char *buf, size_t cap) {
    const double k = 1024.0;
    if (b >= (1ull << 30))
        snprintf(buf, cap, "%.1fG", (double)b / (k * k * k));
    else if (b >= (1ull << 20))
        snprintf(buf, cap, "%.1fM", (double)b / (k * k));
    else if (b >= (1ull << 10))
        snprintf(buf, cap, "%.1fK", (double)b / k);
    else
        snprintf(buf, cap, "%" PRIu64 "B", b);
}

/* Sum and count of buffers of `kind` on `tier`. */
static uint64_t sum_kind(const plan *p, plan_tier tier, plan_buffer_kind kind, uint32_t *n) {
    uint64_t total = 0;
    *n = 0;
    for (uint32_t i = 0; i < p->n_buffers; i++)
        if (p->buffers[i].tier == tier && p->buffers[i].kind == kind) {
            total += p->buffers[i].bytes;
            (*n)++;
        }
    return total;
}

static void print_header(FILE *out, const plan *p) {
    char model[32], budget[32], total[32];
    uint64_t file = p->model.file_bytes ? p->model.file_bytes
                                        : plan_model_total_bytes(&p->model);
    plan_format_size(file, model, sizeof model);
    fprintf(out, "%s %s%s%s (%s%s) on ", p->model.name, p->model.weight_type,
            p->model.convert != PLAN_CONVERT_NONE ? " -> " : "",
            plan_convert_name(p->model.convert), model,
            p->model.file_bytes ? "" : " est.");
    if (p->budget.has_device) {
        plan_format_size(p->budget.device_bytes + p->budget.drafter_bytes, budget,
                         sizeof budget);
        fprintf(out, "%s, budget %s", p->budget.device_name, budget);
        if (p->budget.device_total_bytes > p->budget.device_bytes) {
            plan_format_size(p->budget.device_total_bytes, total, sizeof total);
            fprintf(out, " of %s", total);
        }
    } else {
        fprintf(out, "cpu (no device)");
    }
    fprintf(out, ", ctx %u x %u sequence%s, chunk %u, kv %s%s\n", p->workload.n_ctx,
            p->workload.n_seq, p->workload.n_seq == 1 ? "" : "s", p->workload.n_batch,
            plan_kv_type_name(p->workload.kv_type),
            p->workload.exact_dots ? ", cpu dots f32" : "");
}

static void print_device_row(FILE *out, const plan *p) {
    char a[24], b[24], c[24], d[24], e[24];
    uint32_t n_layers, n_slots, n_kv, n_local = 0, local_rows = 0, n;
    uint64_t lay = sum_kind(p, TIER_DEVICE, BUF_LAYER, &n_layers);
    sum_kind(p, TIER_DEVICE, BUF_RING_SLOT, &n_slots);
    uint64_t kv = sum_kind(p, TIER_DEVICE, BUF_KV, &n_kv);
    for (uint32_t il = 0; il < p->model.config.n_layer; il++)
        if (p->kv_tier[il] == TIER_DEVICE && p->kv_rows[il] < p->workload.n_ctx &&
            model_layer_owns_kv(&p->model.config, il)) {
            n_local++;
            local_rows = p->kv_rows[il];
        }
    short_size(lay, a, sizeof a);
    short_size(p->ring_slot_bytes, b, sizeof b);
    short_size(kv, c, sizeof c);
    fprintf(out, "%u layer%s resident %s", n_layers, n_layers == 1 ? "" : "s", a);
    if (n_slots)
        fprintf(out, " | ring %u x %s", n_slots, b);
    fprintf(out, " | KV %u layer%s %s", n_kv, n_kv == 1 ? "" : "s", c);
    if (n_local)
        fprintf(out, " (%u local x %u)", n_local, local_rows);
    if (n_kv && p->workload.n_seq > 1)
        fprintf(out, " x %u sequences", p->workload.n_seq);
    if (p->lm_head_place == PLACE_RESIDENT) {
        short_size(sum_kind(p, TIER_DEVICE, BUF_LM_HEAD, &n), d, sizeof d);
        short_size(sum_kind(p, TIER_DEVICE, BUF_LOGITS, &n), e, sizeof e);
        fprintf(out, " | lm head %s | logits %s", d, e);
    }
    if (p->expert_slots) {
        short_size(p->expert_cache_bytes, d, sizeof d);
        fprintf(out, " | expert cache %u x %u layers %s", p->expert_slots, p->expert_layers, d);
    }
    short_size(sum_kind(p, TIER_DEVICE, BUF_ACTIVATIONS, &n), a, sizeof a);
    fprintf(out, " | activations %s", a);
    if (p->budget.drafter_bytes) { /* beside the plan's buffers, off its budget */
        short_size(p->budget.drafter_bytes, b, sizeof b);
        fprintf(out, " | drafter %s %s", p->budget.drafter, b);
    }
    fputc('\n', out);
}

static void print_host_rows(FILE *out, const plan *p) {
    char a[24], b[24], c[24];
    uint32_t n, n_kv, n_streamed = 0;
    for (uint32_t il = 0; il < p->model.config.n_layer; il++)
        n_streamed += p->layer_place[il] == PLACE_STREAMED;
    uint64_t pinned = sum_kind(p, TIER_PINNED, BUF_OTHER, &n);
    plan_format_size(p->tier_bytes[TIER_PINNED], b, sizeof b);
    short_size(pinned, a, sizeof a);
    fprintf(out, "%-8s %-10s %-10s ", "pinned", "-", b);
    uint32_t n_stage;
    const uint64_t stage = sum_kind(p, TIER_PINNED, BUF_EXPERT_CACHE, &n_stage);
    if (n)
        fprintf(out, "%u layer%s streamed %s", n, n == 1 ? "" : "s", a);
    else
        fprintf(out, "%s", n_streamed ? "- (streamed from the mapping)" : n_stage ? "" : "-");
    short_size(stage, c, sizeof c);
    if (n_stage)
        fprintf(out, "%sexpert copy staging %s (unused where the device registers the mapping)",
                n || n_streamed ? " | " : "", c);
    fputc('\n', out);
    plan_format_size(p->budget.host_bytes, a, sizeof a);
    plan_format_size(p->tier_bytes[TIER_HOST], b, sizeof b);
    fprintf(out, "%-8s %-10s %-10s ", "host", a, b);
    short_size(sum_kind(p, TIER_HOST, BUF_ACTIVATIONS, &n), a, sizeof a);
    short_size(sum_kind(p, TIER_HOST, BUF_KV, &n_kv), b, sizeof b);
    short_size(sum_kind(p, TIER_HOST, BUF_OTHER, &n), c, sizeof c);
    fprintf(out, "activations %s", a);
    if (n_kv)
        fprintf(out, " | KV %u layer%s %s", n_kv, n_kv == 1 ? "" : "s", b);
    if (n)
        fprintf(out, " | mapped weights %s", c);
    short_size(sum_kind(p, TIER_HOST, BUF_CONVERTED, &n), c, sizeof c);
    if (n)
        fprintf(out, " | converted weights %s", c);
    short_size(sum_kind(p, TIER_HOST, BUF_STAGING, &n), c, sizeof c);
    if (n)
        fprintf(out, " | staging %s (load)", c);
    short_size(sum_kind(p, TIER_HOST, BUF_EXPERT_CACHE, &n), c, sizeof c);
    if (n)
        fprintf(out, " | expert cache tables %s", c);
    short_size(sum_kind(p, TIER_HOST, BUF_SCRATCH, &n), c, sizeof c);
    if (n)
        fprintf(out, " | kernel scratch %s", c);
    fprintf(out, " | token embeddings (lookup only)\n");
    if (p->model.ple_bytes) { /* Gemma 4's per-layer embeddings: a tier of lookups */
        const model_config *m = &p->model.config;
        short_size(p->model.ple_bytes, a, sizeof a);
        short_size((uint64_t)m->n_layer * m->n_embd_per_layer * sizeof(float), b, sizeof b);
        short_size(p->model.ple_proj_bytes, c, sizeof c);
        fprintf(out, "%-8s %-10s %-10s per-layer embeddings %s (mapped; rows looked up on the "
                "host, %s per token) | projection %s\n", "lookup", "-", "-", a, b, c);
    }
    plan_format_size(p->tier_bytes[TIER_DISK], a, sizeof a);
    fprintf(out, "%-8s %-10s %-10s model file (mapped)", "disk", "-", a);
    if (p->disk_bytes_per_token) {
        short_size(p->disk_bytes_per_token, b, sizeof b);
        fprintf(out, " | %s re-read per token", b);
    }
    fputc('\n', out);
}

static void print_tiers(FILE *out, const plan *p) {
    char a[32], b[32];
    fprintf(out, "\n%-8s %-10s %-10s %s\n", "tier", "budget", "planned", "holds");
    if (p->budget.has_device) {
        plan_format_size(p->budget.device_bytes, a, sizeof a);
        plan_format_size(p->tier_bytes[TIER_DEVICE], b, sizeof b);
        fprintf(out, "%-8s %-10s %-10s ", "device", a, b);
        print_device_row(out, p);
    } else {
        fprintf(out, "%-8s %-10s %-10s %s\n", "device", "-", "-", "none (cpu backend)");
    }
    print_host_rows(out, p);
}

static void print_layers(FILE *out, const plan *p) {
    const plan_place kinds[3] = {PLACE_RESIDENT, PLACE_STREAMED, PLACE_HOST};
    char r[160];
    const char *sep = " ";
    fprintf(out, "\n%-9s", "layers");
    for (int k = 0; k < 3; k++) {
        plan_format_ranges(p->layer_place, p->model.config.n_layer, kinds[k], r, sizeof r);
        if (!r[0])
            continue;
        fprintf(out, "%s%s %s%s", sep, r, plan_place_name(kinds[k]),
                kinds[k] == PLACE_STREAMED ? ", prefetch 1 ahead" : "");
        sep = "   ";
    }
    plan_place mark[PLAN_MAX_LAYERS];
    for (uint32_t il = 0; il < p->model.config.n_layer; il++)
        mark[il] = p->experts_host[il] ? PLACE_HOST : PLACE_AUTO;
    plan_format_ranges(mark, p->model.config.n_layer, PLACE_HOST, r, sizeof r);
    if (r[0])
        fprintf(out, "%sexperts of %s on the host", sep, r);
    fprintf(out, "\n%-9s %s\n", "lm head", p->lm_head_place == PLACE_RESIDENT ? "device" : "host");
    expert_plan_print(out, p);
}

/* "link: 25.0 MiB/token at 20.0 GB/s" style detail for a bottleneck; unit
 * names the pass ("token" for decode, "chunk" for prefill). */
static void bottleneck_detail(const plan *p, const char *name, const char *unit, char *buf,
                              size_t cap) {
    char sz[32];
    uint64_t streamed = 0;
    for (uint32_t il = 0; il < p->model.config.n_layer; il++)
        streamed += p->layer_place[il] == PLACE_STREAMED ? p->model.layer_bytes[il] : 0;
    if (!strcmp(name, "link")) {
        plan_format_size(streamed, sz, sizeof sz);
        snprintf(buf, cap, "link: %s/%s at %.1f GB/s", sz, unit,
                 (p->stream_pinned ? p->rates.h2d_pinned_Bps : p->rates.h2d_pageable_Bps) / 1e9);
    } else if (!strcmp(name, "disk")) {
        plan_format_size(p->disk_bytes_per_token, sz, sizeof sz);
        snprintf(buf, cap, "disk: %s/%s at %.1f GB/s", sz, unit, p->rates.disk_read_Bps / 1e9);
    } else {
        snprintf(buf, cap, "%s", name);
    }
}

void plan_print_table(FILE *out, const plan *p) {
    char pre[64], dec[64];
    print_header(out, p);
    print_tiers(out, p);
    print_layers(out, p);
    bottleneck_detail(p, p->prefill_bottleneck, "chunk", pre, sizeof pre);
    bottleneck_detail(p, p->decode_bottleneck, p->workload.n_seq > 1 ? "step" : "token", dec,
                      sizeof dec);
    fprintf(out, "%-9s prefill %.0f tok/s (%s)   decode %.1f tok/s (%s)\n", "predicts",
            p->prefill_tokens_per_s, pre, p->decode_tokens_per_s, dec);
    if (p->better[0])
        fprintf(out, "%-9s %s\n", "better", p->better);
    for (uint32_t i = 0; i < p->n_notes; i++)
        fprintf(out, "%-9s %s\n", i ? "" : "why", p->notes[i]);
}

/* ---- JSON ---------------------------------------------------------------- */

/* Through format/json_write.h's compact layout, whose bytes the snapshots
 * in tests/data/plan/ compare. */

/* Members only some models have, so older snapshots stay as they were. */
static void json_model_extras(jsonw *j, const plan *p) {
    const model_config *c = &p->model.config;
    if (p->model.ple_bytes) { /* Gemma 4's per-layer embeddings */
        jw_key_uint(j, "ple_bytes", p->model.ple_bytes);
        jw_key_uint(j, "ple_proj_bytes", p->model.ple_proj_bytes);
    }
    uint32_t n_shared = 0;
    for (uint32_t il = 0; il < c->n_layer; il++)
        n_shared += !model_layer_owns_kv(c, il);
    if (n_shared)
        jw_key_uint(j, "kv_shared_layers", n_shared);
    if (c->n_expert) {
        jw_key_uint(j, "n_expert", c->n_expert);
        jw_key_uint(j, "n_expert_used", c->n_expert_used);
    }
    /* Only with --weights, so plans of stored weights keep their snapshots. */
    if (p->model.convert != PLAN_CONVERT_NONE) {
        uint64_t now = plan_model_total_bytes(&p->model);
        jw_key(j, "convert");
        jw_obj(j);
        jw_key_str(j, "type", plan_convert_name(p->model.convert));
        jw_key_uint(j, "stored_bytes", p->model.stored_bytes);
        jw_key_uint(j, "saved_bytes",
                    p->model.stored_bytes > now ? p->model.stored_bytes - now : 0);
        jw_key_uint(j, "n_converted", p->model.n_converted);
        jw_key_uint(j, "n_kept", p->model.n_kept);
        jw_obj_end(j);
    }
}

static void json_model(jsonw *j, const plan *p) {
    const model_config *c = &p->model.config;
    jw_key(j, "model");
    jw_obj(j);
    jw_key_str(j, "name", p->model.name);
    jw_key_str(j, "weight_type", p->model.weight_type);
    jw_key_str(j, "arch", c->arch);
    jw_key_uint(j, "n_layer", c->n_layer);
    jw_key_uint(j, "n_embd", c->n_embd);
    jw_key_uint(j, "n_ff", c->n_ff);
    jw_key_uint(j, "n_head", c->n_head);
    jw_key_uint(j, "n_head_kv", c->n_head_kv);
    jw_key_uint(j, "n_embd_head", c->n_embd_head);
    jw_key_uint(j, "n_vocab", c->n_vocab);
    jw_key_uint(j, "n_ctx_train", c->n_ctx_train);
    jw_key_uint(j, "sliding_window", c->sliding_window);
    jw_key_uint(j, "file_bytes", p->model.file_bytes);
    jw_key_uint(j, "weights_bytes", plan_model_total_bytes(&p->model));
    jw_key_uint(j, "embd_bytes", p->model.embd_bytes);
    jw_key_uint(j, "output_bytes", p->model.output_bytes);
    jw_key_bool(j, "tied", p->model.tied);
    json_model_extras(j, p);
    jw_obj_end(j);
}

static void json_budget_workload(jsonw *j, const plan *p) {
    const plan_budget *b = &p->budget;
    jw_key(j, "budget");
    jw_obj(j);
    jw_key_str(j, "backend", b->backend);
    jw_key_bool(j, "has_device", b->has_device);
    jw_key_str(j, "device", b->has_device ? b->device_name : "");
    jw_key_uint(j, "device_bytes", b->device_bytes);
    jw_key_uint(j, "device_total_bytes", b->device_total_bytes);
    jw_key_uint(j, "host_bytes", b->host_bytes);
    if (b->drafter_bytes) { /* off device_bytes: the drafter's, beside the plan */
        jw_key_str(j, "drafter", b->drafter);
        jw_key_uint(j, "drafter_bytes", b->drafter_bytes);
    }
    jw_key(j, "pinned_limit_bytes");
    if (b->pinned_limit_bytes == UINT64_MAX)
        jw_null(j);
    else
        jw_uint(j, b->pinned_limit_bytes);
    jw_obj_end(j);
    jw_key(j, "workload");
    jw_obj(j);
    jw_key_uint(j, "n_ctx", p->workload.n_ctx);
    jw_key_uint(j, "n_seq", p->workload.n_seq);
    jw_key_uint(j, "n_batch", p->workload.n_batch);
    jw_key_uint(j, "n_threads", p->workload.n_threads);
    jw_key_str(j, "kv_type", plan_kv_type_name(p->workload.kv_type));
    jw_key_str(j, "cpu_dots", p->workload.exact_dots ? "f32"
                              : p->workload.bf16_dots ? "bf16" : "q8");
    jw_key_uint(j, "n_tok", p->n_tok);
    jw_obj_end(j);
}

static void json_rates(jsonw *j, const plan *p) {
    const plan_rates *r = &p->rates;
    jw_key(j, "rates");
    jw_obj(j);
    jw_key_bool(j, "measured", r->measured);
    jw_key_num(j, "h2d_pinned_Bps", r->h2d_pinned_Bps);
    jw_key_num(j, "h2d_pageable_Bps", r->h2d_pageable_Bps);
    jw_key_num(j, "host_mem_Bps", r->host_mem_Bps);
    jw_key_num(j, "device_mem_Bps", r->device_mem_Bps);
    jw_key_num(j, "disk_read_Bps", r->disk_read_Bps);
    jw_key_num(j, "host_flops", r->host_flops);
    jw_key_num(j, "device_flops", r->device_flops);
    jw_key_num(j, "device_op_s", r->device_op_s);
    for (int side = 0; side < 2; side++) {
        const double *v = side ? r->device_decode_Bps : r->host_decode_Bps;
        jw_key(j, side ? "device_decode_Bps" : "host_decode_Bps");
        jw_obj(j);
        for (int i = 0; i < SW_DOCTOR_DECODE_TYPES; i++)
            jw_key_num(j, type_name(type_decode_type(i)), v[i]);
        jw_obj_end(j);
    }
    jw_obj_end(j);
}

static const char *kind_name(plan_buffer_kind k) {
    switch (k) {
    case BUF_LAYER: return "layer";
    case BUF_RING_SLOT: return "ring_slot";
    case BUF_KV: return "kv";
    case BUF_SCRATCH: return "scratch";
    case BUF_ACTIVATIONS: return "activations";
    case BUF_LM_HEAD: return "lm_head";
    case BUF_LOGITS: return "logits";
    case BUF_OTHER: return "other";
    case BUF_CONVERTED: return "converted";
    case BUF_STAGING: return "staging";
    case BUF_EXPERT_CACHE: return "expert_cache";
    }
    return "?";
}

static void json_layers(jsonw *j, const plan *p) {
    jw_key(j, "layers");
    jw_arr(j);
    for (uint32_t il = 0; il < p->model.config.n_layer; il++) {
        jw_obj(j);
        jw_key_uint(j, "layer", il);
        jw_key_str(j, "place", plan_place_name(p->layer_place[il]));
        jw_key_uint(j, "bytes", p->model.layer_bytes[il]);
        jw_key_str(j, "kv", plan_tier_name(p->kv_tier[il]));
        jw_key_uint(j, "kv_rows", p->kv_rows[il]);
        jw_key_bool(j, "local", model_layer_is_local(&p->model.config, il));
        if (p->experts_host[il])
            jw_key_str(j, "experts", "host");
        jw_obj_end(j);
    }
    jw_arr_end(j);
}

static void json_placement(jsonw *j, const plan *p) {
    json_layers(j, p);
    jw_key_str(j, "lm_head", plan_place_name(p->lm_head_place));
    jw_key(j, "ring");
    jw_obj(j);
    jw_key_uint(j, "slots", p->ring_slots);
    jw_key_uint(j, "slot_bytes", p->ring_slot_bytes);
    jw_obj_end(j);
    jw_key_str(j, "stream_source", p->ring_slots == 0 ? NULL
                                   : p->stream_pinned ? "pinned" : "mapped");
    if (p->expert_slots) { /* only with a cache, so older snapshots stay */
        jw_key(j, "expert_cache");
        jw_obj(j);
        jw_key_uint(j, "slots", p->expert_slots);
        jw_key_uint(j, "layers", p->expert_layers);
        jw_key_uint(j, "bytes", p->expert_cache_bytes);
        jw_key_str(j, "policy", expert_policy_name((expert_policy)p->expert_policy));
        jw_key_str(j, "copy", expert_copy_name((expert_copy_mode)p->expert_copy));
        jw_key_bool(j, "prefetch", p->expert_prefetch);
        jw_obj_end(j);
    }
    jw_key(j, "buffers");
    jw_arr(j);
    for (uint32_t i = 0; i < p->n_buffers; i++) {
        const plan_buffer *b = &p->buffers[i];
        jw_obj(j);
        jw_key_str(j, "purpose", b->purpose);
        jw_key_str(j, "kind", kind_name(b->kind));
        jw_key_str(j, "tier", plan_tier_name(b->tier));
        jw_key_uint(j, "bytes", b->bytes);
        jw_key_int(j, "layer", (int)b->layer);
        jw_obj_end(j);
    }
    jw_arr_end(j);
}

static void json_totals(jsonw *j, const plan *p) {
    const uint64_t budgets[TIER_COUNT] = {p->budget.has_device ? p->budget.device_bytes : 0, 0,
                                          p->budget.host_bytes, 0};
    jw_key(j, "tiers");
    jw_obj(j);
    for (int t = 0; t < TIER_COUNT; t++) {
        jw_key(j, plan_tier_name((plan_tier)t));
        jw_obj(j);
        jw_key(j, "budget");
        if ((t == TIER_DEVICE && p->budget.has_device) || t == TIER_HOST)
            jw_uint(j, budgets[t]);
        else
            jw_null(j);
        jw_key_uint(j, "planned", p->tier_bytes[t]);
        jw_obj_end(j);
    }
    jw_obj_end(j);
    jw_key(j, "predictions");
    jw_obj(j);
    jw_key_num(j, "prefill_tokens_per_s", p->prefill_tokens_per_s);
    jw_key_str(j, "prefill_bottleneck", p->prefill_bottleneck);
    jw_key_num(j, "decode_tokens_per_s", p->decode_tokens_per_s);
    jw_key_str(j, "decode_bottleneck", p->decode_bottleneck);
    jw_key_uint(j, "disk_bytes_per_token", p->disk_bytes_per_token);
    if (p->expert_slots) {
        jw_key(j, "expert_cache");
        jw_obj(j);
        jw_key_uint(j, "slots", p->expert_slots);
        jw_key_uint(j, "layers", p->expert_layers);
        jw_key_uint(j, "bytes", p->expert_cache_bytes);
        jw_key_num(j, "hit_rate", p->expert_hit_rate);
        jw_key_num(j, "prefill_tokens_per_s_uncached", p->prefill_tokens_per_s_uncached);
        jw_key_num(j, "decode_tokens_per_s_uncached", p->decode_tokens_per_s_uncached);
        jw_obj_end(j);
    }
    jw_obj_end(j);
    jw_key_str(j, "better", p->better);
    jw_key(j, "notes");
    jw_arr(j);
    for (uint32_t i = 0; i < p->n_notes; i++)
        jw_str(j, p->notes[i]);
    jw_arr_end(j);
}

void plan_print_json(FILE *out, const plan *p) {
    jsonw j;
    jw_init_file(&j, out, JW_COMPACT);
    jw_obj(&j);
    json_model(&j, p);
    json_budget_workload(&j, p);
    json_rates(&j, p);
    json_placement(&j, p);
    json_totals(&j, p);
    jw_obj_end(&j);
    jw_finish(&j);
}
