/*
 * test_assist.c — a Gemma 4 assistant (drafter) against transformers, on
 * the two tiny pairs of tools/golden/make_tiny_assistant.py:
 *   gemma4-kv  + a dense-head assistant, gemma4-ple + a centroid-head one.
 *
 * For each backend (cpu with f32 dots, the reference path; sim with every
 * layer resident, where the assistant runs on the device beside the
 * target's caches; sim with every layer streamed; with the argument
 * "pjrt", XLA's CPU plugin instead, with "cuda" the GPU, which the
 * device check runs):
 *   - the drafter on the target's own states: after each prompt, the
 *     target's greedy token, then K draft steps whose logits equal
 *     transformers' assistant's within the forward goldens' tolerance and
 *     whose argmax are its drafts;
 *   - assisted greedy generation through the scheduler: the output is the
 *     golden (= plain greedy) output, and the verify rounds and drafts
 *     accepted equal transformers' assisted generation's on the same pair.
 * And the refusals: an assistant opened as a model, an assistant for
 * another target (widths), a target that is not Gemma 4.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "engine/assist.h"
#include "golden.h"
#include "spillway.h"

#define ATOL 2e-4
#define RTOL 2e-4

static const char *const PAIRS[] = {"gemma4-kv", "gemma4-ple"};

typedef struct backend_case {
    const char *name, *backend, *place;
} backend_case;

static const backend_case CASES[] = {
    {"cpu", "cpu", NULL},
    {"sim resident", "sim", "all=resident"},
    {"sim streamed", "sim", "all=streamed"},
};
static const backend_case PJRT = {"pjrt", "pjrt", NULL};
static const backend_case CUDA = {"cuda", "cuda", NULL};

/* The backends of this run: the three above, or (argument "pjrt" or
 * "cuda") that one. */
static const backend_case *g_cases = CASES;
static size_t g_n_cases = sizeof CASES / sizeof CASES[0];

static const golden_entry *entry(const golden_file *g, int p, const char *what) {
    char name[64];
    snprintf(name, sizeof name, "p%d.%s", p, what);
    const golden_entry *e = golden_find(g, name);
    SW_CHECK(e != NULL, "golden entry %s missing", name);
    return e;
}

static sw_engine *launch(const sw_model *m, const backend_case *bc) {
    sw_plan_options o = sw_plan_options_default();
    o.backend = bc->backend;
    o.place = bc->place;
    o.n_threads = 2;
    o.n_ctx = 64;
    o.n_batch = 16;
    o.cpu_dots = "f32";
    if (strcmp(bc->backend, "cpu") != 0)
        o.device_mem_bytes = 64ull << 20;
    sw_engine *e = NULL;
    SW_CHECK_OK(sw_engine_launch(m, &o, NULL, &e));
    return e;
}

static uint32_t argmax(const float *v, uint32_t n) {
    uint32_t best = 0;
    for (uint32_t i = 1; i < n; i++)
        best = v[i] > v[best] ? i : best;
    return best;
}

/* The target over the prompt, then K draft steps from its greedy token. */
static void check_drafts(const golden_file *g, int p, sw_engine *e, const sw_model *am,
                         double *max_rel) {
    const golden_entry *ids = entry(g, p, "ids"), *bonus = entry(g, p, "bonus");
    const golden_entry *dids = entry(g, p, "draft_ids"), *dlog = entry(g, p, "draft_logits");
    if (ids == NULL || bonus == NULL || dids == NULL || dlog == NULL)
        return;
    const uint32_t V = sw_engine_n_vocab(e), n = (uint32_t)ids->dims[0];
    const uint32_t K = (uint32_t)dids->dims[0];
    sw_session *s = NULL;
    engine_assist *a = NULL;
    sw_batch_item *items = calloc(n, sizeof *items);
    float *logits = malloc((size_t)V * sizeof *logits);
    float *hid = malloc(4096 * sizeof *hid), *next = malloc(4096 * sizeof *next);
    SW_CHECK_OK(sw_session_create(e, &s));
    SW_CHECK_OK(engine_assist_create(e, am, 1, &a));
    if (s == NULL || a == NULL || items == NULL || logits == NULL || hid == NULL ||
        next == NULL)
        goto done;
    SW_CHECK(engine_assist_n_embd(a) <= 4096, "hidden rows too wide for the test");
    for (uint32_t i = 0; i < n; i++)
        items[i] = (sw_batch_item){s, ((const int32_t *)ids->data)[i], i + 1 == n};
    SW_CHECK_OK(engine_eval_batch_hidden(e, items, n, logits, hid));
    const int32_t b = *(const int32_t *)bonus->data;
    SW_CHECK((int32_t)argmax(logits, V) == b, "p%d: the target's token %u, golden %d", p,
             argmax(logits, V), b);
    int32_t tok = b;
    for (uint32_t j = 0; j < K; j++) {
        assist_row row = {.session = s, .token = tok, .hidden = hid};
        SW_CHECK_OK(engine_assist_step(a, &row, 1, logits, next));
        const float *want = (const float *)dlog->data + (size_t)j * V;
        double top = 0.0, diff = 0.0;
        for (uint32_t t = 0; t < V; t++) {
            top = fmax(top, fabs(want[t]));
            diff = fmax(diff, fabs((double)logits[t] - want[t]));
        }
        *max_rel = fmax(*max_rel, diff / (top > 0 ? top : 1));
        SW_CHECK(diff <= ATOL + RTOL * top, "p%d draft %u: logits off by %.3g (max |logit| "
                 "%.3g)", p, j, diff, top);
        const int32_t d = ((const int32_t *)dids->data)[j];
        SW_CHECK((int32_t)argmax(logits, V) == d, "p%d draft %u: token %u, golden %d", p, j,
                 argmax(logits, V), d);
        tok = d;
        memcpy(hid, next, engine_assist_n_embd(a) * sizeof *hid);
    }
done:
    engine_assist_destroy(a);
    sw_session_destroy(s);
    free(items);
    free(logits);
    free(hid);
    free(next);
}

