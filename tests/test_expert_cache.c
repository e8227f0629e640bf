/*
 * test_expert_cache.c — issue 38's expert cache in the engine, on the tiny
 * Gemma 4 MoE (4 experts, 2 per token, 5 layers):
 *   - bit-identity: on the simulated device, for every cache size (none,
 *     1, 2, all 4, auto), both policies (lru, lfu-decay), every miss
 *     rule (--expert-copy auto, always, never) and prefetch on and off
 *     (it ran, and its hits are among the hits), with the layers resident
 *     or streamed, through the sim's block entry and per op, the logits of
 *     a prompt in chunks of 7 and greedy decode are the cpu backend's bits;
 *     and three sessions batched together over a cache are too;
 *   - counters: hits + misses = needed; misses = copied + computed on the
 *     host (always / never); routings = tokens x k x cached layers;
 *     never copies nothing, so never hits; all slots with always: misses
 *     are first touches only;
 *   - --cuda (the device check): on a GPU, the cache against the experts on
 *     the host: the same greedy tokens, logits within 2^-8 (skipped, 77,
 *     without a device);
 *   - the plan: the cache's buffer, rows and JSON; N slots that do not fit
 *     are refused naming the device; a backend without slots (pjrt) is
 *     refused by name.
 *
 * usage: test_expert_cache MODEL.gguf [--cuda] (the tiny gemma4-moe)
 */
#define _DEFAULT_SOURCE /* setenv */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/registry.h"
#include "check.h"
#include "engine/engine_internal.h"
#include "plan/expert_plan.h"
#include "plan/plan_api.h"
#include "runtime/launch.h"

#define N_PROMPT 30
#define N_DECODE 8
#define N_STEPS (N_PROMPT + N_DECODE)

static int32_t prompt[N_PROMPT];

static sw_plan_options options(const char *backend_name, const char *place, uint32_t n_seq) {
    sw_plan_options o = sw_plan_options_default();
    o.backend = backend_name;
    o.place = place;
    o.n_threads = 2;
    o.n_ctx = 128;
    o.n_batch = 7;   /* chunks of 7 straddle the window of 8 */
    o.n_seq = n_seq;
    o.device_mem_bytes = backend_name && !strcmp(backend_name, "sim") ? 64ull << 20 : 0;
    o.host_mem_bytes = 4ull << 30;
    return o;
}

/* Prompt logits, then greedy decode: N_STEPS rows; the report in *r. */
static float *run(const sw_model *m, const sw_plan_options *o, bool per_op, uint32_t V,
                  sw_report *r) {
    sw_engine *e = NULL;
    sw_session *s = NULL;
    engine_hooks hooks = {.backend = {.per_op = per_op}};
    float *logits = malloc((size_t)N_STEPS * V * sizeof(float));
    SW_CHECK_OK(runtime_launch(m, o, NULL, &hooks, &e));
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
    if (r != NULL)
        SW_CHECK_OK(sw_engine_report(e, r));
    sw_session_destroy(s);
    sw_engine_destroy(e);
    return logits;
}

typedef struct placement {
    const char *name, *place;
    bool per_op;
    uint32_t n_cached;   /* device layers with their experts on the host */
} placement;

static const placement placements[] = {
    {"resident", "all=resident,experts:all=host,lm_head=resident", false, 5},
    {"streamed", "0-2=streamed,3-=resident,experts:0-3=host,lm_head=host", false, 4},
    {"per op", "all=resident,experts:1-=host", true, 4},
};

