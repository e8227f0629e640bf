/*
 * test_plan_gemma4.c — Gemma 4's shapes in the config and the planner:
 * the catalog's per-layer heads, MLP widths and KV sharing (each shared
 * layer reads the last earlier layer of its attention type, as
 * transformers' Gemma 4 does), the layer table without K/V in shared
 * layers and without V on keys-as-values layers, plans that keep no cache
 * for shared layers, the per-layer embedding table counted apart from the
 * layers, routed experts read in part, and the checks on bad layer
 * shapes.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model/kv.h"
#include "model/weights.h"
#include "plan/plan_api.h"
#include "quant/types.h"

#define GB 1e9

static const layer_tensor *table_entry(block_weight role) {
    size_t n = 0;
    const layer_tensor *t = model_layer_tensors(&n);
    for (size_t i = 0; i < n; i++)
        if (t[i].role == role)
            return &t[i];
    return NULL;
}

static bool has(const model_config *c, uint32_t il, block_weight role) {
    return model_has_tensor(c, il, table_entry(role));
}

static void test_e2b_layers(void) {
    plan_model m;
    SW_CHECK_OK(plan_model_from_catalog("gemma4-e2b", NULL, &m));
    const model_config *c = &m.config;
    SW_CHECK(c->n_layer == 35 && c->n_embd_per_layer == 256 && c->n_ff == 12288 &&
             c->n_embd_head == 512, "E2B config");
    SW_CHECK_OK(model_config_check_layers(c));
    uint32_t bad = 0;
    for (uint32_t il = 0; il < 35; il++) {
        const bool local = il % 5 != 4, shared = il >= 15;
        bad += model_layer_is_local(c, il) != local;
        bad += model_layer_head_dim(c, il) != (local ? 256u : 512u);
        bad += model_layer_n_ff(c, il) != (shared ? 12288u : 6144u);
        bad += model_layer_owns_kv(c, il) == shared;
        bad += model_layer_kv_owner(c, il) != (!shared ? il : local ? 13u : 14u);
        bad += has(c, il, BW_K) == shared || has(c, il, BW_V) == shared;
        bad += !has(c, il, BW_PLE_GATE) || has(c, il, BW_ROUTER);
        bad += (kv_layer_bytes(c, il, 100, SW_TYPE_F16) == 0) != shared;
    }
    SW_CHECK(bad == 0, "E2B: %u per-layer facts wrong", bad);
    /* the table: 35 x 256 values a row, Q5_K (176 bytes per 256) */
    SW_CHECK(m.ple_bytes == 35ull * 256 / 256 * 176 * 262144, "E2B PLE table %llu bytes",
             (unsigned long long)m.ple_bytes);
    uint64_t layers = 0;
    for (uint32_t il = 0; il < 35; il++)
        layers += m.layer_bytes[il];
    SW_CHECK(layers < m.ple_bytes, "E2B: the PLE table (%.2f GB) outweighs the layers (%.2f)",
             m.ple_bytes / GB, layers / GB);
    /* llama.cpp's E4B Q4_K_M file is 4.96 GB, its table 1.94 GB (gemma4-facts) */
    SW_CHECK_OK(plan_model_from_catalog("gemma4-e4b", NULL, &m));
    SW_CHECK(fabs(plan_model_total_bytes(&m) / GB / 4.96 - 1) < 0.03 &&
             fabs(m.ple_bytes / GB / 1.94 - 1) < 0.01, "E4B %.2f GB, table %.2f GB",
             plan_model_total_bytes(&m) / GB, m.ple_bytes / GB);
}

