/*
 * test_plan_split.c — one plan over several devices (plan/split.h) on
 * catalog models: stage models that keep each layer's shape, attention
 * type and KV source; splits over 2-4 devices whose ranges cover the
 * layers in order, each device within its budget and the host within the
 * shared one; no cut between a KV-shared layer and its cache; a split
 * that fits where one device cannot (and says so); and the failures that
 * name the short device or the host.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model/kv.h"
#include "plan/plan_api.h"
#include "plan/split.h"

#define GIB (1024ull * 1024 * 1024)

typedef struct inputs {
    plan_model m;
    plan_budget b;
    plan_rates r;
    plan_workload w;
} inputs;

static void make(inputs *in, const char *name, uint64_t host, uint32_t n_ctx) {
    memset(in, 0, sizeof *in);
    SW_CHECK_OK(plan_model_from_catalog(name, NULL, &in->m));
    in->b.has_device = true;
    snprintf(in->b.backend, sizeof in->b.backend, "sim");
    snprintf(in->b.device_name, sizeof in->b.device_name, "sim");
    in->b.host_bytes = host;
    in->b.pinned_limit_bytes = UINT64_MAX;
    plan_rates_default(&in->r);
    in->w = (plan_workload){.n_ctx = n_ctx, .n_seq = 1, .n_batch = 64, .n_threads = 2,
                            .kv_type = PLAN_KV_F16};
}

/* A stage model keeps every layer as the model has it, renumbered. */
static void test_stage_model(void) {
    static inputs in;
    static plan_model st;
    make(&in, "gemma4-e2b", 64 * GIB, 4096);
    const model_config *c = &in.m.config;
    uint32_t bad = 0;
    SW_CHECK_OK(plan_stage_model(&in.m, 3, 15, &st));
    for (uint32_t i = 0; i < 12; i++) {
        bad += st.layer_bytes[i] != in.m.layer_bytes[3 + i];
        bad += model_layer_is_local(&st.config, i) != model_layer_is_local(c, 3 + i);
        bad += model_layer_head_dim(&st.config, i) != model_layer_head_dim(c, 3 + i);
        bad += kv_layer_bytes(&st.config, i, 100, 1) != kv_layer_bytes(c, 3 + i, 100, 1);
    }
    SW_CHECK(bad == 0 && st.config.n_layer == 12, "stage 3-14: %u facts differ", bad);
    SW_CHECK(st.embd_bytes == 0 && st.ple_bytes == 0 && st.output_bytes == 0,
             "a middle stage holds no embedding or LM head");
    /* E2B's layers 15-34 read the caches of layers 13 and 14 */
    SW_CHECK_OK(plan_stage_model(&in.m, 13, 35, &st));
    bad = 0;
    for (uint32_t il = 15; il < 35; il++)
        bad += model_layer_kv_owner(&st.config, il - 13) + 13 != model_layer_kv_owner(c, il);
    SW_CHECK(bad == 0 && st.output_bytes == in.m.output_bytes, "last stage: %u KV sources "
             "moved", bad);
    SW_CHECK(plan_stage_model(&in.m, 14, 35, &st) == SW_ERR_ARG, "a stage without layer 13, "
             "whose cache its layers read, is refused");
    SW_CHECK(plan_stage_model(&in.m, 5, 5, &st) == SW_ERR_ARG &&
             plan_stage_model(&in.m, 0, 36, &st) == SW_ERR_ARG, "empty and overlong stages");
}

/* Ranges in order covering every layer, each device within its budget,
 * the host within its own, the stages' layers summing to the model's. */
