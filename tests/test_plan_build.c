/*
 * test_plan_build.c — plan_build() itself (part of test_plan): budget
 * sweeps from "everything fits" to the smallest plan, checking every
 * invariant independently of the planner's own bookkeeping; the failure
 * one byte below the minimum; pins; the cpu backend; the link-bound
 * decode prediction; per-type kernel rates and op dispatch in the
 * device's prediction; the doctor cache parser.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model/kv.h"
#include "model/act.h"
#include "plan/plan_api.h"
#include "quant/types.h"

static plan *alloc_plan(void) {
    plan *p = calloc(1, sizeof *p);
    if (p == NULL) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return p;
}

/* Rates like a PCIe GPU (the defaults) or like the sim (device = host). */
static void rates_for(bool sim, plan_rates *r) {
    plan_rates_default(r);
    if (sim) {
        r->device_mem_Bps = r->host_mem_Bps;
        r->device_flops = r->host_flops;
        r->h2d_pinned_Bps = r->h2d_pageable_Bps = 8e9;
    }
}

/* Every invariant a plan must hold, checked from its parts. */
static void check_invariants(const plan *p, const plan_model *m, const plan_workload *w,
                             const char *what) {
    const model_config *c = &m->config;
    uint64_t tiers[TIER_COUNT] = {0};
    uint32_t n_layer_bufs = 0, n_kv = 0, n_slots = 0, n_streamed = 0;
    uint64_t max_streamed = 0;
    for (uint32_t i = 0; i < p->n_buffers; i++) {
        const plan_buffer *b = &p->buffers[i];
        tiers[b->tier] += b->bytes;
        n_layer_bufs += b->kind == BUF_LAYER;
        n_kv += b->kind == BUF_KV;
        n_slots += b->kind == BUF_RING_SLOT;
        if (b->kind == BUF_LAYER)
            SW_CHECK(p->layer_place[b->layer] == PLACE_RESIDENT &&
                     b->bytes == m->layer_bytes[b->layer], "%s: bad layer buffer %s", what,
                     b->purpose);
        if (b->kind == BUF_KV)
            SW_CHECK((b->tier == TIER_HOST) == (p->layer_place[b->layer] == PLACE_HOST),
                     "%s: kv buffer %s on the wrong side", what, b->purpose);
    }
    for (int t = 0; t < TIER_COUNT; t++)
        SW_CHECK(tiers[t] == p->tier_bytes[t], "%s: tier %d total %llu != buffers %llu", what,
                 t, (unsigned long long)p->tier_bytes[t], (unsigned long long)tiers[t]);
    if (p->budget.has_device)
        SW_CHECK(p->tier_bytes[TIER_DEVICE] <= p->budget.device_bytes, "%s: device %llu > %llu",
                 what, (unsigned long long)p->tier_bytes[TIER_DEVICE],
                 (unsigned long long)p->budget.device_bytes);
    uint32_t n_resident = 0;
    for (uint32_t il = 0; il < c->n_layer; il++) {
        plan_place pl = p->layer_place[il];
        SW_CHECK(pl == PLACE_RESIDENT || pl == PLACE_STREAMED || pl == PLACE_HOST,
                 "%s: layer %u unplaced", what, il);
        SW_CHECK(p->kv_tier[il] == (pl == PLACE_HOST ? TIER_HOST : TIER_DEVICE),
                 "%s: layer %u KV tier", what, il);
        SW_CHECK(p->kv_rows[il] == kv_layer_rows(c, il, w->n_ctx, w->n_batch),
                 "%s: layer %u kv rows", what, il);
        n_resident += pl == PLACE_RESIDENT;
        if (pl == PLACE_STREAMED) {
            n_streamed++;
            max_streamed = m->layer_bytes[il] > max_streamed ? m->layer_bytes[il] : max_streamed;
        }
    }
    SW_CHECK(n_layer_bufs == n_resident && n_kv == c->n_layer, "%s: buffer counts", what);
    SW_CHECK(n_slots == p->ring_slots && (n_streamed ? p->ring_slots >= 2 : !p->ring_slots) &&
             p->ring_slot_bytes == max_streamed, "%s: ring %u x %llu for %u streamed", what,
             p->ring_slots, (unsigned long long)p->ring_slot_bytes, n_streamed);
    SW_CHECK(p->lm_head_place == PLACE_RESIDENT || p->lm_head_place == PLACE_HOST,
             "%s: lm head unplaced", what);
    SW_CHECK(isfinite(p->decode_tokens_per_s) && p->decode_tokens_per_s > 0 &&
             isfinite(p->prefill_tokens_per_s) && p->prefill_tokens_per_s > 0 &&
             p->decode_bottleneck[0] && p->prefill_bottleneck[0] && p->n_notes > 0,
             "%s: predictions", what);
}