static void check_counts(const sw_expert_report *x, const placement *p, int slots,
                         const char *copy, const char *what) {
    const uint64_t routings = (uint64_t)N_STEPS * 2 * p->n_cached;
    SW_CHECK(x->slots == (uint32_t)(slots < 0 ? 4 : slots) && x->layers == p->n_cached,
             "%s: %u slots x %u layers", what, x->slots, x->layers);
    SW_CHECK(x->hits + x->misses == x->needed && x->routings == routings &&
                 x->needed <= routings && x->host_tokens <= routings,
             "%s: %llu hits + %llu misses vs %llu needed, %llu routings (want %llu)", what,
             (unsigned long long)x->hits, (unsigned long long)x->misses,
             (unsigned long long)x->needed, (unsigned long long)x->routings,
             (unsigned long long)routings);
    if (!strcmp(copy, "never"))
        SW_CHECK(x->copied == 0 && x->hits == 0 && x->host_experts == x->misses,
                 "%s: never copies, never hits", what);
    if (!strcmp(copy, "always"))
        SW_CHECK(x->copied + x->host_experts == x->misses && x->copied > 0,
                 "%s: %llu copied + %llu host vs %llu misses", what,
                 (unsigned long long)x->copied, (unsigned long long)x->host_experts,
                 (unsigned long long)x->misses);
    if (!strcmp(copy, "always") && (slots == 4 || slots < 0)) /* only first touches miss */
        SW_CHECK(x->misses <= 4ull * p->n_cached && x->host_experts == 0,
                 "%s: %llu misses with every expert cached", what,
                 (unsigned long long)x->misses);
}

/* One setting: its logits against the reference, its counters. */
static bool one(const sw_model *m, const float *ref, uint32_t V, const placement *p,
                sw_expert_options x, bool staged, sw_expert_report *prefetch_sum) {
    sw_plan_options o = options("sim", p->place, 1);
    o.experts = x;
    char what[192];
    snprintf(what, sizeof what, "sim %s, %d slots, %s, copy %s, prefetch %s, copies %s", p->name,
             x.slots, x.policy, x.copy, x.prefetch ? "on" : "off",
             staged ? "staged" : "registered");
    sw_report r;
    memset(&r, 0, sizeof r);
    setenv("SPILLWAY_EXPERT_STAGING", staged ? "1" : "0", 1);
    float *got = run(m, &o, p->per_op, V, &r);
    unsetenv("SPILLWAY_EXPERT_STAGING");
    /* the sim registers any range; staged: through the plan's buffers */
    const uint32_t src = r.experts.copy_source;
    if (got && x.slots != 0 && (x.copy == NULL || strcmp(x.copy, "never")))
        SW_CHECK(staged ? (src == SW_EXPERT_COPY_PINNED_STAGING ||
                           src == SW_EXPERT_COPY_PAGEABLE_STAGING) && r.experts.staging_bytes > 0
                        : src == SW_EXPERT_COPY_REGISTERED && r.experts.staging_bytes == 0,
                 "%s: copies from source %u, %llu staging bytes", what, src,
                 (unsigned long long)r.experts.staging_bytes);
    else if (got)
        SW_CHECK(src == SW_EXPERT_COPY_NONE, "%s: a copy source without copies (%u)", what, src);
    const bool same = got && !memcmp(got, ref, (size_t)N_STEPS * V * sizeof(float));
    SW_CHECK(same, "%s: logits differ from the cpu backend's", what);
    if (got && x.slots != 0)
        check_counts(&r.experts, p, x.slots, x.copy, what);
    else if (got)
        SW_CHECK(r.experts.slots == 0, "%s: a cache without asking", what);
    SW_CHECK(x.prefetch || r.experts.prefetched == 0, "%s: prefetched without asking", what);
    SW_CHECK(r.experts.prefetch_hits <= r.experts.prefetched && r.experts.prefetch_hits <=
                 r.experts.hits, "%s: %llu prefetch hits of %llu", what,
             (unsigned long long)r.experts.prefetch_hits,
             (unsigned long long)r.experts.prefetched);
    prefetch_sum->prefetched += r.experts.prefetched;
    prefetch_sum->prefetch_hits += r.experts.prefetch_hits;
    free(got);
    return same;
}

