/*
 * test_plan.c — the planner: size and --place parsing, catalog sizes
 * against gemma-facts §7, invariants of plans over budget sweeps (device
 * total within budget, tier totals = sum of buffers, every layer placed,
 * deterministic, speed monotone in the budget), the failure one byte below
 * the smallest plan, pins, the cpu backend, and the link-bound prediction.
 * Pure and fast: no model file is needed except for the file-vs-catalog
 * check, which reports "skipped" without the default model.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model/kv.h"
#include "engine/pack.h"
#include "model/model_internal.h"
#include "model/weights.h"
#include "plan/plan_api.h"

#define MIB (1024.0 * 1024.0)
#define GIB (1024.0 * MIB)

static plan *new_plan(void) {
    plan *p = calloc(1, sizeof *p);
    if (p == NULL) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return p;
}

/* ---- sizes ------------------------------------------------------------- */

static void test_sizes(void) {
    static const struct { const char *s; uint64_t whole, want; } good[] = {
        {"512M", 0, 512ull << 20}, {"8G", 0, 8ull << 30}, {"8GiB", 0, 8ull << 30},
        {"8gib", 0, 8ull << 30}, {"8GB", 0, 8000000000ull}, {"1.5G", 0, 1610612736ull},
        {"100", 0, 100}, {"100B", 0, 100}, {"1K", 0, 1024}, {"2kb", 0, 2000},
        {"2T", 0, 2ull << 40}, {"0.5K", 0, 512}, {"80%", 1000, 800}, {"0.5%", 1000, 5},
        {"12.5%", 8, 1}, {"100%", 12345, 12345}, {"16383T", 0, 16383ull << 40},
    };
    static const struct { const char *s; uint64_t whole; } bad[] = {
        {"", 0}, {"abc", 0}, {"12X", 0}, {"-5M", 0}, {"0", 0}, {"0M", 0}, {"0.0001", 0},
        {"1e3", 0}, {"99999999T", 0}, {"18446744073709551616", 0}, {"50%", 0},
        {"101%", 100}, {"0%", 100}, {"1.2.3G", 0}, {"G", 0}, {" 8G", 0}, {"8 G", 0},
        {"1.1234567G", 0}, {".", 0}, {"8GiBs", 0}, {"1%", 50},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        uint64_t v = 0;
        sw_status st = plan_parse_size(good[i].s, good[i].whole, &v);
        SW_CHECK(st == SW_OK && v == good[i].want, "size '%s' -> %d %llu (want %llu): %s",
                 good[i].s, st, (unsigned long long)v, (unsigned long long)good[i].want,
                 sw_last_error());
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t v = 0;
        sw_status st = plan_parse_size(bad[i].s, bad[i].whole, &v);
        SW_CHECK(st == SW_ERR_ARG && strlen(sw_last_error()) > 10,
                 "size '%s' should fail, got %d %llu", bad[i].s, st, (unsigned long long)v);
    }
    uint64_t bps = 0;
    SW_CHECK_OK(sw_parse_rate("16GB/s", &bps));
    SW_CHECK(bps == 16000000000ull, "16GB/s -> %llu", (unsigned long long)bps);
    /* A size alone is read per second (the issue's `--sim-link-bw 2G`). */
    SW_CHECK_OK(sw_parse_rate("2G", &bps));
    SW_CHECK(bps == 2ull << 30, "2G -> %llu (want 2 GiB/s)", (unsigned long long)bps);
    SW_CHECK_OK(sw_parse_rate("16GB", &bps));
    SW_CHECK(bps == 16000000000ull, "16GB -> %llu", (unsigned long long)bps);
    const char *bad_rates[] = {"", "/s", "fast", "80%", "2G/s/s", "-1G"};
    for (size_t i = 0; i < sizeof bad_rates / sizeof bad_rates[0]; i++)
        SW_CHECK(sw_parse_rate(bad_rates[i], &bps) == SW_ERR_ARG, "rate '%s' accepted",
                 bad_rates[i]);
    double frac = 0;
    SW_CHECK_OK(sw_parse_fraction("80%", &frac));
    SW_CHECK(frac == 0.8, "80%% -> %.17g", frac);
    SW_CHECK_OK(sw_parse_fraction("12.5%", &frac));
    SW_CHECK(frac == 0.125, "12.5%% -> %.17g", frac);
    const char *bad_fracs[] = {"80", "0%", "101%", "%", "x%"};
    for (size_t i = 0; i < sizeof bad_fracs / sizeof bad_fracs[0]; i++)
        SW_CHECK(sw_parse_fraction(bad_fracs[i], &frac) == SW_ERR_ARG, "fraction '%s' accepted",
                 bad_fracs[i]);
    char buf[32];
    plan_format_size(12ull << 30, buf, sizeof buf);
    SW_CHECK(!strcmp(buf, "12.0 GiB"), "format 12G -> '%s'", buf);
    plan_format_size(1000, buf, sizeof buf);
    SW_CHECK(!strcmp(buf, "1000 B"), "format 1000 -> '%s'", buf);
}