static uint32_t count_place(const plan *p, plan_place pl) {
    uint32_t n = 0;
    for (uint32_t il = 0; il < p->model.config.n_layer; il++)
        n += p->layer_place[il] == pl;
    return n;
}

/* Smallest budget that plans (binary search on success). */
static uint64_t min_budget(const plan_model *m, plan_budget b, const plan_rates *r,
                           const plan_workload *w, plan *p) {
    uint64_t lo = 1, hi = 1ull << 44;
    while (lo < hi) {
        b.device_bytes = lo + (hi - lo) / 2;
        if (plan_build(m, &b, r, w, NULL, p) == SW_OK)
            hi = b.device_bytes;
        else
            lo = b.device_bytes + 1;
    }
    return lo;
}

/* From everything-fits down to the minimum; then one byte below. */
static void sweep(const char *name, const char *type, uint32_t n_ctx, bool sim) {
    plan_model m;
    plan_rates r;
    plan_workload w = {n_ctx, 1, 64, 4, PLAN_KV_F32, false, false};
    plan_budget b = {true, "test", 0, 0, 64ull << 30, UINT64_MAX, 0, "sim", 0, ""};
    plan *p = alloc_plan(), *q = alloc_plan();
    char what[96];
    SW_CHECK_OK(plan_model_from_catalog(name, type, &m));
    rates_for(sim, &r);
    uint64_t lo = min_budget(&m, b, &r, &w, p);
    b.device_bytes = lo;
    SW_CHECK_OK(plan_build(&m, &b, &r, &w, NULL, p));
    SW_CHECK(p->tier_bytes[TIER_DEVICE] == lo, "%s: minimum plan uses %llu of %llu", name,
             (unsigned long long)p->tier_bytes[TIER_DEVICE], (unsigned long long)lo);
    uint64_t hi = plan_model_total_bytes(&m) * 3 / 2 + (4ull << 30);
    double prev_speed = INFINITY;
    for (int step = 0; step <= 48; step++) {
        b.device_bytes = hi - (uint64_t)((double)(hi - lo) * step / 48.0);
        snprintf(what, sizeof what, "%s %s%s at %.1f MiB", name, type ? type : "",
                 sim ? " sim" : "", b.device_bytes / 1048576.0);
        sw_status st = plan_build(&m, &b, &r, &w, NULL, p);
        SW_CHECK(st == SW_OK, "%s: %s", what, sw_last_error());
        if (st != SW_OK)
            continue;
        check_invariants(p, &m, &w, what);
        SW_CHECK(p->decode_tokens_per_s <= prev_speed * (1 + 1e-12), "%s: decode %.3f > %.3f "
                 "at a larger budget", what, p->decode_tokens_per_s, prev_speed);
        /* Speed, not the resident count, is monotone: a smaller budget may
         * move the LM head to the host and so keep more layers resident. */
        prev_speed = p->decode_tokens_per_s;
        memset(q, 0xa5, sizeof *q);
        SW_CHECK_OK(plan_build(&m, &b, &r, &w, NULL, q));
        SW_CHECK(!memcmp(p, q, sizeof *p), "%s: two plans differ", what);
    }
    SW_CHECK(count_place(p, PLACE_RESIDENT) + count_place(p, PLACE_STREAMED) < m.config.n_layer ||
             p->lm_head_place == PLACE_HOST, "%s: the minimum plan moved nothing off", name);
    b.device_bytes = lo - 1;
    sw_status st = plan_build(&m, &b, &r, &w, NULL, p);
    char want[64];
    snprintf(want, sizeof want, "short by 1 bytes");
    SW_CHECK(st == SW_ERR_OOM_DEVICE && strstr(sw_last_error(), "device memory") &&
             strstr(sw_last_error(), want) && strstr(sw_last_error(), "changes that fit:\n  "),
             "%s one byte below the minimum: %d %s", name, st, sw_last_error());
    free(p);
    free(q);
}

