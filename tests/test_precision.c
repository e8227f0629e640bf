/*
 * test_precision.c — the precision levers on the tiny Gemma 1/2/3 models
 * (all-F32 files, golden logits from transformers in float32):
 *
 *   - attention over an F16/BF16 cache gives exactly the bits of the F32
 *     kernel over the widened values (rounding happens once, at the write);
 *   - --kv-type f16/bf16 and --weights bf16/f16/q8_0 stay near the golden
 *     logits: |ours - golden| <= TOL x max|golden row|, with TOL per lever
 *     (see `levers` below for each bound and why), and the argmax agrees
 *     with the golden's wherever its top-two margin exceeds that bound;
 *   - with the same precision, every plan on the simulated device (all
 *     resident; all streamed from the pinned copy; streamed from pageable
 *     memory; all host; a mix; the planner's smallest budget) gives logits
 *     bit-identical to the all-resident plan, within peak <= plan <= budget,
 *     with the pinned and converted bytes the plan counted allocated;
 *   - f16 KV lowers the all-resident plan's device total and the measured
 *     peak by exactly the KV bytes saved; --weights lowers the weights by
 *     what the plan says it saves.
 */
#define _DEFAULT_SOURCE /* syscall (capabilities), setrlimit */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#ifdef __linux__
#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "backend/cpu/cpu_ops.h"
#include "check.h"
#include "golden.h"
#include "precision_util.h"
#include "quant/half.h"
#include "quant/quantize.h"
#include "quant/types.h"

/* AddressSanitizer intercepts mlock and reports success without locking. */
#if defined(__SANITIZE_ADDRESS__)
#define MLOCK_INTERCEPTED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MLOCK_INTERCEPTED 1
#endif
#endif
#ifndef MLOCK_INTERCEPTED
#define MLOCK_INTERCEPTED 0
#endif

#define N_CTX 128
#define N_BATCH 7   /* smaller than the prompts: chunks straddle the windows */
#define BIG_DEVICE (64ull << 20)

/* One precision setting and how close it must stay to transformers' f32
 * logits, relative to the row's largest |logit|. Our f32 forward is within
 * 2e-5 of them (tests/test_forward_golden.c), so each bound is about the
 * rounding the lever adds. f16 keeps 11 significant bits (relative error
 * up to 2^-11 per element), bf16 8 (2^-8), q8_0 rounds every weight to
 * within half a step of max|block| / 127. These random tiny models have no
 * trained redundancy and amplify such noise about 20x by the logits
 * (measured: f16 KV 1.4e-3..3.3e-3, bf16 KV 8.5e-3..3.0e-2), hence 5e-3
 * and 4e-2. Their weights happen to be bf16 values, which f16 and bf16
 * hold exactly, so --weights f16/bf16 measure ~5e-6 here (same bounds).
 * q8_0 weights move logits by 0.10..0.21 x max (every matrix, 20x): the
 * bound is 0.3 and the argmax must agree on at least 90% of positions;
 * that q8_0 is computed exactly is checked bit for bit separately
 * (q8_0_exact). f16/bf16 may flip an argmax only where the golden's top
 * two are within the bound of each other. */
typedef struct lever {
    const char *kv, *weights;
    double tol;
    double min_argmax;        /* fraction of positions whose argmax must agree */
} lever;

static const lever levers[] = {
    {"f16", NULL, 5e-3, 0},
    {"bf16", NULL, 4e-2, 0},
    {NULL, "f16", 5e-3, 0},
    {NULL, "bf16", 4e-2, 0},
    {NULL, "q8_0", 0.3, 0.9},
    {"f16", "q8_0", 0.3, 0.9},
};
#define N_LEVERS (sizeof levers / sizeof levers[0])

/* ---- attention over typed caches ---------------------------------------- */

static void fill_cache(uint64_t *rng, uint32_t type, uint32_t n, float *wide, uint8_t *typed) {
    for (uint32_t i = 0; i < n; i++) {
        float x = sw_test_rng_float(rng, -2.0f, 2.0f);
        uint16_t h = type == SW_TYPE_F16 ? half_f32_to_f16(x) : half_f32_to_bf16(x);
        wide[i] = type == SW_TYPE_F16 ? half_f16_to_f32(h) : half_bf16_to_f32(h);
        typed[2 * i] = (uint8_t)(h & 0xff);
        typed[2 * i + 1] = (uint8_t)(h >> 8);
    }
}

