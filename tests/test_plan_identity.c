/*
 * test_plan_identity.c — placement and batching change no bit of the
 * logits (DESIGN.md "Invariants"), on the tiny Gemma 1-4 models (and, with
 * --default-model, the real Gemma 3 270M):
 *   - plans on the simulated device — every layer resident, every layer
 *     streamed through the ring, every layer on the host, and mixes, with
 *     the LM head on either side, through the sim's block entry and per op
 *     — give logits bit-identical to the cpu backend's, over a prompt longer
 *     than the sliding window in chunks that straddle it, then greedy decode;
 *   - batches: several sessions of one engine (-np 3) advanced together by
 *     sw_engine_eval_batch, prefill chunks mixed with other sessions' decode
 *     steps, give each session exactly its single-session logits.
 *
 * usage: test_plan_identity MODEL.gguf | --default-model
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "engine/engine_internal.h"
#include "model/model_internal.h"
#include "plan/plan_api.h"
#include "runtime/launch.h"

#define N_PROMPT 30
#define N_DECODE 8
#define N_STEPS (N_PROMPT + N_DECODE)

typedef struct variant {
    const char *name;
    const char *backend;
    const char *place;
    bool per_op;
    bool experts;   /* only for a model with experts (Gemma 4's) */
} variant;

static const variant variants[] = {
    {"sim resident", "sim", "all=resident,lm_head=resident", false, false},
    {"sim streamed", "sim", "all=streamed,lm_head=resident", false, false},
    {"sim streamed, lm head host", "sim", "all=streamed,lm_head=host", false, false},
    {"sim host layers", "sim", "all=host,lm_head=resident", false, false},
    {"sim mixed", "sim", "0=resident,1=streamed,2-=host,lm_head=host", false, false},
    {"sim interleaved", "sim", "0=streamed,1=host,2-=streamed,lm_head=resident", false, false},
    {"sim mixed per op", "sim", "0=host,1=streamed,2-=resident,lm_head=resident", true, false},
    {"sim streamed per op", "sim", "all=streamed,lm_head=host", true, false},
    {"sim experts on the host", "sim", "all=resident,experts:all=host", false, true},
    {"sim streamed, experts on host", "sim", "0-2=streamed,3-=host,experts:0-1=host", false,
     true},
    {"sim experts on host, per op", "sim", "all=resident,experts:1-=host", true, true},
};

static int32_t prompt[N_PROMPT];

static sw_plan_options options(const char *backend_name, const char *place, uint32_t n_seq,
                               uint32_t n_batch) {
    sw_plan_options o = sw_plan_options_default();
    o.backend = backend_name;
    o.place = place;
    o.n_threads = 2;
    o.n_ctx = 128;
    o.n_batch = n_batch;
    o.n_seq = n_seq;
    o.device_mem_bytes = backend_name && !strcmp(backend_name, "sim") ? 1ull << 30 : 0;
    o.host_mem_bytes = 4ull << 30;
    return o;
}

/* Checks that an "all=P" placement really put every layer at P. */
static void check_placement(const sw_engine *e, const char *place) {
    sw_plan_summary sum;
    if (place == NULL || strncmp(place, "all=", 4) != 0 ||
        sw_plan_get_summary(sw_engine_plan(e), &sum) != SW_OK)
        return;
    uint32_t n = sum.n_resident + sum.n_streamed + sum.n_host;
    uint32_t want = !strncmp(place + 4, "resident", 8) ? sum.n_resident
                  : !strncmp(place + 4, "streamed", 8) ? sum.n_streamed : sum.n_host;
    SW_CHECK(want == n, "--place %s: %u resident, %u streamed, %u host", place,
             sum.n_resident, sum.n_streamed, sum.n_host);
}

/* Prompt logits, then greedy decode: N_STEPS rows. NULL on failure. */
static float *run(const sw_model *m, const sw_plan_options *o, const engine_hooks *hooks,
                  uint32_t V) {
    sw_engine *e = NULL;
    sw_session *s = NULL;
    float *logits = malloc((size_t)N_STEPS * V * sizeof(float));
    SW_CHECK_OK(runtime_launch(m, o, NULL, hooks, &e));
    if (e != NULL)
        check_placement(e, o->place);
    if (e == NULL || logits == NULL || sw_session_create(e, &s) != SW_OK) {
        sw_engine_destroy(e);
        free(logits);
        return NULL;
    }
    SW_CHECK_OK(sw_session_eval(s, prompt, N_PROMPT, logits, 1));
    for (int i = 0; i < N_DECODE; i++) {
        const float *last = logits + (size_t)(N_PROMPT - 1 + i) * V;
        int32_t best = 0;
        for (uint32_t v = 1; v < V; v++)
            best = last[v] > last[best] ? (int32_t)v : best;
        SW_CHECK_OK(sw_session_eval(s, &best, 1, logits + (size_t)(N_PROMPT + i) * V, 0));
    }
    sw_session_destroy(s);
    sw_engine_destroy(e);
    return logits;
}

/* v's placement, with each KV-shared layer (Gemma 4) pinned where the
 * layer whose cache it reads computes, as the planner requires. */
static const char *shared_place(const sw_model *m, const char *place, char *buf, size_t cap) {
    model_config c;
    plan_pins pins;
    if (place == NULL || model_config_from_gguf(m->gguf, &c) != SW_OK ||
        plan_parse_place(place, c.n_layer, &pins) != SW_OK)
        return place;
    int len = snprintf(buf, cap, "%s", place);
    for (uint32_t il = 0; il < c.n_layer && len > 0 && (size_t)len < cap; il++) {
        const plan_place owner = pins.layer[model_layer_kv_owner(&c, il)];
        if (owner != PLACE_AUTO && model_layer_kv_owner(&c, il) != il &&
            (pins.layer[il] == PLACE_HOST) != (owner == PLACE_HOST))
            len += snprintf(buf + len, cap - (size_t)len, ",%u=%s", il, plan_place_name(owner));
    }
    return buf;
}