/* Far below the minimum: suggestions with numbers. */
static void expect_failure(const char *name, const char *type, uint32_t n_ctx, uint64_t budget,
                           const char *const *want, size_t n_want) {
    plan_model m;
    plan_rates r;
    plan_workload w = {n_ctx, 1, 64, 8, PLAN_KV_F32, false, false};
    plan_budget b = {true, "test", budget, 0, 64ull << 30, UINT64_MAX, 0, "sim", 0, ""};
    plan *p = alloc_plan();
    plan_rates_default(&r);
    SW_CHECK_OK(plan_model_from_catalog(name, type, &m));
    sw_status st = plan_build(&m, &b, &r, &w, NULL, p);
    SW_CHECK(st == SW_ERR_OOM_DEVICE, "%s in %llu bytes should not fit (%d)", name,
             (unsigned long long)budget, st);
    for (size_t i = 0; i < n_want; i++)
        SW_CHECK(strstr(sw_last_error(), want[i]) != NULL, "%s: no '%s' in: %s", name, want[i],
                 sw_last_error());
    free(p);
}

static void test_failure_message(void) {
    plan_model m;
    plan_rates r;
    plan_workload w = {131072, 1, 512, 8, PLAN_KV_F32, false, false};
    plan_budget b = {false, "", 0, 0, 64ull << 20, UINT64_MAX, 0, "cpu", 0, ""};
    plan *p = alloc_plan();
    const char *const want_7b[] = {"device memory (test) is short by", "-c ", "--kv-type f16",
                                   "a smaller model: gemma", " q4_k_m (", "--backend cpu",
                                   "tok/s"};
    /* the largest smaller model that fits: Gemma 4's MoE, experts on the host */
    const char *const want_27b[] = {"--weights q8_0", "a smaller model: gemma4-26b-a4b",
                                    "bf16"};
    expect_failure("gemma-7b", NULL, 8192, 350ull << 20, want_7b, 7);
    expect_failure("gemma3-27b", "bf16", 131072, 512ull << 20, want_27b, 3);
    plan_rates_default(&r);
    SW_CHECK_OK(plan_model_from_catalog("gemma3-27b", "bf16", &m));
    /* host short: the cpu backend with a tiny host budget */
    sw_status st = plan_build(&m, &b, &r, &w, NULL, p);
    SW_CHECK(st == SW_ERR_OOM_HOST && strstr(sw_last_error(), "host memory is short by"),
             "host short: %d %s", st, sw_last_error());
    free(p);
}

/* Each "changes that fit" line that keeps the model, applied to the
 * planner's inputs: it must fit. Returns how many lines were re-planned. */
static int replan_suggestions(const char *msg, const plan_model *m, const plan_budget *b,
                              const plan_rates *r, const plan_workload *w0) {
    const char *at = strstr(msg, "changes that fit:");
    int n = 0;
    plan *p = alloc_plan();
    for (const char *line = at ? strchr(at, '\n') : NULL; line != NULL;
         line = strchr(line + 1, '\n')) {
        char buf[256];
        const char *end = strchr(line + 1, '\n');
        size_t len = end ? (size_t)(end - line - 1) : strlen(line + 1);
        snprintf(buf, sizeof buf, "%.*s", (int)len, line + 1);
        if (strstr(buf, "a smaller model") || strstr(buf, "--backend"))
            continue;
        plan_workload w = *w0;
        plan_model pm = *m;
        char *tok = strtok(buf, " ");
        for (; tok != NULL && tok[0] != '('; tok = strtok(NULL, " ")) {
            char *val = strtok(NULL, " ");
            if (val == NULL)
                break;
            if (!strcmp(tok, "--kv-type"))
                w.kv_type = !strcmp(val, "f16") ? PLAN_KV_F16 : PLAN_KV_BF16;
            else if (!strcmp(tok, "-np"))
                w.n_seq = (uint32_t)atoi(val);
            else if (!strcmp(tok, "-c"))
                w.n_ctx = (uint32_t)atoi(val);
            else if (!strcmp(tok, "-b"))
                w.n_batch = (uint32_t)atoi(val);
            else if (!strcmp(tok, "--weights"))
                SW_CHECK_OK(plan_model_for_type(&m->config, val, &pm));
        }
        w.n_batch = w.n_batch < w.n_ctx ? w.n_batch : w.n_ctx;
        sw_status st = plan_build(&pm, b, r, &w, NULL, p);
        SW_CHECK(st == SW_OK, "suggestion '%.*s' does not fit: %s", (int)len, line + 1,
                 sw_last_error());
        n++;
    }
    free(p);
    return n;
}