static void test_k_eq_v_and_experts(void) {
    plan_model m;
    SW_CHECK_OK(plan_model_from_catalog("gemma4-26b-a4b", NULL, &m));
    const model_config *c = &m.config;
    uint32_t bad = 0;
    for (uint32_t il = 0; il < c->n_layer; il++) {
        const bool local = il % 6 != 5;
        bad += model_layer_n_head_kv(c, il) != (local ? 8u : 2u);
        bad += has(c, il, BW_V) != local || !has(c, il, BW_K);
        bad += !has(c, il, BW_GATE_UP_EXPS) || !has(c, il, BW_FFN_NORM_2);
        bad += m.layer_expert_bytes[il] == 0 || m.layer_expert_bytes[il] >= m.layer_bytes[il];
    }
    SW_CHECK(bad == 0 && m.ple_bytes == 0, "26B-A4B: %u per-layer facts wrong", bad);
    const layer_tensor *gu = table_entry(BW_GATE_UP_EXPS);
    SW_CHECK(model_tensor_elems(c, 0, gu) == 128ull * 1408 * 2816, "gate_up experts' elements");

    /* Decode reads the experts its token is routed to: 8 of 128. */
    plan_rates r;
    plan_rates_default(&r);
    plan_budget b = {false, "", 0, 0, 1ull << 40, UINT64_MAX, 0, "cpu", 0, ""};
    plan_workload w = {4096, 1, 64, 2, PLAN_KV_F16, false, false};
    plan *p = calloc(2, sizeof *p);
    if (p == NULL)
        return;
    SW_CHECK_OK(plan_build(&m, &b, &r, &w, NULL, &p[0]));
    m.config.n_expert_used = m.config.n_expert; /* as if every expert ran */
    SW_CHECK_OK(plan_build(&m, &b, &r, &w, NULL, &p[1]));
    SW_CHECK(p[0].decode_tokens_per_s > 3 * p[1].decode_tokens_per_s,
             "top-8 decode %.2f tok/s vs all experts %.2f", p[0].decode_tokens_per_s,
             p[1].decode_tokens_per_s);
    free(p);
}

static void test_plan_keeps_no_shared_cache(void) {
    plan_model m;
    plan_rates r;
    plan_rates_default(&r);
    plan_budget b = {true, "test", 4ull << 30, 4ull << 30, 1ull << 40, UINT64_MAX, 0, "sim", 0, ""};
    plan_workload w = {8192, 1, 64, 2, PLAN_KV_F16, false, false};
    plan *p = calloc(1, sizeof *p);
    if (p == NULL)
        return;
    SW_CHECK_OK(plan_model_from_catalog("gemma4-e2b", NULL, &m));
    SW_CHECK_OK(plan_build(&m, &b, &r, &w, NULL, p));
    uint32_t n_kv = 0, shared_note = 0;
    for (uint32_t i = 0; i < p->n_buffers; i++)
        if (p->buffers[i].kind == BUF_KV) {
            n_kv++;
            SW_CHECK(p->buffers[i].layer < 15, "a cache for shared layer %d",
                     p->buffers[i].layer);
        }
    for (uint32_t i = 0; i < p->n_notes; i++)
        shared_note += strstr(p->notes[i], "KV sharing: layers 15-34") != NULL;
    SW_CHECK(n_kv == 15 && shared_note == 1, "%u caches, sharing note %u", n_kv, shared_note);
    free(p);
}

/* Experts as placement units: pinned by --place experts:... or -ncmoe,
 * and chosen by the planner when the device is short (the 26B on
 * 8 GiB: every layer on the device, the experts of the first layers on
 * the host, as many of the others' on the device as fit; on 2 GiB all on
 * the host). */