static void test_identity(const sw_model *m, const float *ref, uint32_t V) {
    const int slot_counts[] = {0, 1, 2, 4, -1};
    const char *policies[] = {"lru", "lfu-decay"}, *copies[] = {"auto", "always", "never"};
    int n_same = 0, n_runs = 0;
    sw_expert_report pf = {0};
    for (size_t pi = 0; pi < sizeof placements / sizeof placements[0]; pi++)
        for (size_t si = 0; si < 5; si++)
            for (size_t po = 0; po < 2; po++)
                for (size_t ci = 0; ci < 3; ci++)
                    for (int pre = 0; pre < 2; pre++) {
                        if (slot_counts[si] == 0 && (po || ci || pre)) /* no cache: one */
                            continue;
                        const sw_expert_options x = {slot_counts[si], policies[po], copies[ci],
                                                     pre, 0};
                        /* every other setting through the staging */
                        n_same += one(m, ref, V, &placements[pi], x, n_runs % 2, &pf);
                        n_runs++;
                    }
    SW_CHECK(pf.prefetched > 0 && pf.prefetch_hits > 0, "prefetch ran and hit sometimes");
    printf("  %d of %d cache settings bit-identical to cpu; prefetch: %llu experts, %llu hits\n",
           n_same, n_runs, (unsigned long long)pf.prefetched,
           (unsigned long long)pf.prefetch_hits);
}