/* ---- pins -------------------------------------------------------------- */

static void test_pins(void) {
    plan_pins pins;
    SW_CHECK_OK(plan_parse_place("0-11=resident,12-20=streamed,21-=host,lm_head=host", 26,
                                 &pins));
    SW_CHECK(pins.layer[0] == PLACE_RESIDENT && pins.layer[11] == PLACE_RESIDENT &&
             pins.layer[12] == PLACE_STREAMED && pins.layer[20] == PLACE_STREAMED &&
             pins.layer[21] == PLACE_HOST && pins.layer[25] == PLACE_HOST &&
             pins.lm_head == PLACE_HOST, "place spec not applied");
    SW_CHECK_OK(plan_parse_place("all=host,0-3=resident,5=stream,LM_HEAD=device", 10, &pins));
    SW_CHECK(pins.layer[3] == PLACE_RESIDENT && pins.layer[4] == PLACE_HOST &&
             pins.layer[5] == PLACE_STREAMED && pins.layer[9] == PLACE_HOST &&
             pins.lm_head == PLACE_RESIDENT, "later items must override earlier ones");
    SW_CHECK_OK(plan_parse_place("7=auto", 10, &pins));
    SW_CHECK(pins.layer[7] == PLACE_AUTO && pins.lm_head == PLACE_AUTO, "auto pin");
    const char *bad[] = {"0-30=resident", "x=resident", "0-3=foo", "3-1=host", "=host",
                         "0-3=", "lm_head=streamed", "0-3=resident,,1=host", "", "-3=host",
                         "0-3", "1-2-3=host", "10=host"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sw_status st = plan_parse_place(bad[i], 10, &pins);
        SW_CHECK(st == SW_ERR_ARG, "place '%s' should fail (got %d)", bad[i], st);
    }
    SW_CHECK(plan_parse_place("0-30=resident", 26, &pins) == SW_ERR_ARG &&
             strstr(sw_last_error(), "26 layers") != NULL, "range error names the layer count: %s",
             sw_last_error());
    SW_CHECK_OK(plan_parse_place("5=host", 26, &pins));
    plan_pins_apply_ngl(&pins, 26, 10);
    SW_CHECK(pins.layer[0] == PLACE_RESIDENT && pins.layer[9] == PLACE_RESIDENT &&
             pins.layer[5] == PLACE_HOST && pins.layer[10] == PLACE_AUTO,
             "-ngl 10 with 5=host");
    memset(&pins, 0, sizeof pins);
    plan_pins_apply_ngl(&pins, 26, 99);
    SW_CHECK(pins.layer[25] == PLACE_RESIDENT, "-ngl 99 means every layer");
}

/* ---- catalog ----------------------------------------------------------- */

static uint64_t kv_total(const plan *p) {
    uint64_t total = 0;
    for (uint32_t i = 0; i < p->n_buffers; i++)
        total += p->buffers[i].kind == BUF_KV ? p->buffers[i].bytes : 0;
    return total;
}

static void test_catalog_sizes(void) {
    /* gemma-facts §7 totals, GiB (bf16, Q4_K_M) */
    static const struct { const char *name; double bf16, q4; } totals[] = {
        {"gemma-2b", 4.67, 1.51}, {"gemma-7b", 15.90, 4.96}, {"gemma2-2b", 4.87, 1.59},
        {"gemma2-9b", 17.21, 5.36}, {"gemma2-27b", 50.71, 15.50}, {"gemma3-270m", 0.50, 0.23},
        {"gemma3-1b", 1.86, 0.74}, {"gemma3-4b", 7.23, 2.31}, {"gemma3-12b", 21.92, 6.79},
        {"gemma3-27b", 50.31, 15.40},
    };
    plan_model m;
    for (size_t i = 0; i < sizeof totals / sizeof totals[0]; i++) {
        SW_CHECK_OK(plan_model_from_catalog(totals[i].name, "bf16", &m));
        double got = plan_model_total_bytes(&m) / GIB;
        SW_CHECK(fabs(got / totals[i].bf16 - 1) < 0.02, "%s bf16 %.2f GiB, §7 %.2f",
                 totals[i].name, got, totals[i].bf16);
        SW_CHECK_OK(plan_model_from_catalog(totals[i].name, NULL, &m));
        got = plan_model_total_bytes(&m) / GIB;
        SW_CHECK(fabs(got / totals[i].q4 - 1) < 0.02 && !strcmp(m.weight_type, "Q4_K_M"),
                 "%s q4_k_m %.2f GiB, §7 %.2f", totals[i].name, got, totals[i].q4);
    }
    /* G3-27B Q4_K_M layers: 221.6 MiB base (layer 7), 252.7 bumped, 30 of 62 bumped */
    SW_CHECK_OK(plan_model_from_catalog("Gemma-3-27B", "Q4_K_M", &m));
    uint32_t n_bumped = 0;
    for (uint32_t il = 0; il < 62; il++)
        n_bumped += m.layer_bytes[il] > m.layer_bytes[7] + 1000000;
    SW_CHECK(n_bumped == 30 && fabs(m.layer_bytes[7] / MIB - 221.6) < 0.1 &&
             fabs(m.layer_bytes[0] / MIB - 252.7) < 0.1, "27B layers %.1f/%.1f MiB, %u bumped",
             m.layer_bytes[7] / MIB, m.layer_bytes[0] / MIB, n_bumped);
    SW_CHECK(plan_model_from_catalog("gemma4-9b", NULL, &m) == SW_ERR_ARG &&
             strstr(sw_last_error(), "gemma3-27b") != NULL, "unknown name lists the catalog");
    SW_CHECK(plan_model_from_catalog("gemma3-1b", "q3_k", &m) == SW_ERR_ARG, "bad type");
}