/* hd 4160 exceeds the kernel's value buffer (4096 floats): both paths of
 * the widening. Each case also runs with room for a KV group's scores
 * (a unit per group: each key and value read once for its heads), F32
 * and typed, and must give the same bits. */
static void test_attention_typed(cpu_pool *pool) {
    enum { ROWS = 24, T = 5, H = 4, HKV = 2, MAX_HD = 4160, MAX_THREADS = 8 };
    static const uint32_t hds[3] = {16, 300, MAX_HD};
    static float q[T * H * MAX_HD], kw[ROWS * HKV * MAX_HD], vw[ROWS * HKV * MAX_HD];
    static uint8_t kt[2 * ROWS * HKV * MAX_HD], vt[2 * ROWS * HKV * MAX_HD];
    static float want[T * H * MAX_HD], got[T * H * MAX_HD];
    static float scratch[MAX_THREADS * ROWS * (H / HKV)];
    const int32_t pos[T] = {3, 9, 10, 17, 23};
    uint64_t rng = 42;
    int n = 0;
    SW_CHECK(cpu_pool_size(pool) <= MAX_THREADS, "pool of %d threads", cpu_pool_size(pool));
    for (int ti = 0; ti < 2; ti++) {
        uint32_t type = ti ? SW_TYPE_BF16 : SW_TYPE_F16;
        for (int hi = 0; hi < 3; hi++) {
            uint32_t hd = hds[hi], nkv = ROWS * HKV * hd;
            for (uint32_t i = 0; i < T * H * hd; i++)
                q[i] = sw_test_rng_float(&rng, -1.0f, 1.0f);
            fill_cache(&rng, type, nkv, kw, kt);
            fill_cache(&rng, type, nkv, vw, vt);
            for (int c = 0; c < 3; c++) {   /* global, window + ring, soft-cap */
                cpu_attn_args a = {.q = q, .k = kw, .v = vw, .out = want, .q_pos = pos,
                                   .n_tokens = T, .n_head = H, .n_head_kv = HKV,
                                   .head_dim = hd, .kv_ring = c == 1 ? 12 : 0,
                                   .window = c == 1 ? 8 : 0, .softcap = c == 2 ? 1.5f : 0,
                                   .scratch = scratch};
                cpu_attention(pool, &a);
                a.out = got;
                for (int form = 0; form < 3; form++) { /* typed; typed, group; f32, group */
                    a.k = form < 2 ? (const void *)kt : kw;
                    a.v = form < 2 ? (const void *)vt : vw;
                    a.kv_type = form < 2 ? type : SW_TYPE_F32;
                    a.scratch_floats = form > 0 ? sizeof scratch / sizeof scratch[0] : 0;
                    memset(got, 0xff, (size_t)T * H * hd * sizeof(float));
                    cpu_attention(pool, &a);
                    SW_CHECK(!memcmp(want, got, (size_t)T * H * hd * sizeof(float)),
                             "%s cache, hd %u, case %d, %s: not the f32 kernel's bits",
                             form < 2 ? type_name(type) : "F32", hd, c,
                             form ? "a unit per KV group" : "a unit per head");
                    n++;
                }
            }
        }
    }
    printf("attention over F16/BF16 caches: %d cases bit-identical to f32 over the widened "
           "values\n", n);
}

/* ---- accuracy against the golden ---------------------------------------- */

typedef struct prompt {
    const int32_t *ids;
    const float *gold;     /* (T, n_vocab) */
    uint32_t T;
} prompt;

/* Argmax flips the golden's margin does not excuse. */
static uint32_t bad_flips(const float *gold, const float *ours, uint32_t T, uint32_t V,
                          double tol) {
    uint32_t bad = 0;
    for (uint32_t t = 0; t < T; t++) {
        const float *g = gold + (size_t)t * V, *o = ours + (size_t)t * V;
        int32_t ga = prec_argmax(g, V), oa = prec_argmax(o, V);
        double scale = 0;
        for (uint32_t v = 0; v < V; v++)
            scale = fmax(scale, fabs((double)g[v]));
        /* Both logits may move by tol x scale: a margin below 2x that may flip. */
        bad += ga != oa && (double)g[ga] - g[oa] > 2 * tol * scale;
    }
    return bad;
}