/* Three sessions over one cache, prefill chunks beside decode steps. */
static void test_batched(const sw_model *m, const float *ref, uint32_t V) {
    enum { N_SEQ = 3 };
    sw_plan_options o = options("sim", placements[0].place, N_SEQ);
    o.experts = (sw_expert_options){1, "lfu-decay", "always", 1, 0};
    sw_engine *e = NULL;
    sw_session *s[N_SEQ] = {0};
    int32_t tokens[N_STEPS];
    uint32_t fed[N_SEQ] = {0}, step[64];
    SW_CHECK_OK(sw_engine_launch(m, &o, NULL, &e));
    const uint32_t cap = e ? sw_engine_max_tokens(e) : 0;
    float *out = malloc((size_t)(cap ? cap : 1) * V * sizeof(float));
    for (int k = 0; e && k < N_SEQ; k++)
        SW_CHECK_OK(sw_session_create(e, &s[k]));
    memcpy(tokens, prompt, sizeof prompt);
    for (int i = 0; i < N_DECODE; i++) {
        const float *row = ref + (size_t)(N_PROMPT - 1 + i) * V;
        int32_t best = 0;
        for (uint32_t t = 1; t < V; t++)
            best = row[t] > row[best] ? (int32_t)t : best;
        tokens[N_PROMPT + i] = best;
    }
    bool same = e != NULL && out != NULL;
    sw_batch_item items[64];
    for (int round = 0; same && round < 64; round++) {
        uint32_t n = 0;
        for (int k = 0; k < N_SEQ && n < cap; k++) {
            if (round < k || fed[k] >= N_STEPS - 1)
                continue;
            uint32_t take = fed[k] < N_PROMPT ? N_PROMPT - fed[k] : 1;
            take = take < 7 ? take : 7;
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
    SW_CHECK(same, "batched sessions over an expert cache differ from the cpu's logits");
    printf("  %d sessions batched over a 1-slot cache, bit-identical: %s\n", N_SEQ,
           same ? "yes" : "NO");
    for (int k = 0; k < N_SEQ; k++)
        sw_session_destroy(s[k]);
    free(out);
    sw_engine_destroy(e);
}

static bool contains(const char *s, const char *what) { return s && strstr(s, what); }

static void test_plan(const sw_model *m) {
    sw_plan_options o = options("sim", placements[0].place, 1);
    o.experts = (sw_expert_options){2, "lfu-decay", NULL, 0, 0};
    sw_plan *p = NULL;
    char text[8192];
    size_t len = 0;
    SW_CHECK_OK(sw_plan_create(m, NULL, &o, &p));
    if (p != NULL) {
        SW_CHECK_OK(sw_plan_format(p, 0, text, sizeof text, &len));
        SW_CHECK(contains(text, "| expert cache 2 x 5 layers") &&
                     contains(text, "cache 2 of 4 slots/layer x 5 layers") &&
                     contains(text, "lfu-decay"), "the plan table shows the cache:\n%s", text);
        SW_CHECK_OK(sw_plan_format(p, 1, text, sizeof text, &len));
        SW_CHECK(contains(text, "\"expert_cache\":{\"slots\":2,\"layers\":5") &&
                     contains(text, "\"kind\":\"expert_cache\""), "the plan's JSON: %s", text);
        const plan *pp = plan_of(p);
        expert_layout l;
        expert_plan_layout(pp, 2, &l);
        SW_CHECK(pp->expert_cache_bytes == l.total && l.total > 0, "cache bytes = layout");
        /* the cost model: more tokens never favour the host more */
        for (uint32_t t = 1; t < 64; t++)
            SW_CHECK(expert_plan_host_s(pp, 0, t + 1) - expert_plan_copy_s(pp, 0, t + 1) >=
                         expert_plan_host_s(pp, 0, t) - expert_plan_copy_s(pp, 0, t) - 1e-12,
                     "copy's advantage grows with the tokens (%u)", t);
    }
    /* slots that do not fit: the device named */
    const uint64_t fixed = p ? plan_of(p)->tier_bytes[TIER_DEVICE] -
                                   plan_of(p)->expert_cache_bytes : 0;
    sw_plan_destroy(p);
    o = options("sim", placements[0].place, 1);
    o.device_mem_bytes = fixed + 4096;
    o.experts.slots = 4;
    p = NULL;
    sw_status st = sw_plan_create(m, NULL, &o, &p);
    SW_CHECK(st == SW_ERR_OOM_DEVICE && contains(sw_last_error(), "expert cache"),
             "4 slots in the fixed part + 4 KiB: %s (%s)", sw_status_name(st), sw_last_error());
    sw_plan_destroy(p);
    /* bad words */
    o = options("sim", placements[0].place, 1);
    o.experts = (sw_expert_options){2, "mru", NULL, 0, 0};
    SW_CHECK(sw_plan_create(m, NULL, &o, &p) == SW_ERR_ARG &&
                 contains(sw_last_error(), "lfu-decay"), "a bad policy: %s", sw_last_error());
    o.experts = (sw_expert_options){2, NULL, "sometimes", 0, 0};
    SW_CHECK(sw_plan_create(m, NULL, &o, &p) == SW_ERR_ARG &&
                 contains(sw_last_error(), "always"), "a bad copy rule: %s", sw_last_error());
    /* a backend without slots is refused by name */
    backend_info info;
    SW_CHECK_OK(backend_lookup("pjrt", &info));
    SW_CHECK(contains(info.no_expert_cache, "pjrt"), "pjrt says it has no expert cache");
    o = options("sim", placements[0].place, 1);
    o.experts.slots = 2;
    SW_CHECK_OK(sw_plan_create(m, NULL, &o, &p));
    if (p != NULL) {
        plan copy = *plan_of(p);
        copy.expert_slots = 0;
        const sw_expert_options xo = {2, NULL, NULL, 0, 0};
        SW_CHECK(plan_expert_cache(&copy, &xo, info.no_expert_cache) == SW_ERR_ARG &&
                     contains(sw_last_error(), "pjrt"), "refused: %s", sw_last_error());
    }
    sw_plan_destroy(p);
}

/* The cost model at the default (unmeasured) GPU rates on the catalog
 * 26B-A4B: decode's one token per expert computes on the host, a chunk's
 * share copies. */
static void test_cost_model(void) {
    sw_plan_options o = sw_plan_options_default();
    o.backend = "sim";
    o.device_mem_bytes = 8ull << 30;
    o.host_mem_bytes = 64ull << 30;
    o.n_cpu_moe = 30;
    o.experts.slots = -1;
    sw_plan *p = NULL;
    SW_CHECK_OK(sw_plan_create(NULL, "gemma4-26b-a4b", &o, &p));
    if (p == NULL)
        return;
    plan c = *plan_of(p);
    SW_CHECK(c.expert_slots > 8 && c.expert_slots < 128 && c.expert_layers == 30,
             "26B-A4B at 8 GiB: %u slots x %u layers", c.expert_slots, c.expert_layers);
    plan_rates_default(&c.rates);
    const uint32_t t = expert_plan_copy_threshold(&c, 0);
    SW_CHECK(!expert_plan_copy_wins(&c, 0, 1) && expert_plan_copy_wins(&c, 0, 64) && t > 1 &&
                 t < 64, "default rates: copy from %u tokens", t);
    printf("  26B-A4B at 8 GiB: %u slots/layer; default rates copy a missed expert from %u "
           "tokens (host %.0f us, copy %.0f us for one)\n", c.expert_slots, t,
           1e6 * expert_plan_host_s(&c, 0, 1), 1e6 * expert_plan_copy_s(&c, 0, 1));
    /* the predictions: with no copies the slots stay empty, the plan is
     * the one without the cache; all hits swap each layer's host experts for the device's
     * reads of the same experts; between, monotone in the hit rate */
    c.expert_copy = EXPERT_COPY_NEVER;   /* the slots never fill: no hit counts */
    c.expert_hit_rate = 0.9;
    expert_plan_predict(&c);
    SW_CHECK(fabs(c.decode_tokens_per_s / c.decode_tokens_per_s_uncached - 1) < 1e-9 &&
                 fabs(c.prefill_tokens_per_s / c.prefill_tokens_per_s_uncached - 1) < 1e-9,
             "no hits, no copies: %.3f / %.3f tok/s", c.decode_tokens_per_s,
             c.decode_tokens_per_s_uncached);
    double host_s = 0, dev_s = 0, last = 0;
    for (uint32_t il = 0; il < c.model.config.n_layer; il++) {
        host_s += c.expert_host_s[0][il];
        dev_s += (double)c.model.config.n_expert_used *
                 ((double)c.model.layer_expert_bytes[il] / c.model.config.n_expert) /
                 c.rates.device_mem_Bps;
    }
    c.expert_copy = EXPERT_COPY_ALWAYS;
    for (int i = 0; i <= 10; i++) {
        c.expert_hit_rate = i / 10.0;
        expert_plan_predict(&c);
        SW_CHECK(c.decode_tokens_per_s >= last, "hit rate %.1f: %.3f tok/s", c.expert_hit_rate,
                 c.decode_tokens_per_s);
        last = c.decode_tokens_per_s;
    }
    const double want = 1 / (1 / c.decode_tokens_per_s_uncached - host_s + dev_s);
    SW_CHECK(host_s > 0 && fabs(last / want - 1) < 1e-3, "all hits: %.3f tok/s, want %.3f",
             last, want);

    sw_plan_destroy(p);
}

/* The largest |a - b| over the largest |b|, over n values. */
static double rel_diff(const float *a, const float *b, size_t n) {
    double worst = 0, top = 0;
    for (size_t i = 0; i < n; i++) {
        const double d = fabs((double)a[i] - (double)b[i]);
        worst = d > worst || isnan(d) ? d : worst;
        top = fabs((double)b[i]) > top ? fabs((double)b[i]) : top;
    }
    return top > 0 ? worst / top : worst;
}

/* --cuda (the device check): the cache on a GPU against the same GPU with
 * the experts on the host (the cpu computes them there): CUDA's kernels
 * compute the slots' experts, so the bits may differ; the greedy tokens
 * must not, and the logits stay within bf16's 2^-8 of the largest.
 * Returns 77 (skipped) without a device. */
static int test_cuda(const sw_model *m, uint32_t V) {
    sw_plan_options o = options("cuda", placements[0].place, 1);
    o.device_mem_bytes = 1ull << 30;
    sw_plan *probe = NULL;
    const sw_status st = sw_plan_create(m, NULL, &o, &probe);
    sw_plan_destroy(probe);
    if (st == SW_ERR_NO_DEVICE || st == SW_ERR_UNSUPPORTED) {
        printf("test_expert_cache --cuda: skipped (%s)\n", sw_last_error());
        return 77;
    }
    float *ref = run(m, &o, false, V, NULL);
    const sw_expert_options xs[] = {{1, "lru", "always", 0, 0}, {2, "lfu-decay", "always", 1, 0},
                                    {4, "lru", "always", 1, 0}, {-1, "lru", "auto", 0, 0}};
    for (size_t i = 0; ref != NULL && i < sizeof xs / sizeof xs[0]; i++) {
        o.experts = xs[i];
        sw_report r;
        float *got = run(m, &o, false, V, &r);
        bool same = got != NULL;
        for (int t = 0; same && t < N_DECODE; t++) { /* the greedy choices */
            const float *a = got + (size_t)(N_PROMPT - 1 + t) * V;
            const float *b = ref + (size_t)(N_PROMPT - 1 + t) * V;
            uint32_t ba = 0, bb = 0;
            for (uint32_t v = 1; v < V; v++) {
                ba = a[v] > a[ba] ? v : ba;
                bb = b[v] > b[bb] ? v : bb;
            }
            same = ba == bb;
        }
        const double rd = got ? rel_diff(got, ref, (size_t)N_STEPS * V) : 1.0;
        SW_CHECK(same && rd <= 4e-3, "cuda, %d slots, copy %s: greedy %s, logits %.3g apart",
                 xs[i].slots, xs[i].copy, same ? "same" : "DIFFERS", rd);
        SW_CHECK(got == NULL || (r.experts.hits + r.experts.misses == r.experts.needed &&
                                 r.experts.needed > 0), "cuda counters add up");
        printf("  cuda, %d slots, %s, copy %s, prefetch %d: same greedy %s, logits %.3g apart, "
               "%llu hits of %llu\n", xs[i].slots, xs[i].policy, xs[i].copy, xs[i].prefetch,
               same ? "yes" : "NO", rd, (unsigned long long)r.experts.hits,
               (unsigned long long)r.experts.needed);
        free(got);
    }
    free(ref);
    return sw_check_finish("test_expert_cache --cuda");
}

int main(int argc, char **argv) {
    if (argc != 2 && !(argc == 3 && !strcmp(argv[2], "--cuda"))) {
        fprintf(stderr, "usage: %s MODEL.gguf [--cuda]\n", argv[0]);
        return 2;
    }
    sw_model *m = NULL;
    SW_CHECK_OK(sw_model_open(argv[1], &m));
    if (m == NULL)
        return sw_check_finish("test_expert_cache");
    const uint32_t V = (uint32_t)sw_vocab_size(m);
    for (int i = 0; i < N_PROMPT; i++)
        prompt[i] = (int32_t)((2 + 7 * i * i + 13 * i) % (V - 2)) + 2;
    if (argc == 3) {
        const int rc = test_cuda(m, V);
        sw_model_close(m);
        return rc;
    }
    sw_plan_options cpu = options("cpu", NULL, 1);
    float *ref = run(m, &cpu, false, V, NULL);
    if (ref != NULL) {
        test_identity(m, ref, V);
        test_batched(m, ref, V);
    }
    test_plan(m);
    test_cost_model();
    free(ref);
    sw_model_close(m);
    return sw_check_finish("test_expert_cache");
}