static void test_experts_on_host(void) {
    plan_model m;
    plan_rates r;
    plan_rates_default(&r);
    plan_budget b = {true, "test", 8ull << 30, 8ull << 30, 32ull << 30, UINT64_MAX, 0, "sim", 0, ""};
    plan_workload w = {4096, 1, 64, 2, PLAN_KV_F16, false, false};
    plan *p = calloc(1, sizeof *p);
    plan_pins pins;
    if (p == NULL)
        return;
    SW_CHECK_OK(plan_model_from_catalog("gemma4-26b-a4b", NULL, &m));
    for (int k = 0; k < 2; k++) {
        b.device_bytes = b.device_total_bytes = k ? 2ull << 30 : 8ull << 30;
        SW_CHECK_OK(plan_build(&m, &b, &r, &w, NULL, p));
        uint32_t n_dev = 0, n_exp = 0, prefix = 0;
        for (uint32_t il = 0; il < 30; il++) {
            n_dev += p->layer_place[il] != PLACE_HOST;
            n_exp += p->experts_host[il];
            prefix += p->experts_host[il] && prefix == il;
        }
        SW_CHECK(n_dev == 30 && (k ? n_exp == 30 : n_exp > 0 && n_exp < 30) &&
                     prefix == n_exp && p->tier_bytes[TIER_DEVICE] <= b.device_bytes,
                 "26B on %s: %u device layers, %u with experts on the host (%u first)",
                 k ? "2 GiB" : "8 GiB", n_dev, n_exp, prefix);
    }
    /* pinned: experts of 0-9 on the host, every layer resident, a big card */
    b.device_bytes = b.device_total_bytes = 40ull << 30;
    SW_CHECK_OK(plan_parse_place("all=resident,experts:0-9=host", 30, &pins));
    SW_CHECK_OK(plan_build(&m, &b, &r, &w, &pins, p));
    SW_CHECK(p->experts_host[0] && p->experts_host[9], "pinned experts on the host");
    bool wrong = false;
    for (uint32_t i = 0; i < p->n_buffers; i++)
        if (p->buffers[i].kind == BUF_LAYER)
            wrong |= p->buffers[i].bytes != m.layer_bytes[p->buffers[i].layer] -
                                                (p->experts_host[p->buffers[i].layer]
                                                     ? m.layer_expert_bytes[p->buffers[i].layer]
                                                     : 0);
    SW_CHECK(!wrong, "device layer buffers leave out exactly the experts on the host");
    memset(&pins, 0, sizeof pins);
    plan_pins_apply_ncmoe(&pins, 30, 12);
    SW_CHECK(pins.experts[11] == PLACE_HOST && pins.experts[12] == PLACE_AUTO, "-ncmoe 12");
    SW_CHECK(plan_parse_place("experts:0-3=resident", 30, &pins) == SW_ERR_ARG,
             "experts are host or auto");
    /* a model without experts refuses experts pins */
    SW_CHECK_OK(plan_model_from_catalog("gemma4-31b", NULL, &m));
    SW_CHECK_OK(plan_parse_place("experts:0-3=host", 60, &pins));
    SW_CHECK(plan_build(&m, &b, &r, &w, &pins, p) == SW_ERR_ARG &&
             strstr(sw_last_error(), "no experts") != NULL, "experts pinned without experts");
    free(p);
}

static void test_bad_shapes(void) {
    model_config *c = calloc(1, sizeof *c);
    if (c == NULL)
        return;
    c->n_layer = 6;
    c->n_head = 4;
    c->n_head_kv = 2;
    c->n_embd_head = 32;
    c->n_ff = 64;
    c->swa_pattern = 3; /* local, local, full, ... */
    SW_CHECK_OK(model_config_check_layers(c));
    SW_CHECK(model_config_share_kv(c, 6) == SW_ERR_FORMAT, "every layer shared");
    SW_CHECK_OK(model_config_share_kv(c, 3));
    SW_CHECK(c->layer[3].kv_source == 1 && c->layer[4].kv_source == 1 &&
             c->layer[5].kv_source == 2, "sources %u %u %u", c->layer[3].kv_source,
             c->layer[4].kv_source, c->layer[5].kv_source);
    SW_CHECK_OK(model_config_check_layers(c));
    c->layer[5].kv_source = 5;
    SW_CHECK(model_config_check_layers(c) == SW_ERR_FORMAT &&
             strstr(sw_last_error(), "layer 5") != NULL, "a layer sharing its own cache");
    c->layer[5].kv_source = 4;
    SW_CHECK(model_config_check_layers(c) == SW_ERR_FORMAT, "sharing a shared layer's cache");
    c->layer[5].kv_source = 1;
    SW_CHECK(model_config_check_layers(c) == SW_ERR_FORMAT, "a full layer on a local cache");
    memset(c->layer, 0, sizeof c->layer);
    c->layer[2].n_head_kv = 3;
    SW_CHECK(model_config_check_layers(c) == SW_ERR_FORMAT, "3 KV heads for 4 query heads");
    c->layer[2].n_head_kv = 0;
    c->layer[2].head_dim = 64;
    SW_CHECK(model_config_check_layers(c) == SW_ERR_FORMAT, "a head wider than the model's");
    c->layer[2].head_dim = 0;
    /* only local layers before the one full layer that is shared */
    c->swa_pattern = 6;
    SW_CHECK(model_config_share_kv(c, 1) == SW_ERR_FORMAT &&
             strstr(sw_last_error(), "full") != NULL, "no full layer to share with: %s",
             sw_last_error());
    free(c);
}

int main(void) {
    test_e2b_layers();
    test_k_eq_v_and_experts();
    test_plan_keeps_no_shared_cache();
    test_experts_on_host();
    test_bad_shapes();
    return sw_check_finish("test_plan_gemma4");
}