/* The levers combined: 27B with f32 KV at 32768 x 4 sequences in 4 GiB of
 * host memory fits by f16 KV and one sequence together (neither alone),
 * and each lever alone buys more context than -c alone. */
static void test_levers(void) {
    plan_model m;
    plan_rates r;
    plan_workload w = {32768, 4, 64, 2, PLAN_KV_F32, false, false};
    plan_budget b = {false, "", 0, 0, 4ull << 30, UINT64_MAX, 0, "cpu", 0, ""};
    plan *p = alloc_plan();
    plan_rates_default(&r);
    SW_CHECK_OK(plan_model_from_catalog("gemma3-27b", NULL, &m));
    sw_status st = plan_build(&m, &b, &r, &w, NULL, p);
    const char *msg = sw_last_error();
    static char copy[2048];
    snprintf(copy, sizeof copy, "%s", msg);
    SW_CHECK(st == SW_ERR_OOM_HOST, "27B f32 KV x4 in 4 GiB should not fit (%d)", st);
    const char *const want[] = {"\n  --kv-type f16 -np 1 (", "\n  -c ", "\n  --kv-type f16 -c ",
                                "\n  -np 1 -c "};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        SW_CHECK(strstr(copy, want[i]) != NULL, "no '%s' in: %s", want[i] + 3, copy);
    SW_CHECK(strstr(copy, "--kv-type f16 -np 1 (") < strstr(copy, "\n  -c "),
             "what fits as asked comes before what cuts the context: %s", copy);
    int n = replan_suggestions(copy, &m, &b, &r, &w);
    SW_CHECK(n >= 4, "%d suggestions re-planned", n);
    /* f32 weights on a small device: the weights lever (a streamed f32
     * layer's ring slots do not fit; bf16 or q8_0 ones do) */
    SW_CHECK_OK(plan_model_from_catalog("gemma3-4b", "f32", &m));
    w = (plan_workload){8192, 2, 64, 2, PLAN_KV_F32, false, false};
    b = (plan_budget){true, "test", 300ull << 20, 0, 64ull << 30, UINT64_MAX, 0, "sim", 0, ""};
    st = plan_build(&m, &b, &r, &w, NULL, p);
    snprintf(copy, sizeof copy, "%s", sw_last_error());
    SW_CHECK(st == SW_ERR_OOM_DEVICE && strstr(copy, "\n  --weights bf16 ("),
             "weights lever: %s", copy);
    n = replan_suggestions(copy, &m, &b, &r, &w);
    SW_CHECK(n >= 1, "%d suggestions re-planned: %s", n, copy);
    free(p);
}

static void test_pins_honoured(void) {
    plan_model m;
    plan_rates r;
    plan_pins pins;
    plan_workload w = {4096, 1, 64, 4, PLAN_KV_F32, false, false};
    plan_budget b = {true, "test", 1ull << 34, 0, 64ull << 30, UINT64_MAX, 0, "sim", 0, ""};
    plan *p = alloc_plan();
    plan_rates_default(&r);
    SW_CHECK_OK(plan_model_from_catalog("gemma3-1b", NULL, &m));
    SW_CHECK_OK(plan_parse_place("3=host,4-6=streamed,lm_head=host", 26, &pins));
    SW_CHECK_OK(plan_build(&m, &b, &r, &w, &pins, p));
    check_invariants(p, &m, &w, "pinned");
    SW_CHECK(p->layer_place[3] == PLACE_HOST && p->layer_place[5] == PLACE_STREAMED &&
             p->layer_place[7] == PLACE_RESIDENT && p->lm_head_place == PLACE_HOST &&
             p->ring_slots == 2, "pins not honoured");
    /* all resident in a budget that needs offloading: refused, with the fix */
    b.device_bytes = 200ull << 20;
    SW_CHECK_OK(plan_parse_place("all=resident", 26, &pins));
    sw_status st = plan_build(&m, &b, &r, &w, &pins, p);
    SW_CHECK(st == SW_ERR_ARG && strstr(sw_last_error(), "without the pins"),
             "impossible pins: %d %s", st, sw_last_error());
    /* resident pins without a device */
    b.has_device = false;
    SW_CHECK_OK(plan_parse_place("0=resident", 26, &pins));
    SW_CHECK(plan_build(&m, &b, &r, &w, &pins, p) == SW_ERR_ARG, "resident pin on cpu");
    free(p);
}