/* Total KV at n_batch 1 (local rows = W) must equal §7's SWA examples. */
static void test_catalog_kv(void) {
    static const struct { const char *name; uint32_t ctx; double mib; } kv[] = {
        {"gemma2-9b", 8192, 2016}, {"gemma2-27b", 8192, 2208}, {"gemma3-1b", 32768, 139},
        {"gemma3-4b", 131072, 2676}, {"gemma3-12b", 32768, 2368}, {"gemma3-12b", 131072, 8512},
        {"gemma3-27b", 32768, 2976}, {"gemma3-27b", 131072, 10656},
    };
    plan_model m;
    plan_rates r;
    plan_budget b = {true, "test", 1ull << 50, 1ull << 50, 1ull << 50, UINT64_MAX, 0, "sim", 0, ""};
    plan *p = new_plan();
    plan_rates_default(&r);
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++) {
        plan_workload w = {kv[i].ctx, 1, 1, 1, PLAN_KV_F16, false, false};
        SW_CHECK_OK(plan_model_from_catalog(kv[i].name, NULL, &m));
        SW_CHECK_OK(plan_build(&m, &b, &r, &w, NULL, p));
        SW_CHECK(fabs(kv_total(p) / MIB - kv[i].mib) < 0.5, "%s ctx %u KV %.1f MiB, §7 %.0f",
                 kv[i].name, kv[i].ctx, kv_total(p) / MIB, kv[i].mib);
    }
    free(p);
}

/* The real default model: the planner's sizes equal the catalog's and the
 * engine's packing. */
static void test_file_matches_catalog(void) {
    sw_model *sm = NULL;
    if (sw_model_open(sw_test_default_model(), &sm) != SW_OK) {
        printf("test_plan: file-vs-catalog check skipped (no default model; spillway fetch)\n");
        return;
    }
    model_config c;
    model_weights w;
    plan_model from_file, from_cat;
    memset(&w, 0, sizeof w);
    SW_CHECK_OK(model_config_from_gguf(sm->gguf, &c));
    SW_CHECK_OK(model_weights_bind(sm->gguf, &c, &w));
    SW_CHECK_OK(plan_model_from_weights(&c, &w, "model", "Q4_K_M", 1, &from_file));
    SW_CHECK_OK(plan_model_from_catalog("gemma3-270m", "q4_k_m", &from_cat));
    SW_CHECK(from_file.embd_bytes == from_cat.embd_bytes && from_file.tied,
             "embedding %llu vs catalog %llu", (unsigned long long)from_file.embd_bytes,
             (unsigned long long)from_cat.embd_bytes);
    for (uint32_t il = 0; il < c.n_layer && w.layers; il++) {
        layer_pack pk;
        layer_pack_build(&c, il, &w.layers[il], &pk);
        SW_CHECK(from_file.layer_bytes[il] == from_cat.layer_bytes[il] &&
                 from_file.layer_bytes[il] == pk.total_bytes,
                 "layer %u: file %llu, catalog %llu, engine pack %llu", il,
                 (unsigned long long)from_file.layer_bytes[il],
                 (unsigned long long)from_cat.layer_bytes[il],
                 (unsigned long long)pk.total_bytes);
    }
    model_weights_free(&w);
    sw_model_close(sm);
}

int test_plan_sweeps(void);

int main(void) {
    test_sizes();
    test_pins();
    test_catalog_sizes();
    test_catalog_kv();
    test_file_matches_catalog();
    test_plan_sweeps();
    return sw_check_finish("test_plan");
}
