/*
 * test_plan_exec.c — the engine executes plans exactly, on the simulated
 * device, with the default model (DESIGN.md "Invariants"):
 *   - for budgets from "everything fits" down to the smallest that fits
 *     (found by bisection), logits are bit-identical to the all-resident
 *     plan's, and accounted peak <= plan device total <= budget;
 *   - one byte below the smallest budget, creation fails with
 *     SW_ERR_OOM_DEVICE and a message naming the tier and missing bytes;
 *   - every device allocation made to fail in turn (fault injection) ends
 *     in a re-plan with identical logits or a clean out-of-memory error.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "engine/engine_internal.h"
#include "runtime/launch.h"

#define N_PROMPT 12
#define N_DECODE 2

static int32_t prompt[N_PROMPT];
static const char prompt_text[] =
    "The river rose all night, and by morning the spillway carried more water than the "
    "old engineers had ever planned for.";

typedef struct run_result {
    sw_status st;
    float *logits;          /* (N_PROMPT + N_DECODE, n_vocab) */
    uint64_t peak, plan_total, budget;
    uint32_t n_replans;
    uint32_t n_streamed, n_host, n_resident;
} run_result;

static sw_plan_options sim_opts(uint64_t budget) {
    sw_plan_options o = sw_plan_options_default();
    o.n_threads = 2;
    o.n_ctx = 256;
    o.n_batch = 16;
    o.backend = "sim";
    o.device_mem_bytes = budget;
    return o;
}

/* Creates an engine, evaluates the prompt (all logits) and a few greedy
 * decode steps, and records memory facts. */
static run_result run_with(const sw_model *m, const sw_plan_options *o, uint32_t n_vocab,
                           const engine_hooks *hooks) {
    run_result r = {0};
    sw_engine *e = NULL;
    sw_session *s = NULL;
    r.st = runtime_launch(m, o, NULL, hooks, &e);
    if (r.st != SW_OK)
        return r;
    r.logits = malloc((size_t)(N_PROMPT + N_DECODE) * n_vocab * sizeof(float));
    SW_CHECK_OK(sw_session_create(e, &s));
    SW_CHECK_OK(sw_session_eval(s, prompt, N_PROMPT, r.logits, 1));
    for (int i = 0; i < N_DECODE; i++) {
        const float *last = r.logits + (size_t)(N_PROMPT - 1 + i) * n_vocab;
        int32_t best = 0;
        for (uint32_t v = 1; v < n_vocab; v++)
            best = last[v] > last[best] ? (int32_t)v : best;
        SW_CHECK_OK(sw_session_eval(s, &best, 1, r.logits + (size_t)(N_PROMPT + i) * n_vocab, 0));
    }
    sw_report rep;
    sw_engine_report(e, &rep);
    r.peak = rep.peak_device_bytes;
    r.plan_total = rep.plan_device_bytes;
    r.budget = rep.device_budget_bytes;
    r.n_replans = rep.n_replans;
    for (uint32_t il = 0; il < e->config.n_layer; il++) {
        r.n_resident += e->plan->layer_place[il] == PLACE_RESIDENT;
        r.n_streamed += e->plan->layer_place[il] == PLACE_STREAMED;
        r.n_host += e->plan->layer_place[il] == PLACE_HOST;
    }
    sw_session_destroy(s);
    sw_engine_destroy(e);
    return r;
}

static void check_same(const run_result *ref, const run_result *r, uint32_t n_vocab,
                       const char *what) {
    size_t n = (size_t)(N_PROMPT + N_DECODE) * n_vocab;
    SW_CHECK(memcmp(ref->logits, r->logits, n * sizeof(float)) == 0,
             "%s: logits differ from the all-resident plan", what);
    SW_CHECK(r->peak <= r->plan_total, "%s: peak %llu > plan %llu", what,
             (unsigned long long)r->peak, (unsigned long long)r->plan_total);
    SW_CHECK(r->plan_total <= r->budget, "%s: plan %llu > budget %llu", what,
             (unsigned long long)r->plan_total, (unsigned long long)r->budget);
}

/* Smallest budget in (lo, hi] that plans, by bisection on plan creation. */
static uint64_t find_minimum(const sw_model *m, uint64_t lo, uint64_t hi) {
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        sw_plan_options o = sim_opts(mid);
        sw_engine *e = NULL;
        if (sw_engine_launch(m, &o, NULL, &e) == SW_OK)
            hi = mid;
        else
            lo = mid;
        sw_engine_destroy(e);
    }
    return hi;
}