static void test_cpu_backend(void) {
    plan_model m;
    plan_rates r;
    plan_workload w = {4096, 1, 64, 4, PLAN_KV_F32, false, false};
    plan_budget b = {false, "", 0, 0, 8ull << 30, UINT64_MAX, 0, "cpu", 0, ""};
    plan *p = alloc_plan();
    plan_rates_default(&r);
    SW_CHECK_OK(plan_model_from_catalog("gemma3-270m", NULL, &m));
    SW_CHECK_OK(plan_build(&m, &b, &r, &w, NULL, p));
    check_invariants(p, &m, &w, "cpu");
    SW_CHECK(count_place(p, PLACE_HOST) == m.config.n_layer && p->lm_head_place == PLACE_HOST &&
             p->tier_bytes[TIER_DEVICE] == 0 && !strcmp(p->decode_bottleneck, "host memory"),
             "cpu plan: everything on the host");
    /* a host budget too small to cache the weights spills to disk */
    b.host_bytes = 64ull << 20;
    SW_CHECK_OK(plan_build(&m, &b, &r, &w, NULL, p));
    SW_CHECK(p->disk_bytes_per_token > 0 && !strcmp(p->decode_bottleneck, "disk"),
             "disk spill: %llu B/token, bottleneck %s",
             (unsigned long long)p->disk_bytes_per_token, p->decode_bottleneck);
    free(p);
}

/* Link-bound: decode time is the streamed bytes over the link rate. */
static void test_link_bound(void) {
    plan_model m;
    plan_rates r;
    plan_pins pins;
    plan_workload w = {2048, 1, 32, 4, PLAN_KV_F32, false, false};
    plan_budget b = {true, "sim", 1ull << 34, 0, 64ull << 30, UINT64_MAX, 0, "sim", 0, ""};
    plan *p = alloc_plan();
    rates_for(true, &r);
    r.h2d_pinned_Bps = r.h2d_pageable_Bps = 0.2e9;
    SW_CHECK_OK(plan_model_from_catalog("gemma3-270m", NULL, &m));
    SW_CHECK_OK(plan_parse_place("6-17=streamed", 18, &pins));
    SW_CHECK_OK(plan_build(&m, &b, &r, &w, &pins, p));
    uint64_t streamed = 0;
    for (uint32_t il = 6; il < 18; il++)
        streamed += m.layer_bytes[il];
    double want = r.h2d_pinned_Bps / (double)streamed;
    SW_CHECK(fabs(p->decode_tokens_per_s / want - 1) < 0.01 &&
             !strcmp(p->decode_bottleneck, "link"), "link-bound decode %.3f tok/s, want %.3f (%s)",
             p->decode_tokens_per_s, want, p->decode_bottleneck);
    free(p);
}

/* The decode kernels' per-type rates and the per-op dispatch time shape
 * the device's decode prediction. */