static void check_lever(const sw_model *m, const char *arch, const prompt *ps, int n_ps,
                        const lever *lv) {
    prec_diff worst = {0, 0, 0, 0}, vs_f32 = {0, 0, 0, 0};
    uint32_t flips = 0;
    for (int p = 0; p < n_ps; p++) {
        sw_plan_options o = prec_options(NULL, 0, N_CTX, N_BATCH, lv->kv, lv->weights);
        sw_plan_options f = prec_options(NULL, 0, N_CTX, N_BATCH, NULL, NULL);
        prec_run r = prec_run_prompt(m, &o, ps[p].ids, ps[p].T, 0);
        prec_run base = prec_run_prompt(m, &f, ps[p].ids, ps[p].T, 0);
        SW_CHECK(r.st == SW_OK && base.st == SW_OK, "%s: %s", arch, sw_last_error());
        if (r.logits && base.logits) {
            prec_diff d, b;
            prec_compare(ps[p].gold, r.logits, ps[p].T, r.n_vocab, &d);
            prec_compare(base.logits, r.logits, ps[p].T, r.n_vocab, &b);
            worst.max_abs = fmax(worst.max_abs, d.max_abs);
            worst.max_rel = fmax(worst.max_rel, d.max_rel);
            worst.same_argmax += d.same_argmax;
            worst.n_rows += d.n_rows;
            vs_f32.max_abs = fmax(vs_f32.max_abs, b.max_abs);
            flips += bad_flips(ps[p].gold, r.logits, ps[p].T, r.n_vocab, lv->tol);
        }
        prec_run_free(&r);
        prec_run_free(&base);
    }
    SW_CHECK(worst.max_rel <= lv->tol, "%s kv %s weights %s: %.3g x max|logit| from the "
             "golden (bound %.1e)", arch, lv->kv ? lv->kv : "f32",
             lv->weights ? lv->weights : "stored", worst.max_rel, lv->tol);
    if (lv->min_argmax > 0)
        SW_CHECK(worst.same_argmax >= lv->min_argmax * worst.n_rows, "%s kv %s weights %s: "
                 "argmax agrees on %u of %u positions", arch, lv->kv ? lv->kv : "f32",
                 lv->weights ? lv->weights : "stored", worst.same_argmax, worst.n_rows);
    else
        SW_CHECK(flips == 0, "%s kv %s weights %s: %u argmax flips beyond near-ties", arch,
                 lv->kv ? lv->kv : "f32", lv->weights ? lv->weights : "stored", flips);
    printf("  %-7s kv %-4s weights %-6s: max|dlogit| %.3g vs golden (%.2e x max, bound %.0e), "
           "%.3g vs f32 KV/stored; argmax %u/%u\n", arch, lv->kv ? lv->kv : "f32",
           lv->weights ? lv->weights : "stored", worst.max_abs, worst.max_rel, lv->tol,
           vs_f32.max_abs, worst.same_argmax, worst.n_rows);
}

/* Replaces the f32 matrix v by its Q8_0 round trip (quantize, dequantize)
 * in a new array, returned for freeing. */
static float *round_trip_q8_0(tensor_view *v) {
    uint64_t n = v->ne[0] * v->ne[1], q_bytes = n / 32 * 34;
    float *out = malloc(n * sizeof *out), *row = malloc(v->ne[0] * sizeof *row);
    uint8_t *q = malloc(q_bytes);
    if (out && row && q) {
        SW_CHECK_OK(quant_convert_rows(SW_TYPE_F32, v->data, SW_TYPE_Q8_0, q, v->ne[1],
                                       v->ne[0], row));
        SW_CHECK_OK(quant_convert_rows(SW_TYPE_Q8_0, q, SW_TYPE_F32, out, v->ne[1], v->ne[0],
                                       row));
        v->data = out;
    }
    free(row);
    free(q);
    return out;
}

/* --weights q8_0 computes exactly what f32 inference over Q8_0-rounded
 * weights computes (the dot products read each weight as dequantized, and
 * the quantizer is gguf's, byte for byte: test_quantize): a cpu engine of
 * the stored file gets every matrix re-pointed at its round trip. */
