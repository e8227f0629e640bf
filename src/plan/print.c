/*
 * print.c — a plan for people (a table readable at a glance) and for
 * programs (JSON with a fixed field order, exact integers, every buffer).
 * Both print only what is in the plan, so a plan printed before loading
 * and one printed by a running engine look the same. The JSON is a
 * regression snapshot format (tests/data/plan/): change it deliberately.
 */
#include <inttypes.h>
#include <string.h>

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
            p->model.convert_type[0] ? " -> " : "", p->model.convert_type, model,
            p->model.file_bytes ? "" : " est.");
    if (p->budget.has_device) {
        plan_format_size(p->budget.device_bytes, budget, sizeof budget);
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
    short_size(sum_kind(p, TIER_DEVICE, BUF_ACTIVATIONS, &n), a, sizeof a);
    fprintf(out, " | activations %s\n", a);
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
    if (n)
        fprintf(out, "%u layer%s streamed %s\n", n, n == 1 ? "" : "s", a);
    else
        fprintf(out, "%s\n", n_streamed ? "- (streamed from the mapping)" : "-");
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

static void json_str(FILE *out, const char *s) {
    fputc('"', out);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\')
            fprintf(out, "\\%c", *c);
        else if (*c < 0x20)
            fprintf(out, "\\u%04x", *c);
        else
            fputc(*c, out);
    }
    fputc('"', out);
}

static void json_model(FILE *out, const plan *p) {
    const model_config *c = &p->model.config;
    fputs("{\"model\":{\"name\":", out);
    json_str(out, p->model.name);
    fputs(",\"weight_type\":", out);
    json_str(out, p->model.weight_type);
    fputs(",\"arch\":", out);
    json_str(out, c->arch);
    fprintf(out, ",\"n_layer\":%u,\"n_embd\":%u,\"n_ff\":%u,\"n_head\":%u,\"n_head_kv\":%u,"
            "\"n_embd_head\":%u,\"n_vocab\":%u,\"n_ctx_train\":%u,\"sliding_window\":%u,"
            "\"file_bytes\":%" PRIu64 ",\"weights_bytes\":%" PRIu64 ",\"embd_bytes\":%" PRIu64
            ",\"output_bytes\":%" PRIu64 ",\"tied\":%s", c->n_layer, c->n_embd, c->n_ff,
            c->n_head, c->n_head_kv, c->n_embd_head, c->n_vocab, c->n_ctx_train,
            c->sliding_window, p->model.file_bytes, plan_model_total_bytes(&p->model),
            p->model.embd_bytes, p->model.output_bytes, p->model.tied ? "true" : "false");
    /* Gemma 4's fields only where the model has them (older snapshots stay). */
    if (p->model.ple_bytes)
        fprintf(out, ",\"ple_bytes\":%" PRIu64 ",\"ple_proj_bytes\":%" PRIu64,
                p->model.ple_bytes, p->model.ple_proj_bytes);
    uint32_t n_shared = 0;
    for (uint32_t il = 0; il < c->n_layer; il++)
        n_shared += !model_layer_owns_kv(c, il);
    if (n_shared)
        fprintf(out, ",\"kv_shared_layers\":%u", n_shared);
    if (c->n_expert)
        fprintf(out, ",\"n_expert\":%u,\"n_expert_used\":%u", c->n_expert, c->n_expert_used);
    /* Only with --weights, so plans of stored weights keep their snapshots. */
    if (p->model.convert_type[0]) {
        uint64_t now = plan_model_total_bytes(&p->model);
        fputs(",\"convert\":{\"type\":", out);
        json_str(out, p->model.convert_type);
        fprintf(out, ",\"stored_bytes\":%" PRIu64 ",\"saved_bytes\":%" PRIu64
                ",\"n_converted\":%u,\"n_kept\":%u}", p->model.stored_bytes,
                p->model.stored_bytes > now ? p->model.stored_bytes - now : 0,
                p->model.n_converted, p->model.n_kept);
    }
    fputc('}', out);
}