typedef struct out_ids {
    int32_t ids[256];
    uint32_t n;
} out_ids;

static void on_token(void *user, sw_request *r, int32_t id, const char *piece, size_t len) {
    out_ids *o = user;
    (void)r, (void)piece, (void)len;
    if (o->n < 256)
        o->ids[o->n] = id;
    o->n++;
}

/* Assisted greedy generation of every prompt, one scheduler. */
static void check_generation(const golden_file *g, int n_prompts, sw_engine *e,
                             const sw_model *m, const sw_model *am, const char *what) {
    const golden_entry *k = golden_find(g, "k");
    sw_scheduler *q = NULL;
    SW_CHECK_OK(sw_scheduler_create(e, m, &q));
    if (q == NULL || k == NULL)
        goto done;
    sw_draft_options d = sw_draft_options_default();
    d.assistant = am;
    d.draft_max = (uint32_t)*(const int32_t *)k->data;
    SW_CHECK_OK(sw_scheduler_set_draft(q, &d));
    uint64_t want_rounds = 0, want_acc = 0;
    for (int p = 0; p < n_prompts; p++) {
        const golden_entry *ids = entry(g, p, "ids"), *out = entry(g, p, "output");
        const golden_entry *acc = entry(g, p, "accepted");
        if (ids == NULL || out == NULL || acc == NULL)
            goto done;
        sw_scheduler_stats before, after;
        sw_scheduler_get_stats(q, &before);
        out_ids got = {0};
        sw_request_options ro = sw_request_options_default();
        ro.sampling.temp = 0.0f;
        ro.n_predict = (int)out->dims[0];
        ro.on_token = on_token;
        ro.user = &got;
        sw_request *r = NULL;
        SW_CHECK_OK(sw_scheduler_submit(q, ids->data, ids->dims[0], &ro, &r));
        uint32_t n = 1;
        for (int guard = 0; n != 0 && guard < 100000; guard++)
            if (sw_scheduler_step(q, &n) != SW_OK) {
                SW_CHECK(0, "%s p%d: a step failed: %s", what, p, sw_last_error());
                break;
            }
        sw_request_release(q, r);
        sw_scheduler_get_stats(q, &after);
        SW_CHECK(got.n == out->dims[0] &&
                     !memcmp(got.ids, out->data, got.n * sizeof *got.ids),
                 "%s p%d: assisted output differs from the golden greedy output", what, p);
        uint64_t rounds = acc->dims[0], kept = 0;
        for (uint64_t i = 0; i < rounds; i++)
            kept += (uint64_t)((const int32_t *)acc->data)[i];
        const uint64_t r_got = after.verify_forwards - before.verify_forwards;
        const uint64_t a_got = after.accepted_tokens - before.accepted_tokens;
        SW_CHECK(r_got == rounds && a_got == kept, "%s p%d: %llu rounds accepting %llu "
                 "drafts; transformers %llu accepting %llu", what, p,
                 (unsigned long long)r_got, (unsigned long long)a_got,
                 (unsigned long long)rounds, (unsigned long long)kept);
        want_rounds += rounds;
        want_acc += kept;
    }
    printf("  %-14s assisted generation: %llu rounds, %llu drafts accepted (as transformers)\n",
           what, (unsigned long long)want_rounds, (unsigned long long)want_acc);
done:
    sw_scheduler_destroy(q);
}