static void q8_0_exact(const sw_model *m, const char *arch, const prompt *p) {
    sw_plan_options o = prec_options(NULL, 0, N_CTX, N_BATCH, NULL, "q8_0");
    prec_run want = prec_run_prompt(m, &o, p->ids, p->T, 0);
    sw_engine *e = NULL;
    sw_session *s = NULL;
    float *owned[8 * 64 + 1], *got = NULL;
    int n_owned = 0;
    o.weights = NULL;
    SW_CHECK_OK(sw_engine_launch(m, &o, NULL, &e));
    if (e == NULL || want.logits == NULL || e->config.n_layer > 64)
        goto done;
    owned[n_owned++] = round_trip_q8_0(&e->weights.tok_embd);
    e->weights.output = e->weights.tok_embd;   /* tied */
    for (uint32_t il = 0; il < e->config.n_layer; il++) {
        layer_weights *w = &e->weights.layers[il];
        const block_weight mats[] = {BW_Q, BW_K, BW_V, BW_O, BW_GATE, BW_UP, BW_DOWN};
        for (int i = 0; i < 7; i++)
            owned[n_owned++] = round_trip_q8_0(&w->t[mats[i]]);
    }
    engine_bind_host_views(e);
    got = malloc((size_t)p->T * want.n_vocab * sizeof *got);
    SW_CHECK_OK(sw_session_create(e, &s));
    if (s != NULL && got != NULL) {
        SW_CHECK_OK(sw_session_eval(s, p->ids, p->T, got, 1));
        SW_CHECK(!memcmp(got, want.logits, (size_t)p->T * want.n_vocab * sizeof *got),
                 "%s: --weights q8_0 is not f32 inference over Q8_0-rounded weights", arch);
        printf("  %-7s --weights q8_0: bit-identical to f32 over Q8_0-rounded weights\n", arch);
    }
done:
    sw_session_destroy(s);
    sw_engine_destroy(e);
    for (int i = 0; i < n_owned; i++)
        free(owned[i]);
    free(got);
    prec_run_free(&want);
}

/* ---- plans: bit-identical, accounted ------------------------------------ */

/* Bisections stop at this many bytes: the tiny models plan in kilobytes,
 * and any budget that plans is a valid test point. */
#define BISECT_BYTES 1024

/* Smallest sim budget in (lo, hi] (to BISECT_BYTES) that creates an
 * engine with o. */
static uint64_t min_budget(const sw_model *m, sw_plan_options o, uint64_t lo, uint64_t hi) {
    while (hi - lo > BISECT_BYTES) {
        uint64_t mid = lo + (hi - lo) / 2;
        sw_engine *e = NULL;
        o.device_mem_bytes = mid;
        if (sw_engine_launch(m, &o, NULL, &e) == SW_OK)
            hi = mid;
        else
            lo = mid;
        sw_engine_destroy(e);
    }
    return hi;
}

/* Smallest host budget for which `place` plans at all: pinning the streamed
 * layers then no longer fits, so they stream from pageable memory. */
static uint64_t min_host(const sw_model *m, sw_plan_options o) {
    uint64_t lo = 0, hi = 8ull << 20;
    while (hi - lo > BISECT_BYTES) {
        uint64_t mid = lo + (hi - lo) / 2;
        sw_engine *e = NULL;
        o.host_mem_bytes = mid;
        if (sw_engine_launch(m, &o, NULL, &e) == SW_OK)
            hi = mid;
        else
            lo = mid;
        sw_engine_destroy(e);
    }
    return hi;
}

typedef struct sweep_seen {
    int pinned, locked, pageable, staged, converted, host, mixed;
} sweep_seen;