static void budget_sweep(const sw_model *m, uint32_t n_vocab, const run_result *ref) {
    uint64_t full = ref->plan_total;
    uint64_t min = find_minimum(m, 0, full);
    printf("all-resident plan %.2f MiB, smallest budget that fits %.2f MiB\n",
           full / 1048576.0, min / 1048576.0);
    const double fractions[] = {1.0, 0.6, 0.3, 0.15, 0.05, 0.0};
    for (size_t i = 0; i < sizeof fractions / sizeof fractions[0]; i++) {
        uint64_t budget = min + (uint64_t)((double)(full - min) * fractions[i]);
        sw_plan_options o = sim_opts(budget);
        run_result r = run_with(m, &o, n_vocab, NULL);
        SW_CHECK(r.st == SW_OK, "budget %llu: %s", (unsigned long long)budget, sw_last_error());
        if (r.st == SW_OK) {
            char what[64];
            snprintf(what, sizeof what, "budget %.2f MiB", budget / 1048576.0);
            check_same(ref, &r, n_vocab, what);
            printf("  %s: %u resident, %u streamed, %u host; peak %.2f MiB, plan %.2f MiB\n",
                   what, r.n_resident, r.n_streamed, r.n_host, r.peak / 1048576.0,
                   r.plan_total / 1048576.0);
        }
        free(r.logits);
    }
    sw_plan_options o = sim_opts(min - 1);
    sw_engine *e = NULL;
    sw_status st = sw_engine_launch(m, &o, NULL, &e);
    SW_CHECK(st == SW_ERR_OOM_DEVICE, "budget below the minimum gave %s", sw_status_name(st));
    SW_CHECK(strstr(sw_last_error(), "device") != NULL, "message names no tier: %s",
             sw_last_error());
    printf("  below the minimum: %s\n", sw_last_error());
    sw_engine_destroy(e);
}

/* Every device allocation site fails in turn. */
static void fault_injection(const sw_model *m, uint32_t n_vocab, const run_result *ref,
                            uint64_t budget) {
    int replans = 0, ooms = 0;
    for (uint64_t k = 1; k <= 64; k++) {
        sw_plan_options o = sim_opts(budget);
        engine_hooks hooks = {.backend = {.fail_alloc_at = k}};
        run_result r = run_with(m, &o, n_vocab, &hooks);
        if (r.st == SW_OK && r.n_replans == 0) { /* k beyond the allocations made */
            free(r.logits);
            break;
        }
        if (r.st == SW_OK) {
            replans++;
            check_same(ref, &r, n_vocab, "re-planned after an injected fault");
        } else {
            ooms++;
            SW_CHECK(r.st == SW_ERR_OOM_DEVICE, "fault %llu: %s", (unsigned long long)k,
                     sw_last_error());
        }
        free(r.logits);
    }
    SW_CHECK(replans + ooms > 3, "fault injection reached too few allocation sites");
    printf("fault injection: %d re-planned, %d clean out-of-memory errors\n", replans, ooms);
}

int main(void) {
    sw_model *m = NULL;
    SW_CHECK_OK(sw_model_open(sw_test_default_model(), &m));
    if (m == NULL) {
        fprintf(stderr, "run `spillway fetch` first\n");
        return sw_check_finish("test_plan_exec");
    }
    uint32_t n_vocab = (uint32_t)sw_vocab_size(m);
    int32_t ids[256];
    size_t n_ids = 0;
    SW_CHECK_OK(sw_tokenize(m, prompt_text, sizeof prompt_text - 1, SW_TOK_ADD_BOS, ids, 256,
                            &n_ids));
    SW_CHECK(n_ids >= N_PROMPT, "prompt has only %zu tokens", n_ids);
    memcpy(prompt, ids, sizeof prompt);
    sw_plan_options big = sim_opts(1ull << 30);
    run_result ref = run_with(m, &big, n_vocab, NULL);
    SW_CHECK_OK(ref.st);
    if (ref.st == SW_OK) {
        SW_CHECK(ref.n_resident == 18, "1 GiB should hold every layer (got %u)", ref.n_resident);
        budget_sweep(m, n_vocab, &ref);
        fault_injection(m, n_vocab, &ref, ref.plan_total / 2);
    }
    free(ref.logits);
    sw_model_close(m);
    return sw_check_finish("test_plan_exec");
}