static void test_kernel_rates(void) {
    plan_model m;
    plan_rates r;
    plan_workload w = {2048, 1, 64, 4, PLAN_KV_F32, false, false};
    plan_budget b = {true, "cuda:0", 1ull << 40, 1ull << 40, 64ull << 30, UINT64_MAX, 0, "cuda", 0, ""};
    plan *p = alloc_plan();
    const int bf16 = type_decode_index(SW_TYPE_BF16);
    SW_CHECK_OK(plan_model_from_catalog("gemma2-9b", "bf16", &m));
    uint64_t in_bf16 = 0, total = 0;
    for (uint32_t il = 0; il < m.config.n_layer; il++) {
        in_bf16 += m.layer_type_bytes[il][bf16];
        total += m.layer_bytes[il];
    }
    SW_CHECK(in_bf16 > total * 0.99 && in_bf16 <= total && m.output_type_bytes[bf16] ==
             m.output_bytes, "bf16 model: %llu of %llu layer bytes counted as BF16",
             (unsigned long long)in_bf16, (unsigned long long)total);
    plan_rates_default(&r);
    r.device_op_s = 0;
    SW_CHECK_OK(plan_build(&m, &b, &r, &w, NULL, p));
    double full = p->decode_tokens_per_s;
    r.device_decode_Bps[bf16] = r.device_mem_Bps / 2;
    SW_CHECK_OK(plan_build(&m, &b, &r, &w, NULL, p));
    SW_CHECK(p->decode_tokens_per_s / full > 0.49 && p->decode_tokens_per_s / full < 0.55,
             "bf16 kernels at half the memory rate: decode %.1f -> %.1f tok/s", full,
             p->decode_tokens_per_s);
    r.device_op_s = 1e-3; /* slow dispatch: 9 ops a layer, 9 more a forward */
    SW_CHECK_OK(plan_build(&m, &b, &r, &w, NULL, p));
    double want = 1.0 / (1e-3 * (9.0 * m.config.n_layer + 9.0));
    SW_CHECK(fabs(p->decode_tokens_per_s / want - 1) < 0.01 &&
             !strcmp(p->decode_bottleneck, "op dispatch"), "dispatch-bound decode %.2f tok/s, "
             "want %.2f (%s)", p->decode_tokens_per_s, want, p->decode_bottleneck);
    SW_CHECK_OK(plan_model_from_catalog("gemma3-27b", NULL, &m)); /* Q4_K_M */
    SW_CHECK(m.layer_type_bytes[0][type_decode_index(SW_TYPE_Q4_K)] > 0 &&
             m.layer_type_bytes[0][type_decode_index(SW_TYPE_Q6_K)] > 0,
             "Q4_K_M layers hold Q4_K and Q6_K bytes");
    free(p);
}

static void test_rates_parse(void) {
    plan_rates r;
    const char *ok = "{\"h2d_pinned_Bps\":2.5e10, \"h2d_pageable_Bps\":1e10,\"host_mem_Bps\":"
                     "3e10,\"device_mem_Bps\":0,\"disk_read_Bps\":2e9,\"host_flops\":5e11,"
                     "\"device_flops\":1e14,\"memcpy_Bps\":1e10,\"quick\":1,\"host\":\"a\\\"b\","
                     "\"ok\":true,\"x\":null}\n";
    SW_CHECK_OK(plan_rates_parse(ok, strlen(ok), &r));
    SW_CHECK(r.measured && r.h2d_pinned_Bps == 2.5e10 && r.host_mem_Bps == 3e10 &&
             r.device_mem_Bps == 1e12 && r.device_flops == 1e14, "doctor cache values");
    const char *bad[] = {"", "[1]", "{\"a\":{}}", "{\"a\":1", "{\"a\" 1}", "{\"a\":1,}",
                         "{\"a\":x}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        SW_CHECK(plan_rates_parse(bad[i], strlen(bad[i]), &r) == SW_ERR_FORMAT,
                 "doctor cache '%s' should be rejected", bad[i]);
    SW_CHECK_OK(plan_rates_parse("{}", 2, &r));
    const char *kern = "{\"device_op_s\":4e-6,\"device_decode_q4_k_Bps\":5e11,"
                       "\"host_decode_bf16_Bps\":2e10}";
    SW_CHECK_OK(plan_rates_parse(kern, strlen(kern), &r));
    SW_CHECK(r.device_op_s == 4e-6 &&
             r.device_decode_Bps[type_decode_index(SW_TYPE_Q4_K)] == 5e11 &&
             r.host_decode_Bps[type_decode_index(SW_TYPE_BF16)] == 2e10 &&
             r.device_decode_Bps[type_decode_index(SW_TYPE_BF16)] == 0,
             "doctor cache: dispatch and per-type decode rates");
}

int test_plan_sweeps(void) {
    sweep("gemma3-270m", NULL, 4096, true);
    sweep("gemma3-270m", NULL, 4096, false);
    sweep("gemma2-9b", "q8_0", 8192, false);
    sweep("gemma3-27b", NULL, 8192, false);
    sweep("gemma3-27b", "bf16", 32768, true);
    test_failure_message();
    test_levers();
    test_pins_honoured();
    test_cpu_backend();
    test_link_bound();
    test_kernel_rates();
    test_rates_parse();
    return 0;
}