static void check_plan(const prec_run *ref, const prec_run *r, const char *what,
                       sweep_seen *seen) {
    size_t n = (size_t)ref->n_tokens * ref->n_vocab * sizeof(float);
    SW_CHECK(r->st == SW_OK, "%s: %s", what, sw_last_error());
    if (r->st != SW_OK || r->logits == NULL || ref->logits == NULL)
        return;
    SW_CHECK(!memcmp(ref->logits, r->logits, n), "%s: logits differ from all-resident", what);
    SW_CHECK(r->rep.peak_device_bytes <= r->rep.plan_device_bytes &&
             r->rep.plan_device_bytes <= r->rep.device_budget_bytes,
             "%s: peak %llu, plan %llu, budget %llu", what,
             (unsigned long long)r->rep.peak_device_bytes,
             (unsigned long long)r->rep.plan_device_bytes,
             (unsigned long long)r->rep.device_budget_bytes);
    SW_CHECK(r->rep.pinned_bytes == r->rep.plan_pinned_bytes, "%s: pinned %llu, plan %llu",
             what, (unsigned long long)r->rep.pinned_bytes,
             (unsigned long long)r->rep.plan_pinned_bytes);
    SW_CHECK(r->rep.converted_bytes == r->plan_converted_bytes, "%s: converted %llu, plan %llu",
             what, (unsigned long long)r->rep.converted_bytes,
             (unsigned long long)r->plan_converted_bytes);
    SW_CHECK(r->stream_pinned == r->streams_from_pinned, "%s: the plan %s the streamed "
             "layers but the ring copies from %s", what, r->stream_pinned ? "pins" : "maps",
             r->streams_from_pinned ? "the pinned copy" : "elsewhere");
    seen->locked += r->stream_pinned && r->rep.pinned_locked;
    seen->pinned += r->stream_pinned;
    seen->pageable += r->n_streamed > 0 && !r->stream_pinned;
    seen->converted += r->rep.converted_bytes > 0;
    seen->host += r->n_host > 0;
    seen->mixed += r->n_resident && r->n_streamed && r->n_host;
}

static void sweep(const sw_model *m, const char *arch, const prompt *p, const lever *lv,
                  sweep_seen *seen) {
    static const char *const places[] = {NULL, "all=streamed", "all=host,lm_head=resident",
                                         "0=resident,1=streamed,2-=host"};
    sw_plan_options o = prec_options("sim", BIG_DEVICE, N_CTX, N_BATCH, lv->kv, lv->weights);
    prec_run ref = prec_run_prompt(m, &o, p->ids, p->T, 3);
    SW_CHECK(ref.st == SW_OK && ref.n_resident > 0 && ref.n_streamed == 0,
             "%s: the all-resident plan: %s", arch, sw_last_error());
    char what[160];
    for (size_t i = 1; i < sizeof places / sizeof places[0]; i++) {
        o.place = places[i];
        prec_run r = prec_run_prompt(m, &o, p->ids, p->T, 3);
        snprintf(what, sizeof what, "%s --place %s", arch, places[i]);
        check_plan(&ref, &r, what, seen);
        prec_run_free(&r);
    }
    o.place = places[1];
    o.host_mem_bytes = min_host(m, o);
    prec_run r = prec_run_prompt(m, &o, p->ids, p->T, 3);
    snprintf(what, sizeof what, "%s all streamed, host budget %llu", arch,
             (unsigned long long)o.host_mem_bytes);
    check_plan(&ref, &r, what, seen);
    prec_run_free(&r);
    o.place = NULL;
    o.host_mem_bytes = 0;
    uint64_t lo = min_budget(m, o, 0, ref.rep.plan_device_bytes);
    for (int k = 0; k < 2; k++) {
        o.device_mem_bytes = lo + (ref.rep.plan_device_bytes - lo) / 3 * (uint64_t)k;
        r = prec_run_prompt(m, &o, p->ids, p->T, 3);
        snprintf(what, sizeof what, "%s budget %llu", arch,
                 (unsigned long long)o.device_mem_bytes);
        check_plan(&ref, &r, what, seen);
        seen->staged += r.rep.converted_bytes > 0 && r.n_resident > 0;
        prec_run_free(&r);
    }
    prec_run_free(&ref);
}

/* f16 KV: the all-resident plan and the measured peak drop by the KV saved. */
static void kv_saving(const sw_model *m, const char *arch, const prompt *p) {
    sw_plan_options o = prec_options("sim", BIG_DEVICE, N_CTX, N_BATCH, NULL, NULL);
    prec_run a = prec_run_prompt(m, &o, p->ids, p->T, 0);
    o.kv_type = "f16";
    prec_run b = prec_run_prompt(m, &o, p->ids, p->T, 0);
    uint64_t saved = a.plan_kv_device_bytes - b.plan_kv_device_bytes;
    SW_CHECK(a.st == SW_OK && b.st == SW_OK && saved > 0, "%s: KV saving", arch);
    SW_CHECK(a.rep.plan_device_bytes - b.rep.plan_device_bytes == saved &&
             a.rep.peak_device_bytes - b.rep.peak_device_bytes == saved,
             "%s: f16 KV saves %llu KV bytes but the plan drops %llu and the peak %llu", arch,
             (unsigned long long)saved,
             (unsigned long long)(a.rep.plan_device_bytes - b.rep.plan_device_bytes),
             (unsigned long long)(a.rep.peak_device_bytes - b.rep.peak_device_bytes));
    printf("  %-7s all-resident: device peak %llu B (f32 KV) -> %llu B (f16 KV), KV %llu -> "
           "%llu B\n", arch, (unsigned long long)a.rep.peak_device_bytes,
           (unsigned long long)b.rep.peak_device_bytes,
           (unsigned long long)a.plan_kv_device_bytes, (unsigned long long)b.plan_kv_device_bytes);
    prec_run_free(&a);
    prec_run_free(&b);
}