static void check_split(const inputs *in, const plan_split *s, const uint64_t *dev, uint32_t n) {
    uint64_t layers = 0, host = 0;
    SW_CHECK(s->n_dev == n && s->first[0] == 0 && s->end[n - 1] == in->m.config.n_layer,
             "%u devices cover the layers", n);
    for (uint32_t d = 0; d < n; d++) {
        const plan *p = &s->stage[d];
        SW_CHECK(s->first[d] < s->end[d] && (d == 0 || s->first[d] == s->end[d - 1]),
                 "device %u's range follows the last", d);
        SW_CHECK(p->tier_bytes[TIER_DEVICE] <= dev[d], "device %u: %llu bytes planned of %llu",
                 d, (unsigned long long)p->tier_bytes[TIER_DEVICE], (unsigned long long)dev[d]);
        for (uint32_t i = 0; i < p->model.config.n_layer; i++)
            layers += p->model.layer_bytes[i];
        host += p->tier_bytes[TIER_HOST] + p->tier_bytes[TIER_PINNED];
        SW_CHECK(s->busy_share[d] > 0 && s->busy_share[d] <= 1.0 + 1e-9, "busy share %.3f",
                 s->busy_share[d]);
    }
    uint64_t all = 0;
    for (uint32_t il = 0; il < in->m.config.n_layer; il++)
        all += in->m.layer_bytes[il];
    SW_CHECK(layers == all, "the stages hold %llu layer bytes of %llu", (unsigned long long)layers,
             (unsigned long long)all);
    SW_CHECK(host <= in->b.host_bytes && host == s->host_planned_bytes + s->pinned_planned_bytes,
             "host %llu of %llu", (unsigned long long)host, (unsigned long long)in->b.host_bytes);
    SW_CHECK(s->decode_tokens_per_s > 0 && s->prefill_tokens_per_s >= s->prefill_serial_tokens_per_s,
             "predictions: pipelining never slows prefill");
}

static void test_splits(void) {
    static inputs in;
    static plan_split s;
    make(&in, "gemma3-27b", 64 * GIB, 4096);
    const uint64_t budgets[][4] = {{16 * GIB, 16 * GIB}, {6 * GIB, 8 * GIB},
                                   {2 * GIB, 2 * GIB}, {4 * GIB, 4 * GIB, 4 * GIB},
                                   {3 * GIB, 9 * GIB, 3 * GIB, 1 * GIB}};
    const uint32_t n[] = {2, 2, 2, 3, 4};
    for (size_t k = 0; k < sizeof n / sizeof n[0]; k++) {
        SW_CHECK_OK(plan_split_build(&in.m, &in.b, budgets[k], n[k], &in.r, &in.w, NULL, &s));
        check_split(&in, &s, budgets[k], n[k]);
    }
    /* two equal devices with room for everything: every layer resident,
     * the LM head on the last device, the layers halved */
    SW_CHECK_OK(plan_split_build(&in.m, &in.b, budgets[0], 2, &in.r, &in.w, NULL, &s));
    SW_CHECK(s.stage[0].tier_bytes[TIER_DEVICE] > 0 && s.end[0] == 31 &&
             s.stage[1].lm_head_place == PLACE_RESIDENT, "16G,16G: cut at %u", s.end[0]);
    for (uint32_t d = 0; d < 2; d++)
        for (uint32_t i = 0; i < s.stage[d].model.config.n_layer; i++)
            SW_CHECK(s.stage[d].layer_place[i] == PLACE_RESIDENT, "device %u layer %u resident",
                     d, i);
    /* the same inputs give the same split */
    static plan_split again;
    SW_CHECK_OK(plan_split_build(&in.m, &in.b, budgets[1], 2, &in.r, &in.w, NULL, &s));
    SW_CHECK_OK(plan_split_build(&in.m, &in.b, budgets[1], 2, &in.r, &in.w, NULL, &again));
    SW_CHECK(memcmp(s.end, again.end, sizeof s.end) == 0 &&
             s.decode_tokens_per_s == again.decode_tokens_per_s, "deterministic");
}

/* Gemma 4 E4B: layers 24-41 read the caches of 22 and 23, so no cut lies
 * in 23..41. */