static void test_plans(const sw_model *m, const char *label, const float *ref, uint32_t V,
                       uint32_t n_batch) {
    model_config c;
    const bool has_experts = model_config_from_gguf(m->gguf, &c) == SW_OK && c.n_expert > 0;
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
        const variant *v = &variants[i];
        if (v->experts && !has_experts)
            continue;
        char place[256];
        sw_plan_options o = options(v->backend, shared_place(m, v->place, place, sizeof place),
                                    1, n_batch);
        engine_hooks hooks = {.backend = {.per_op = v->per_op}};
        float *got = run(m, &o, &hooks, V);
        SW_CHECK(got != NULL && !memcmp(got, ref, (size_t)N_STEPS * V * sizeof(float)),
                 "%s, %s: logits differ from the cpu backend's", label, v->name);
        printf("  %s, %-28s bit-identical to cpu: %s\n", label, v->name,
               got && !memcmp(got, ref, (size_t)N_STEPS * V * sizeof(float)) ? "yes" : "NO");
        free(got);
    }
}

/* Three sessions advanced together: session k starts k steps late, so one
 * forward mixes prefill chunks and decode steps; each session follows the
 * reference's own greedy tokens. */
static void test_batches(const sw_model *m, const char *label, const variant *v,
                         const float *ref, uint32_t V, uint32_t n_batch) {
    enum { N_SEQ = 3 };
    char place[256];
    sw_plan_options o = options(v->backend, shared_place(m, v->place, place, sizeof place),
                                N_SEQ, n_batch);
    sw_engine *e = NULL;
    sw_session *s[N_SEQ] = {0};
    int32_t tokens[N_STEPS];
    uint32_t fed[N_SEQ] = {0};
    SW_CHECK_OK(sw_engine_launch(m, &o, NULL, &e));
    uint32_t cap = e ? sw_engine_max_tokens(e) : 0;
    float *out = malloc((size_t)cap * V * sizeof(float));
    for (int k = 0; e && k < N_SEQ; k++)
        SW_CHECK_OK(sw_session_create(e, &s[k]));
    memcpy(tokens, prompt, sizeof prompt);
    for (int i = 0; i < N_DECODE; i++) { /* the reference's greedy tokens */
        const float *row = ref + (size_t)(N_PROMPT - 1 + i) * V;
        int32_t best = 0;
        for (uint32_t t = 1; t < V; t++)
            best = row[t] > row[best] ? (int32_t)t : best;
        tokens[N_PROMPT + i] = best;
    }
    bool same = e != NULL && out != NULL;
    sw_batch_item items[64];
    uint32_t step[64];
    for (int round = 0; same && round < 64; round++) {
        uint32_t n = 0;
        for (int k = 0; k < N_SEQ && n < cap; k++) {
            if (round < k || fed[k] >= N_STEPS - 1)
                continue;
            uint32_t take = fed[k] < N_PROMPT ? N_PROMPT - fed[k] : 1;
            take = take < n_batch ? take : n_batch;
            take = take < cap - n ? take : cap - n;
            for (uint32_t t = 0; t < take; t++, n++) {
                items[n] = (sw_batch_item){s[k], tokens[fed[k] + t], 1};
                step[n] = fed[k] + t;
            }
            fed[k] += take;
        }
        if (n == 0)
            break;
        SW_CHECK_OK(sw_engine_eval_batch(e, items, n, out));
        for (uint32_t t = 0; t < n; t++)
            same = same && !memcmp(out + (size_t)t * V, ref + (size_t)step[t] * V,
                                   V * sizeof(float));
    }
    SW_CHECK(same, "%s, %s: batched sessions differ from single-session logits", label, v->name);
    printf("  %s, %s: %d sessions batched together, bit-identical: %s\n", label, v->name,
           N_SEQ, same ? "yes" : "NO");
    for (int k = 0; k < N_SEQ; k++)
        sw_session_destroy(s[k]);
    free(out);
    sw_engine_destroy(e);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s MODEL.gguf | --default-model\n", argv[0]);
        return 2;
    }
    bool real = !strcmp(argv[1], "--default-model");
    sw_model *m = NULL;
    SW_CHECK_OK(sw_model_open(real ? sw_test_default_model() : argv[1], &m));
    if (m == NULL)
        return sw_check_finish("test_plan_identity");
    const char *label = strrchr(argv[1], '/') ? strrchr(argv[1], '/') + 1 : argv[1];
    uint32_t V = (uint32_t)sw_vocab_size(m);
    for (int i = 0; i < N_PROMPT; i++)
        prompt[i] = (int32_t)((2 + 7 * i * i + 13 * i) % (V - 2)) + 2;
    /* Chunks of 7 straddle the tiny models' window of 8 (ring indexing). */
    uint32_t n_batch = real ? 16 : 7;
    sw_plan_options cpu = options("cpu", NULL, 1, n_batch);
    float *ref = run(m, &cpu, NULL, V);
    if (ref != NULL) {
        test_plans(m, label, ref, V, n_batch);
        test_batches(m, label, &(variant){"cpu", "cpu", NULL, false, false}, ref, V, n_batch);
        test_batches(m, label, &variants[1], ref, V, n_batch);
        test_batches(m, label, &variants[4], ref, V, n_batch);
    }
    free(ref);
    sw_model_close(m);
    return sw_check_finish("test_plan_identity");
}