/* --weights: the plan's weights shrink by what it says it saves; all
 * resident, the device total drops by the same. */
static void weights_saving(const sw_model *m, const char *arch, const prompt *p) {
    static const char *const types[] = {"bf16", "f16", "q8_0"};
    sw_plan_options o = prec_options("sim", BIG_DEVICE, N_CTX, N_BATCH, NULL, NULL);
    prec_run a = prec_run_prompt(m, &o, p->ids, p->T, 0);
    for (int i = 0; i < 3; i++) {
        o.weights = types[i];
        prec_run b = prec_run_prompt(m, &o, p->ids, p->T, 0);
        uint64_t saved = b.stored_bytes - b.weights_bytes;
        SW_CHECK(b.st == SW_OK && b.stored_bytes == a.weights_bytes && saved > 0,
                 "%s --weights %s: saves nothing", arch, types[i]);
        SW_CHECK(a.rep.plan_device_bytes - b.rep.plan_device_bytes == saved,
                 "%s --weights %s: saves %llu but the all-resident plan drops %llu", arch,
                 types[i], (unsigned long long)saved,
                 (unsigned long long)(a.rep.plan_device_bytes - b.rep.plan_device_bytes));
        printf("  %-7s --weights %-4s: weights %llu -> %llu B (saves %llu), host converted "
               "%llu B\n", arch, types[i], (unsigned long long)b.stored_bytes,
               (unsigned long long)b.weights_bytes, (unsigned long long)saved,
               (unsigned long long)b.rep.converted_bytes);
        prec_run_free(&b);
    }
    prec_run_free(&a);
}

static void test_arch(const char *arch, sweep_seen *seen) {
    char gpath[64], mpath[64];
    golden_file *g = NULL;
    sw_model *m = NULL;
    snprintf(gpath, sizeof gpath, "golden/%s.swgold", arch);
    SW_CHECK_OK(golden_load(sw_test_data(gpath), &g));
    snprintf(mpath, sizeof mpath, "tiny/%s.gguf", arch);
    SW_CHECK_OK(sw_model_open(sw_test_data(mpath), &m));
    prompt ps[8];
    int n_ps = 0;
    for (int i = 0; g != NULL && m != NULL && i < 8; i++) {
        char ki[32], kl[32];
        snprintf(ki, sizeof ki, "p%d.ids", i);
        snprintf(kl, sizeof kl, "p%d.logits", i);
        const golden_entry *ids = golden_find(g, ki), *lg = golden_find(g, kl);
        if (ids == NULL || lg == NULL)
            break;
        ps[n_ps++] = (prompt){ids->data, lg->data, (uint32_t)ids->dims[0]};
    }
    SW_CHECK(n_ps > 0, "%s: no golden prompts", arch);
    for (size_t i = 0; i < N_LEVERS && n_ps > 0; i++)
        check_lever(m, arch, ps, n_ps, &levers[i]);
    if (n_ps > 0) {
        const prompt *longest = &ps[n_ps - 1];
        /* Plans are swept for f16 KV, q8_0 weights (+ f16 KV) and bf16
         * weights + bf16 KV: each way a layer's bytes can be held. */
        static const lever swept[] = {{"f16", NULL, 0, 0}, {"f16", "q8_0", 0, 0},
                                      {"bf16", "bf16", 0, 0}};
        for (size_t i = 0; i < sizeof swept / sizeof swept[0]; i++)
            sweep(m, arch, longest, &swept[i], seen);
        q8_0_exact(m, arch, longest);
        kv_saving(m, arch, longest);
        weights_saving(m, arch, longest);
    }
    sw_model_close(m);
    golden_free(g);
}

/* Gives up CAP_IPC_LOCK (root's licence to lock past RLIMIT_MEMLOCK), as
 * an ordinary user runs. Dropping an effective capability is always
 * allowed; returns whether the capability is now off. */
