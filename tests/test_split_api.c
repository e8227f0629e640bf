/*
 * test_split_api.c — a split over several devices through the public API
 * alone (spillway.h: sw_engine_launch_split, sw_engine_n_devices,
 * sw_engine_device_report, sw_engine_format_plan), on two and three
 * simulated devices with a tiny Gemma 3: the prompt's logits bit-identical
 * to the cpu backend's, each device's figures (its layers, peak within plan
 * within budget, the stream device to device), the split's JSON, and the
 * refusals (one device, a budget of 0, budgets nothing fits in, a device
 * named twice, a drafter's share filling the first device) with their
 * messages.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "spillway.h"

#define N_PROMPT 12

static sw_plan_options opts(const char *backend) {
    sw_plan_options o = sw_plan_options_default();
    o.backend = backend;
    o.n_threads = 2;
    o.n_ctx = 64;
    o.device_mem_bytes = 64ull << 20;
    return o;
}

/* The prompt's logits, every position (n_prompt x n_vocab). */
static float *prompt_logits(sw_engine *e, const int32_t *ids, uint32_t n_vocab) {
    float *out = calloc((size_t)N_PROMPT * n_vocab, sizeof(float));
    sw_session *s = NULL;
    SW_CHECK_OK(sw_session_create(e, &s));
    if (s != NULL)
        SW_CHECK_OK(sw_session_eval(s, ids, N_PROMPT, out, 1));
    sw_session_destroy(s);
    return out;
}

static void check_devices(sw_engine *e, const uint64_t *budget, uint32_t n_dev,
                          uint32_t n_layer) {
    SW_CHECK(sw_engine_n_devices(e) == n_dev, "%u devices", sw_engine_n_devices(e));
    uint32_t next = 0;
    for (uint32_t d = 0; d < n_dev; d++) {
        sw_engine_device r;
        SW_CHECK_OK(sw_engine_device_report(e, d, &r));
        SW_CHECK(r.device == d && r.first_layer == next && r.end_layer > r.first_layer,
                 "device %u: number %u, layers %u-%u after %u", d, r.device, r.first_layer,
                 r.end_layer, next);
        SW_CHECK(r.peak_bytes > 0 && r.peak_bytes <= r.plan_bytes &&
                     r.plan_bytes <= r.budget_bytes && r.budget_bytes == budget[d],
                 "device %u: peak %llu, plan %llu, budget %llu", d,
                 (unsigned long long)r.peak_bytes, (unsigned long long)r.plan_bytes,
                 (unsigned long long)r.budget_bytes);
        /* every layer resident: each stage's input comes device to device */
        SW_CHECK(r.peer_in == (d > 0) && (r.peer_bytes > 0) == (d > 0) && r.busy_s > 0,
                 "device %u: peer %d, %llu bytes, busy %.3f s", d, r.peer_in,
                 (unsigned long long)r.peer_bytes, r.busy_s);
        next = r.end_layer;
    }
    SW_CHECK(next == n_layer, "the devices end at layer %u of %u", next, n_layer);
    sw_engine_device r;
    SW_CHECK(sw_engine_device_report(e, n_dev, &r) == SW_ERR_ARG, "no device %u", n_dev);
}

static void check_plan_json(sw_engine *e, uint32_t n_dev) {
    size_t n = 0;
    SW_CHECK_OK(sw_engine_format_plan(e, 1, NULL, 0, &n));
    char *text = malloc(n + 1);
    SW_CHECK_OK(sw_engine_format_plan(e, 1, text, n + 1, &n));
    char want[32];
    snprintf(want, sizeof want, "\"n_devices\":%u", n_dev);
    SW_CHECK(strncmp(text, "{\"split\":", 9) == 0 && strstr(text, want) != NULL &&
                 strstr(text, "\"devices\":[") != NULL,
             "the engine's plan is not the split's JSON: %.120s", text);
    free(text);
}