static void test_kv_shared_cut(void) {
    static inputs in;
    static plan_split s;
    make(&in, "gemma4-e4b", 64 * GIB, 4096);
    const uint64_t dev[3] = {GIB, GIB, GIB};
    SW_CHECK_OK(plan_split_build(&in.m, &in.b, dev, 3, &in.r, &in.w, NULL, &s));
    check_split(&in, &s, dev, 3);
    for (uint32_t d = 0; d + 1 < 3; d++) {
        const uint32_t cut = s.end[d];
        for (uint32_t il = cut; il < in.m.config.n_layer; il++)
            SW_CHECK(model_layer_kv_owner(&in.m.config, il) >= cut, "cut %u separates layer "
                     "%u from its cache", cut, il);
    }
}

/* A long context that one 7 GiB device and a 3 GiB host cannot hold,
 * which two such devices can: the split says one alone fits no plan. */
static void test_only_split_fits(void) {
    static inputs in;
    static plan_split s;
    static plan one;
    make(&in, "gemma3-27b", 3 * GIB, 131072);
    const uint64_t dev[2] = {7 * GIB, 7 * GIB};
    in.b.device_bytes = dev[0];
    SW_CHECK(plan_build(&in.m, &in.b, &in.r, &in.w, NULL, &one) == SW_ERR_OOM_DEVICE,
             "one device alone is short");
    SW_CHECK_OK(plan_split_build(&in.m, &in.b, dev, 2, &in.r, &in.w, NULL, &s));
    check_split(&in, &s, dev, 2);
    SW_CHECK(!s.single_fits && s.single_decode_tokens_per_s == 0, "says one device fits none");
}

/* --place A-B=devN: the ranges hold the pinned layers; pins out of order,
 * past the devices or leaving a device empty are refused. */
static void test_device_pins(void) {
    static inputs in;
    static plan_split s;
    static plan_pins pins;
    make(&in, "gemma3-27b", 64 * GIB, 4096);
    const uint64_t two[2] = {16 * GIB, 16 * GIB}, three[3] = {8 * GIB, 8 * GIB, 8 * GIB};
    SW_CHECK_OK(plan_parse_place("0-40=dev0", 62, &pins));
    SW_CHECK_OK(plan_split_build(&in.m, &in.b, two, 2, &in.r, &in.w, &pins, &s));
    SW_CHECK(s.end[0] >= 41, "0-40=dev0: device 0 ends at %u", s.end[0]);
    SW_CHECK_OK(plan_parse_place("0-5=dev0,6-61=dev1", 62, &pins));
    SW_CHECK_OK(plan_split_build(&in.m, &in.b, two, 2, &in.r, &in.w, &pins, &s));
    SW_CHECK(s.end[0] == 6, "0-5=dev0,6-=dev1: cut at %u", s.end[0]);
    SW_CHECK_OK(plan_parse_place("10=dev1,50=dev2", 62, &pins));
    SW_CHECK_OK(plan_split_build(&in.m, &in.b, three, 3, &in.r, &in.w, &pins, &s));
    check_split(&in, &s, three, 3);
    SW_CHECK(s.first[1] <= 10 && s.end[1] > 10 && s.first[2] <= 50, "three devices: %u-%u-%u",
             s.end[0], s.end[1], s.end[2]);
    const char *bad[] = {"0-9=dev1,10-=dev0", "5=dev2", "50-=dev0", "x=dev0", "3=dev9"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        sw_status st = plan_parse_place(bad[k], 62, &pins);
        if (st == SW_OK)
            st = plan_split_build(&in.m, &in.b, two, 2, &in.r, &in.w, &pins, &s);
        SW_CHECK(st == SW_ERR_ARG, "--place %s is refused (%s)", bad[k], sw_status_name(st));
    }
}

/* Micro-batches (split_micro.c): one sequence stays whole (a step of one
 * token cannot be cut); 64 sequences on two devices that hold every layer,
 * compute-bound under the default device rates, are cut, and the plan then
 * predicts faster decode than the stages in turn. */