static bool drop_ipc_lock(void) {
#ifdef __linux__
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    if (syscall(SYS_capget, &h, d) != 0)
        return false;
    d[0].effective &= ~(1u << CAP_IPC_LOCK);
    return syscall(SYS_capset, &h, d) == 0;
#else
    return false;
#endif
}

/* With RLIMIT_MEMLOCK lowered below the pinned copy and no licence to lock
 * past it, mlock is refused: the engine keeps the copy pageable, says so in
 * its notes and report, and computes the same logits. Run last: it lowers
 * this process's limit and capabilities for good. */
static void pinned_fallback(void) {
    sw_model *m = NULL;
    SW_CHECK_OK(sw_model_open(sw_test_data("tiny/gemma3.gguf"), &m));
    if (m == NULL)
        return;
    const int32_t ids[12] = {2, 17, 99, 250, 301, 44, 7, 88, 120, 510, 3, 64};
    sw_plan_options o = prec_options("sim", BIG_DEVICE, N_CTX, N_BATCH, "f16", NULL);
    prec_run ref = prec_run_prompt(m, &o, ids, 12, 2);
    struct rlimit rl = {4096, 4096};
    SW_CHECK(setrlimit(RLIMIT_MEMLOCK, &rl) == 0, "cannot lower RLIMIT_MEMLOCK");
    bool dropped = drop_ipc_lock();
    o.place = "all=streamed";
    sw_engine *e = NULL;
    SW_CHECK_OK(sw_engine_launch(m, &o, NULL, &e));
    if (e != NULL) {
        sw_report rep;
        sw_engine_report(e, &rep);
        const char *notes = sw_engine_notes(e);
        SW_CHECK(rep.pinned_bytes == rep.plan_pinned_bytes && rep.pinned_bytes > 4096,
                 "pinned %llu of plan %llu", (unsigned long long)rep.pinned_bytes,
                 (unsigned long long)rep.plan_pinned_bytes);
        SW_CHECK(rep.pinned_locked || strstr(notes, "mlock refused") != NULL,
                 "an unlocked pinned copy is not reported: '%s'", notes);
        SW_CHECK(!dropped || !rep.pinned_locked || MLOCK_INTERCEPTED, "mlock of %llu bytes "
                 "succeeded under a 4 KiB limit without CAP_IPC_LOCK",
                 (unsigned long long)rep.pinned_bytes);
        printf("pinned copy of %llu bytes under RLIMIT_MEMLOCK 4 KiB: %s\n",
               (unsigned long long)rep.pinned_bytes,
               rep.pinned_locked ? "locked anyway (the process may lock beyond the limit)"
                                 : notes);
    }
    sw_engine_destroy(e);
    prec_run r = prec_run_prompt(m, &o, ids, 12, 2);
    sweep_seen seen = {0, 0, 0, 0, 0, 0, 0};
    check_plan(&ref, &r, "pinned copy under a 4 KiB RLIMIT_MEMLOCK", &seen);
    prec_run_free(&r);
    prec_run_free(&ref);
    sw_model_close(m);
}

int main(void) {
    cpu_pool *pool = NULL;
    SW_CHECK_OK(cpu_pool_create(2, &pool));
    if (pool != NULL)
        test_attention_typed(pool);
    cpu_pool_destroy(pool);
    sweep_seen seen = {0, 0, 0, 0, 0, 0, 0};
    const char *const archs[] = {"gemma1", "gemma2", "gemma3"};
    for (int i = 0; i < 3; i++)
        test_arch(archs[i], &seen);
    /* Every way of holding weights was exercised somewhere. */
    SW_CHECK(seen.pinned && seen.pageable && seen.staged && seen.converted && seen.host &&
             seen.mixed, "plans exercised: pinned %d, pageable %d, staged %d, converted %d, "
             "host %d, mixed %d", seen.pinned, seen.pageable, seen.staged, seen.converted,
             seen.host, seen.mixed);
    printf("plans checked bit-identical: %d streamed from the pinned copy (%d page-locked), "
           "%d from pageable memory, %d with resident layers converted through staging, %d "
           "with converted host weights, %d mixed\n", seen.pinned, seen.locked, seen.pageable,
           seen.staged, seen.converted, seen.mixed);
    pinned_fallback();
    return sw_check_finish("test_precision");
}