static void test_pair(const char *pair) {
    char path[256];
    golden_file *g = NULL;
    sw_model *m = NULL, *am = NULL;
    snprintf(path, sizeof path, "golden/%s-assistant.swgold", pair);
    SW_CHECK_OK(golden_load(sw_test_data(path), &g));
    snprintf(path, sizeof path, "tiny/%s-hf", pair);
    SW_CHECK_OK(sw_model_open(sw_test_data(path), &m));
    snprintf(path, sizeof path, "tiny/%s-assistant-hf", pair);
    SW_CHECK_OK(sw_model_open(sw_test_data(path), &am));
    const golden_entry *np = g ? golden_find(g, "n_prompts") : NULL;
    if (m == NULL || am == NULL || np == NULL)
        goto done;
    const int n_prompts = *(const int32_t *)np->data;
    printf("%s + assistant (%d prompts)\n", pair, n_prompts);
    for (size_t c = 0; c < g_n_cases; c++) {
        sw_engine *e = launch(m, &g_cases[c]);
        if (e == NULL)
            continue;
        double max_rel = 0.0;
        for (int p = 0; p < n_prompts; p++)
            check_drafts(g, p, e, am, &max_rel);
        printf("  %-14s drafter logits: max |diff| / max |logit| %.3g\n", g_cases[c].name,
               max_rel);
        check_generation(g, n_prompts, e, m, am, g_cases[c].name);
        sw_engine_destroy(e);
    }
done:
    sw_model_close(am);
    sw_model_close(m);
    golden_free(g);
}

/* What is not an assistant for what. */
static void test_refusals(void) {
    sw_model *kv = NULL, *kva = NULL, *plea = NULL, *g3 = NULL;
    sw_engine *e = NULL, *e3 = NULL;
    engine_assist *a = NULL;
    SW_CHECK_OK(sw_model_open(sw_test_data("tiny/gemma4-kv-hf"), &kv));
    SW_CHECK_OK(sw_model_open(sw_test_data("tiny/gemma4-kv-assistant-hf"), &kva));
    SW_CHECK_OK(sw_model_open(sw_test_data("tiny/gemma4-ple-assistant-hf"), &plea));
    SW_CHECK_OK(sw_model_open(sw_test_data("tiny/gemma3.gguf"), &g3));
    if (kv == NULL || kva == NULL || plea == NULL || g3 == NULL)
        goto done;
    /* an assistant does not run on its own */
    sw_plan_options o = sw_plan_options_default();
    o.backend = "cpu";
    o.n_ctx = 64;
    SW_CHECK(sw_engine_launch(kva, &o, NULL, &e) == SW_ERR_UNSUPPORTED && e == NULL,
             "an assistant launched as a model");
    SW_CHECK(strstr(sw_last_error(), "assistant") != NULL, "message: %s", sw_last_error());
    static const backend_case cpu = {"cpu", "cpu", NULL};
    if ((e = launch(kv, &cpu)) == NULL || (e3 = launch(g3, &cpu)) == NULL)
        goto done;
    /* the ple pair's assistant reads one KV head of its full layers' 32;
     * gemma4-kv keeps one too, but its sliding layers keep 2 */
    SW_CHECK(engine_assist_create(e, plea, 1, &a) == SW_ERR_ARG && a == NULL,
             "another target's assistant accepted");
    SW_CHECK(strstr(sw_last_error(), "not its assistant") != NULL, "message: %s",
             sw_last_error());
    SW_CHECK(engine_assist_create(e3, kva, 1, &a) == SW_ERR_ARG && a == NULL,
             "a Gemma 3 target accepted");
    SW_CHECK(strstr(sw_last_error(), "Gemma 4 target") != NULL, "message: %s",
             sw_last_error());
    SW_CHECK(engine_assist_create(e, kv, 1, &a) == SW_ERR_ARG && a == NULL,
             "a plain model taken for an assistant");
done:
    engine_assist_destroy(a);
    sw_engine_destroy(e);
    sw_engine_destroy(e3);
    sw_model_close(kv);
    sw_model_close(kva);
    sw_model_close(plea);
    sw_model_close(g3);
}

int main(int argc, char **argv) {
    const bool pjrt = argc > 1 && !strcmp(argv[1], "pjrt");
    const bool cuda = argc > 1 && !strcmp(argv[1], "cuda");
    if (pjrt || cuda) {
        g_cases = pjrt ? &PJRT : &CUDA;
        g_n_cases = 1;
    }
    if (cuda) { /* the device check's: without a device, skipped (CTest's 77) */
        sw_device_report *rep = calloc(1, sizeof *rep);
        const bool none = rep == NULL || sw_devices_query(rep) != SW_OK;
        free(rep);
        if (none) {
            printf("test_assist cuda: skipped: %s\n", sw_last_error());
            return 77;
        }
    }
    for (size_t i = 0; i < sizeof PAIRS / sizeof PAIRS[0]; i++)
        test_pair(PAIRS[i]);
    if (!pjrt && !cuda)
        test_refusals();
    return sw_check_finish("test_assist");
}