static void test_micro_batches(void) {
    static inputs in;
    static plan_split s;
    const uint64_t two[2] = {24 * GIB, 24 * GIB}; /* every layer and its KV resident */
    make(&in, "gemma3-27b", 64 * GIB, 256);
    SW_CHECK_OK(plan_split_build(&in.m, &in.b, two, 2, &in.r, &in.w, NULL, &s));
    SW_CHECK(s.decode_parts == 1 && s.prefill_parts == 1, "build leaves passes whole");
    SW_CHECK_OK(plan_split_micro(&in.m, &in.r, &in.w, &s));
    SW_CHECK(s.decode_parts == 1, "one sequence: %u parts", s.decode_parts);
    in.w.n_seq = 64;
    SW_CHECK_OK(plan_split_build(&in.m, &in.b, two, 2, &in.r, &in.w, NULL, &s));
    const double whole = s.decode_tokens_per_s;
    SW_CHECK_OK(plan_split_micro(&in.m, &in.r, &in.w, &s));
    SW_CHECK(s.decode_parts == 2 && s.decode_parts_tokens_per_s > 1.2 * whole &&
                 s.decode_tokens_per_s == whole, "64 sequences: %u parts, %.1f tok/s against "
             "%.1f whole", s.decode_parts, s.decode_parts_tokens_per_s, whole);
}

static void test_failures(void) {
    static inputs in;
    static plan_split s;
    make(&in, "gemma3-27b", 64 * GIB, 4096);
    const uint64_t tiny[2] = {100ull << 20, 100ull << 20};
    SW_CHECK(plan_split_build(&in.m, &in.b, tiny, 2, &in.r, &in.w, NULL, &s) ==
                 SW_ERR_OOM_DEVICE, "100M,100M is short");
    SW_CHECK(strstr(sw_last_error(), "device 0:") && strstr(sw_last_error(), "--device-mem"),
             "names the short device and a fitting budget: %s", sw_last_error());
    /* a small model's fitting budgets in MiB, and they fit */
    make(&in, "gemma3-270m", 64 * GIB, 4096);
    const uint64_t small[2] = {1ull << 20, 1ull << 20};
    SW_CHECK(plan_split_build(&in.m, &in.b, small, 2, &in.r, &in.w, NULL, &s) ==
                 SW_ERR_OOM_DEVICE, "1M,1M is short for gemma3-270m");
    unsigned long long fit0 = 0, fit1 = 0;
    const char *at = strstr(sw_last_error(), "--device-mem ");
    SW_CHECK(at != NULL && sscanf(at, "--device-mem %lluM,%lluM", &fit0, &fit1) == 2,
             "the fitting budgets in MiB: %s", sw_last_error());
    const uint64_t fits[2] = {fit0 << 20, fit1 << 20};
    SW_CHECK(fit0 > 0 && fit1 > 0 &&
                 plan_split_build(&in.m, &in.b, fits, 2, &in.r, &in.w, NULL, &s) == SW_OK,
             "the suggested %lluM,%lluM does not fit: %s", fit0, fit1, sw_last_error());
    make(&in, "gemma3-27b", 1ull << 20, 4096);
    const uint64_t big[2] = {16 * GIB, 16 * GIB};
    SW_CHECK(plan_split_build(&in.m, &in.b, big, 2, &in.r, &in.w, NULL, &s) == SW_ERR_OOM_HOST,
             "a 1 MiB host is short: %s", sw_last_error());
    const uint64_t one[1] = {GIB};
    SW_CHECK(plan_split_build(&in.m, &in.b, one, 1, &in.r, &in.w, NULL, &s) == SW_ERR_ARG,
             "one device is not a split");
    in.b.has_device = false;
    SW_CHECK(plan_split_build(&in.m, &in.b, big, 2, &in.r, &in.w, NULL, &s) == SW_ERR_ARG,
             "no device backend");
}

int main(void) {
    test_stage_model();
    test_splits();
    test_kv_shared_cut();
    test_only_split_fits();
    test_device_pins();
    test_micro_batches();
    test_failures();
    return sw_check_finish("test_plan_split");
}