static void json_inputs(FILE *out, const plan *p) {
    const plan_budget *b = &p->budget;
    const plan_rates *r = &p->rates;
    fputs(",\"budget\":{\"backend\":", out);
    json_str(out, b->backend);
    fprintf(out, ",\"has_device\":%s,\"device\":", b->has_device ? "true" : "false");
    json_str(out, b->has_device ? b->device_name : "");
    fprintf(out, ",\"device_bytes\":%" PRIu64 ",\"device_total_bytes\":%" PRIu64
            ",\"host_bytes\":%" PRIu64 ",\"pinned_limit_bytes\":", b->device_bytes,
            b->device_total_bytes, b->host_bytes);
    if (b->pinned_limit_bytes == UINT64_MAX)
        fputs("null}", out);
    else
        fprintf(out, "%" PRIu64 "}", b->pinned_limit_bytes);
    fprintf(out, ",\"workload\":{\"n_ctx\":%u,\"n_seq\":%u,\"n_batch\":%u,\"n_threads\":%u,"
            "\"kv_type\":\"%s\",\"cpu_dots\":\"%s\",\"n_tok\":%u}", p->workload.n_ctx,
            p->workload.n_seq, p->workload.n_batch, p->workload.n_threads,
            plan_kv_type_name(p->workload.kv_type),
            p->workload.exact_dots ? "f32" : p->workload.bf16_dots ? "bf16" : "q8",
            p->n_tok);
    fprintf(out, ",\"rates\":{\"measured\":%s,\"h2d_pinned_Bps\":%.6g,\"h2d_pageable_Bps\":%.6g,"
            "\"host_mem_Bps\":%.6g,\"device_mem_Bps\":%.6g,\"disk_read_Bps\":%.6g,"
            "\"host_flops\":%.6g,\"device_flops\":%.6g,\"device_op_s\":%.6g",
            r->measured ? "true" : "false",
            r->h2d_pinned_Bps, r->h2d_pageable_Bps, r->host_mem_Bps, r->device_mem_Bps,
            r->disk_read_Bps, r->host_flops, r->device_flops, r->device_op_s);
    for (int side = 0; side < 2; side++) {
        const double *v = side ? r->device_decode_Bps : r->host_decode_Bps;
        fprintf(out, ",\"%s_decode_Bps\":{", side ? "device" : "host");
        for (int i = 0; i < SW_DOCTOR_DECODE_TYPES; i++)
            fprintf(out, "%s\"%s\":%.6g", i ? "," : "", type_name(type_decode_type(i)), v[i]);
        fputc('}', out);
    }
    fputc('}', out);
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
    }
    return "?";
}

static void json_placement(FILE *out, const plan *p) {
    fputs(",\"layers\":[", out);
    for (uint32_t il = 0; il < p->model.config.n_layer; il++)
        fprintf(out, "%s{\"layer\":%u,\"place\":\"%s\",\"bytes\":%" PRIu64 ",\"kv\":\"%s\","
                "\"kv_rows\":%u,\"local\":%s%s}", il ? "," : "", il,
                plan_place_name(p->layer_place[il]), p->model.layer_bytes[il],
                plan_tier_name(p->kv_tier[il]), p->kv_rows[il],
                model_layer_is_local(&p->model.config, il) ? "true" : "false",
                p->experts_host[il] ? ",\"experts\":\"host\"" : "");
    fprintf(out, "],\"lm_head\":\"%s\",\"ring\":{\"slots\":%u,\"slot_bytes\":%" PRIu64 "}",
            plan_place_name(p->lm_head_place), p->ring_slots, p->ring_slot_bytes);
    fprintf(out, ",\"stream_source\":%s", p->ring_slots == 0 ? "null"
                                         : p->stream_pinned ? "\"pinned\"" : "\"mapped\"");
    fputs(",\"buffers\":[", out);
    for (uint32_t i = 0; i < p->n_buffers; i++) {
        const plan_buffer *b = &p->buffers[i];
        fprintf(out, "%s{\"purpose\":", i ? "," : "");
        json_str(out, b->purpose);
        fprintf(out, ",\"kind\":\"%s\",\"tier\":\"%s\",\"bytes\":%" PRIu64 ",\"layer\":%d}",
                kind_name(b->kind), plan_tier_name(b->tier), b->bytes, (int)b->layer);
    }
    fputs("]", out);
}

static void json_totals(FILE *out, const plan *p) {
    const uint64_t budgets[TIER_COUNT] = {p->budget.has_device ? p->budget.device_bytes : 0, 0,
                                          p->budget.host_bytes, 0};
    fputs(",\"tiers\":{", out);
    for (int t = 0; t < TIER_COUNT; t++) {
        fprintf(out, "%s\"%s\":{\"budget\":", t ? "," : "", plan_tier_name((plan_tier)t));
        if ((t == TIER_DEVICE && p->budget.has_device) || t == TIER_HOST)
            fprintf(out, "%" PRIu64, budgets[t]);
        else
            fputs("null", out);
        fprintf(out, ",\"planned\":%" PRIu64 "}", p->tier_bytes[t]);
    }
    fprintf(out, "},\"predictions\":{\"prefill_tokens_per_s\":%.6g,\"prefill_bottleneck\":\"%s\","
            "\"decode_tokens_per_s\":%.6g,\"decode_bottleneck\":\"%s\","
            "\"disk_bytes_per_token\":%" PRIu64 "}", p->prefill_tokens_per_s,
            p->prefill_bottleneck, p->decode_tokens_per_s, p->decode_bottleneck,
            p->disk_bytes_per_token);
    fputs(",\"better\":", out);
    json_str(out, p->better);
    fputs(",\"notes\":[", out);
    for (uint32_t i = 0; i < p->n_notes; i++) {
        fputs(i ? "," : "", out);
        json_str(out, p->notes[i]);
    }
    fputs("]}\n", out);
}

void plan_print_json(FILE *out, const plan *p) {
    json_model(out, p);
    json_inputs(out, p);
    json_placement(out, p);
    json_totals(out, p);
}