static void refusals(const sw_model *m) {
    const sw_plan_options o = opts("sim");
    const uint64_t one[1] = {64ull << 20}, zero[2] = {64ull << 20, 0};
    const uint64_t tiny[2] = {64ull << 10, 64ull << 10}, two[2] = {64ull << 20, 64ull << 20};
    sw_engine *e = (sw_engine *)(uintptr_t)1;
    SW_CHECK(sw_engine_launch_split(m, &o, one, NULL, 1, NULL, &e) == SW_ERR_ARG && e == NULL,
             "one device taken as a split");
    SW_CHECK(strstr(sw_last_error(), "2 to 8 devices") != NULL, "%s", sw_last_error());
    SW_CHECK(sw_engine_launch_split(m, &o, zero, NULL, 2, NULL, &e) == SW_ERR_ARG,
             "a budget of 0 taken");
    SW_CHECK(strstr(sw_last_error(), "device 1") != NULL, "%s", sw_last_error());
    SW_CHECK(sw_engine_launch_split(m, &o, tiny, NULL, 2, NULL, &e) == SW_ERR_OOM_DEVICE,
             "64 KiB devices: %s", sw_last_error());
    SW_CHECK(strstr(sw_last_error(), "device") != NULL, "%s", sw_last_error());
    const uint32_t twice[2] = {1, 1};
    SW_CHECK(sw_engine_launch_split(m, &o, two, twice, 2, NULL, &e) == SW_ERR_ARG,
             "device 1 named twice taken");
    sw_plan_options xo = o; /* a drafter's share as large as the first device's budget */
    xo.draft_device_bytes = two[0];
    SW_CHECK(sw_engine_launch_split(m, &xo, two, NULL, 2, NULL, &e) == SW_ERR_OOM_DEVICE,
             "a drafter filling device 0 taken");
    SW_CHECK(strstr(sw_last_error(), "drafter") != NULL, "%s", sw_last_error());
    SW_CHECK(sw_engine_launch_split(m, &o, NULL, NULL, 2, NULL, &e) == SW_ERR_ARG,
             "no budgets taken");
}

int main(void) {
    sw_model *m = NULL;
    SW_CHECK_OK(sw_model_open(sw_test_data("tiny/gemma3.gguf"), &m));
    if (m == NULL)
        return sw_check_finish("test_split_api");
    sw_model_summary sum;
    SW_CHECK_OK(sw_model_get_summary(m, &sum));
    const uint32_t n_vocab = (uint32_t)sw_vocab_size(m);
    int32_t ids[N_PROMPT];
    for (int i = 0; i < N_PROMPT; i++)
        ids[i] = (int32_t)((uint32_t)(i * 11 + 3) % n_vocab);
    sw_engine *cpu = NULL;
    sw_plan_options o = opts("cpu");
    SW_CHECK_OK(sw_engine_launch(m, &o, NULL, &cpu));
    if (cpu != NULL) {
        float *ref = prompt_logits(cpu, ids, n_vocab);
        SW_CHECK(sw_engine_n_devices(cpu) == 0, "the cpu backend drives %u devices",
                 sw_engine_n_devices(cpu));
        sw_engine_destroy(cpu);
        o = opts("sim");
        const uint64_t budget[3] = {32ull << 20, 32ull << 20, 32ull << 20};
        for (uint32_t n_dev = 2; n_dev <= 3 && n_dev <= sum.n_layer; n_dev++) {
            sw_engine *e = NULL;
            SW_CHECK_OK(sw_engine_launch_split(m, &o, budget, NULL, n_dev, NULL, &e));
            if (e == NULL)
                continue;
            float *got = prompt_logits(e, ids, n_vocab);
            SW_CHECK(memcmp(got, ref, (size_t)N_PROMPT * n_vocab * sizeof(float)) == 0,
                     "%u devices: the logits differ from the cpu backend's", n_dev);
            check_devices(e, budget, n_dev, sum.n_layer);
            check_plan_json(e, n_dev);
            printf("  %u simulated devices through the public API: same logits\n", n_dev);
            free(got);
            sw_engine_destroy(e);
        }
        /* a drafter's share off device 0's budget: its plan holds it, the
         * budget reported is the whole device's, the JSON has its row */
        o.draft_device_bytes = 8ull << 20;
        o.drafter = "the drafter";
        sw_engine *e = NULL;
        SW_CHECK_OK(sw_engine_launch_split(m, &o, budget, NULL, 2, NULL, &e));
        if (e != NULL) {
            float *got = prompt_logits(e, ids, n_vocab);
            SW_CHECK(memcmp(got, ref, (size_t)N_PROMPT * n_vocab * sizeof(float)) == 0,
                     "with a drafter's share: the logits differ from the cpu backend's");
            free(got);
            check_devices(e, budget, 2, sum.n_layer);
            sw_engine_device r;
            SW_CHECK_OK(sw_engine_device_report(e, 0, &r));
            SW_CHECK(r.plan_bytes >= o.draft_device_bytes, "device 0 plans %llu bytes, less "
                     "than the drafter's share", (unsigned long long)r.plan_bytes);
            size_t n = 0;
            SW_CHECK_OK(sw_engine_format_plan(e, 1, NULL, 0, &n));
            char *text = malloc(n + 1);
            SW_CHECK_OK(sw_engine_format_plan(e, 1, text, n + 1, &n));
            SW_CHECK(strstr(text, "\"drafter_bytes\":8388608") != NULL, "no drafter row");
            free(text);
            sw_engine_destroy(e);
        }
        free(ref);
    }
    refusals(m);
    sw_model_close(m);
    return sw_check_finish("test_split_api");
}
