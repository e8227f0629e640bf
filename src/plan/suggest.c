/*
 * suggest.c — what to change when nothing fits, and what would help when
 * something does. Every suggestion is checked by re-running the search
 * with the change (pure, like the rest of the planner), so each one comes
 * with the numbers it would give; none is a guess.
 *
 * Failure candidates, by what the user gives up (suggest_levers): every
 * set of f16 KV (from f32), one sequence (-np 1) and lower-precision
 * weights (for f32/f16/bf16 weights) that fits as asked; the largest
 * prefill chunk that fits; the largest context that fits alone, and with
 * each set of those levers that buys more of it; then the largest smaller
 * catalog model, and, when only the device is short, the cpu backend.
 * Every --kv-type and --weights suggestion is a flag and value `spillway
 * run` accepts for the model planned.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "plan/plan_internal.h"
#include "util/error.h"

#define MSG_MAX 2048
#define MIN_USEFUL_CTX 256  /* shorter contexts are not worth suggesting */

typedef struct trial {
    plan_choice best;
    uint64_t all_resident_bytes;
} trial;

/* Plans m with workload w (no pins): true and *t filled if it fits. */
static bool try_plan(const plan_model *m, const plan_budget *b, const plan_rates *r,
                     const plan_workload *w, trial *t) {
    static const plan_pins no_pins;
    plan_ctx x;
    search_result res;
    if (w->n_ctx > m->config.n_ctx_train || w->n_ctx == 0 || w->n_batch == 0)
        return false;
    plan_ctx_init(&x, m, b, r, w);
    plan_search(&x, &no_pins, &res);
    if (res.found) {
        t->best = res.best;
        t->all_resident_bytes = plan_all_resident_bytes(&x);
    }
    return res.found;
}

typedef struct msg {
    char text[MSG_MAX];
    size_t len;
    uint32_t n_items;
} msg;

static void put(msg *m, const char *fmt, ...) SW_PRINTF(2, 3);

static void put(msg *m, const char *fmt, ...) {
    if (m->len + 1 >= sizeof m->text)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(m->text + m->len, sizeof m->text - m->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        m->len += (size_t)n < sizeof m->text - m->len ? (size_t)n : sizeof m->text - m->len - 1;
}

/* "  CHANGE (device 198.2 MiB, decode 12.3 tok/s)" */
static void put_item(msg *m, const plan_ctx *x, const char *change, const trial *t,
                     uint32_t n_seq) {
    char sz[32];
    bool dev = x->b->has_device && (t->best.lm == PLACE_RESIDENT || t->best.n_resident +
                                    t->best.n_streamed > 0);
    plan_format_size(dev ? t->best.dev_bytes : t->best.host_alloc_bytes, sz, sizeof sz);
    const double tps = n_seq / t->best.pass_s[PASS_DECODE];
    /* two significant digits below 1 tok/s: weights read from disk are slow, not zero */
    put(m, tps < 1.0 ? "\n  %s (%s %s, decode %.2g tok/s)" : "\n  %s (%s %s, decode %.1f tok/s)",
        change, dev ? "device" : "host", sz, tps);
    m->n_items++;
}

/* Largest value in [1, hi] for which model m with workload base, its
 * context (ctx) or its prefill chunk set to the value, fits; 0 if none.
 * Fitting is monotone in context and chunk size (both only add bytes). */
static uint32_t largest_fit_of(const plan_ctx *x, const plan_model *m,
                               const plan_workload *base, uint32_t hi, bool ctx, trial *t) {
    uint32_t lo = 1, found = 0;
    trial cur;
    while (lo <= hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        plan_workload w = *base;
        if (ctx) {
            w.n_ctx = mid;
            w.n_batch = w.n_batch < mid ? w.n_batch : mid;
        } else {
            w.n_batch = mid;
        }
        if (try_plan(m, x->b, x->r, &w, &cur)) {
            found = mid;
            *t = cur;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    return found;
}

static uint32_t largest_fit(const plan_ctx *x, uint32_t hi, bool ctx, trial *t) {
    return largest_fit_of(x, x->m, &x->w, hi, ctx, t);
}

/* The type the weights have in this plan: the conversion asked for, or
 * the stored type. */
static const char *effective_type(const plan_model *m) {
    return m->convert != PLAN_CONVERT_NONE ? plan_convert_name(m->convert) : m->weight_type;
}

/* Whether --weights q8_0 (and, from f32, bf16) could still shrink m. */
static bool wide_weights(const plan_model *m) {
    const char *t = effective_type(m);
    return !strcmp(t, "F32") || !strcmp(t, "F16") || !strcmp(t, "BF16");
}

/* The levers that keep the model, each with what it gives up, in the
 * order the suggestions list them: KV precision (f16 is llama.cpp's
 * default), parallel sequences (-np 1), weight precision (--weights). A
 * set of them that fits at the asked context is said as is; one that does
 * not, with the largest context that fits alongside it. */
enum { LV_KV = 1, LV_SEQ = 2, LV_WEIGHTS = 4, LV_SETS = 8 };

/* Whether lever v applies to this plan at all. */
static bool lever_applies(const plan_ctx *x, unsigned v) {
    return v == LV_KV ? x->w.kv_type == PLAN_KV_F32
         : v == LV_SEQ ? x->w.n_seq > 1
                       : wide_weights(x->m);
}

typedef struct lever_try {
    bool tried, full;       /* full: fits at the asked context */
    uint32_t ctx;           /* the largest context that fits with it (0: none useful) */
    const char *weights;    /* the --weights type used, with LV_WEIGHTS */
    uint64_t weights_bytes;
    trial t;
} lever_try;

/* Tries lever set s: first at the asked context, then the largest context
 * that fits. With LV_WEIGHTS, bf16 (from f32) is tried before q8_0, and
 * q8_0, the narrowest, for the context. */
static void try_levers(const plan_ctx *x, unsigned s, lever_try *out) {
    plan_workload w = x->w;
    const char *types[2] = {!strcmp(effective_type(x->m), "F32") ? "bf16" : NULL, "q8_0"};
    memset(out, 0, sizeof *out);
    out->tried = true;
    if (s & LV_KV)
        w.kv_type = PLAN_KV_F16;
    if (s & LV_SEQ)
        w.n_seq = 1;
    for (int i = (s & LV_WEIGHTS) ? 0 : 1; i < 2; i++) {
        plan_model pm = *x->m;
        if (s & LV_WEIGHTS) {
            if (types[i] == NULL || plan_model_for_type(&x->m->config, types[i], &pm) != SW_OK)
                continue;
            pm.file_bytes = 0;
            snprintf(pm.name, sizeof pm.name, "%s", x->m->name);
            out->weights = types[i];
            out->weights_bytes = plan_model_total_bytes(&pm);
        }
        if (try_plan(&pm, x->b, x->r, &w, &out->t)) {
            out->full = true;
            out->ctx = w.n_ctx;
            return;
        }
        if (i == 1) {
            uint32_t c = x->w.n_ctx > MIN_USEFUL_CTX
                             ? largest_fit_of(x, &pm, &w, x->w.n_ctx - 1, true, &out->t)
                             : 0;
            out->ctx = c >= MIN_USEFUL_CTX ? c : 0;
        }
    }
}

static void put_levers(msg *m, const plan_ctx *x, unsigned s, const lever_try *l) {
    char change[160], sz[32];
    int n = 0;
    if (s & LV_KV)
        n += snprintf(change + n, sizeof change - (size_t)n, "--kv-type f16 ");
    if (s & LV_SEQ)
        n += snprintf(change + n, sizeof change - (size_t)n, "-np 1 ");
    if (s & LV_WEIGHTS) {
        plan_format_size(l->weights_bytes, sz, sizeof sz);
        n += snprintf(change + n, sizeof change - (size_t)n, "--weights %s (weights %s) ",
                      l->weights, sz);
    }
    if (!l->full)
        n += snprintf(change + n, sizeof change - (size_t)n, "-c %u ", l->ctx);
    change[n > 0 ? n - 1 : 0] = '\0';
    put_item(m, x, change, &l->t, (s & LV_SEQ) ? 1 : x->w.n_seq);
}

/* Every applicable set of levers, the prefill chunk and the context: first
 * the sets that fit as asked and need all they hold (a set whose subset
 * fits is not said), then the smaller prefill chunk, then the largest
 * context alone and each set that buys more context than its subsets and
 * the context alone (the context is given up last: it is what the user
 * asked for). */
static void suggest_levers(msg *m, const plan_ctx *x) {
    lever_try l[LV_SETS];
    trial t;
    uint32_t v, alone = 0;
    memset(l, 0, sizeof l);
    for (unsigned s = 1; s < LV_SETS; s++) {
        bool ok = true;
        for (unsigned b = 1; b < LV_SETS; b <<= 1)
            ok = ok && (!(s & b) || lever_applies(x, b));
        if (ok)
            try_levers(x, s, &l[s]);
    }
    for (unsigned s = 1; s < LV_SETS; s++) {
        bool subset_full = false;
        for (unsigned u = 1; u < s; u++)
            subset_full = subset_full || ((u & s) == u && l[u].full);
        if (l[s].full && !subset_full)
            put_levers(m, x, s, &l[s]);
    }
    if (x->w.n_batch > 1 && (v = largest_fit(x, x->w.n_batch - 1, false, &t)) != 0) {
        char change[64];
        snprintf(change, sizeof change, "-b %u (prefill chunk)", v);
        put_item(m, x, change, &t, x->w.n_seq);
    }
    if (x->w.n_ctx > MIN_USEFUL_CTX && (v = largest_fit(x, x->w.n_ctx - 1, true, &t)) != 0 &&
        v >= MIN_USEFUL_CTX) {
        char change[64];
        snprintf(change, sizeof change, "-c %u", v);
        put_item(m, x, change, &t, x->w.n_seq);
        alone = v;
    }
    for (unsigned s = 1; s < LV_SETS; s++) {
        uint32_t best_sub = alone;
        bool subset_full = false;
        for (unsigned u = 1; u < s; u++)
            if ((u & s) == u && l[u].tried) {
                subset_full = subset_full || l[u].full;
                best_sub = l[u].ctx > best_sub ? l[u].ctx : best_sub;
            }
        if (l[s].tried && !l[s].full && !subset_full && l[s].ctx > best_sub)
            put_levers(m, x, s, &l[s]);
    }
}

/* The largest catalog model smaller than this one that fits, in the same
 * weight type when the catalog knows it (else q4_k_m). Said as a model to
 * fetch, not as flags: `run` needs a file, and its --weights does not
 * quantize to q4_k_m. */
static void suggest_model(msg *m, const plan_ctx *x) {
    const char *type = plan_catalog_type(x->m->weight_type);
    uint64_t cur = plan_model_total_bytes(x->m), best_bytes = 0;
    const char *best_name = NULL;
    trial best_t, t;
    if (type == NULL)
        type = PLAN_CATALOG_DEFAULT_TYPE;
    for (size_t i = 0; i < plan_catalog_count(); i++) {
        plan_model pm;
        if (plan_model_from_catalog(plan_catalog_name(i), type, &pm) != SW_OK)
            continue;
        uint64_t total = plan_model_total_bytes(&pm);
        plan_workload w = x->w;
        if (w.n_ctx > pm.config.n_ctx_train)
            w.n_ctx = pm.config.n_ctx_train;
        if (total >= cur || total <= best_bytes || !try_plan(&pm, x->b, x->r, &w, &t))
            continue;
        best_bytes = total;
        best_name = plan_catalog_name(i);
        best_t = t;
    }
    if (best_name != NULL) {
        char change[64], sz[32];
        plan_format_size(best_bytes, sz, sizeof sz);
        snprintf(change, sizeof change, "a smaller model: %s %s (%s)", best_name, type, sz);
        put_item(m, x, change, &best_t, x->w.n_seq);
    }
}

static void suggest_cpu(msg *m, const plan_ctx *x) {
    plan_budget b = *x->b;
    trial t;
    b.has_device = false;
    b.device_bytes = 0;
    snprintf(b.backend, sizeof b.backend, "cpu");
    if (try_plan(x->m, &b, x->r, &x->w, &t)) {
        plan_ctx y = *x;
        y.b = &b;
        put_item(m, &y, "--backend cpu (everything on the host)", &t, x->w.n_seq);
    }
}

/* "activations 9.1 MiB, 1 layer 4.2 MiB, ..." for the smallest device plan. */
static void describe_min(const plan_ctx *x, const plan_choice *c, char *buf, size_t cap) {
    char a[32], l[32], k[32], s[32], h[32];
    uint64_t lay = 0, kv = 0;
    for (uint32_t il = 0; il < x->n_layer; il++) {
        lay += c->place[il] == PLACE_RESIDENT ? plan_device_layer_bytes(x, c, il) : 0;
        kv += c->place[il] != PLACE_HOST ? x->kv_bytes[il] : 0;
    }
    plan_format_size(x->dev_act_bytes, a, sizeof a);
    plan_format_size(lay, l, sizeof l);
    plan_format_size(kv, k, sizeof k);
    plan_format_size(c->slot_bytes, s, sizeof s);
    plan_format_size(x->lm_dev_bytes, h, sizeof h);
    int n = snprintf(buf, cap, "activations %s, %u layer%s resident %s, KV %s", a,
                     c->n_resident, c->n_resident == 1 ? "" : "s", l, k);
    if (n > 0 && (size_t)n < cap && c->n_streamed)
        n += snprintf(buf + n, cap - (size_t)n, ", ring %u x %s", PLAN_RING_SLOTS, s);
    if (n > 0 && (size_t)n < cap && c->lm == PLACE_RESIDENT)
        snprintf(buf + n, cap - (size_t)n, ", LM head + logits %s", h);
}

sw_status plan_explain_failure(const plan_ctx *x, const search_result *res) {
    msg m;
    char need[32], budget[32], miss[32], what[200];
    bool dev_short = x->b->has_device && res->host_ok_any;
    uint64_t need_b = dev_short ? res->min_dev_bytes : res->min_host_bytes;
    uint64_t budget_b = dev_short ? x->b->device_bytes : x->b->host_bytes;
    memset(&m, 0, sizeof m);
    plan_format_size(need_b, need, sizeof need);
    plan_format_size(budget_b, budget, sizeof budget);
    plan_format_size(need_b - budget_b, miss, sizeof miss);
    if (dev_short) {
        describe_min(x, &res->min_dev, what, sizeof what);
        put(&m, "device memory (%s) is short by %llu bytes (%s): the smallest plan for %s at "
            "context %u needs %s (%s) but the budget is %s", x->b->device_name,
            (unsigned long long)(need_b - budget_b), miss, x->m->name, x->w.n_ctx, need,
            what, budget);
    } else {
        put(&m, "host memory is short by %llu bytes (%s): %s at context %u needs %s of host "
            "memory (activations and the KV of host layers%s) but the budget is %s",
            (unsigned long long)(need_b - budget_b), miss, x->m->name, x->w.n_ctx, need,
            x->m->convert != PLAN_CONVERT_NONE ? ", and the weights converted at load" : "",
            budget);
    }
    put(&m, "\nchanges that fit:");
    suggest_levers(&m, x);
    suggest_model(&m, x);
    if (dev_short)
        suggest_cpu(&m, x);
    if (m.n_items == 0)
        put(&m, " none of context, batch, chunk, KV type, weights or a smaller model alone; "
            "raise the budget");
    return sw_errorf(dev_short ? SW_ERR_OOM_DEVICE : SW_ERR_OOM_HOST, "%s", m.text);
}

/* One "better" candidate: a changed workload or model. */
static void consider_better(const plan_ctx *x, const plan_choice *chosen, const char *change,
                            const plan_model *m, const plan_workload *w, double *best_gain,
                            char *out, size_t cap) {
    trial t;
    char frees[32];
    if (!try_plan(m, x->b, x->r, w, &t))
        return;
    double now = x->w.n_seq / chosen->pass_s[PASS_DECODE];
    double then = w->n_seq / t.best.pass_s[PASS_DECODE];
    if (then < now * 1.05 || then / now <= *best_gain)
        return;
    *best_gain = then / now;
    uint64_t before = plan_all_resident_bytes(x);
    plan_format_size(before > t.all_resident_bytes ? before - t.all_resident_bytes : 0, frees,
                     sizeof frees);
    char placed[48];
    if (t.best.n_streamed)
        snprintf(placed, sizeof placed, "%u resident, %u streamed", t.best.n_resident,
                 t.best.n_streamed);
    else
        snprintf(placed, sizeof placed, "%u resident", t.best.n_resident);
    snprintf(out, cap, "%s frees %s -> %s -> decode %.1f tok/s (now %.1f)", change, frees,
             placed, then, now);
}

void plan_find_better(const plan_ctx *x, const plan_choice *chosen, char *out, size_t cap) {
    double gain = 0;
    char change[48];
    out[0] = '\0';
    if (!x->b->has_device || (chosen->n_resident == x->n_layer && chosen->lm == PLACE_RESIDENT))
        return;
    plan_workload w = x->w;
    if (x->w.kv_type == PLAN_KV_F32) {
        w.kv_type = PLAN_KV_F16;
        consider_better(x, chosen, "--kv-type f16", x->m, &w, &gain, out, cap);
    }
    w = x->w;
    if (x->w.n_ctx >= 2) {
        w.n_ctx = x->w.n_ctx / 2;
        w.n_batch = w.n_batch < w.n_ctx ? w.n_batch : w.n_ctx;
        snprintf(change, sizeof change, "-c %u", w.n_ctx);
        consider_better(x, chosen, change, x->m, &w, &gain, out, cap);
    }
    w = x->w;
    if (x->w.n_batch >= 2) {
        w.n_batch = x->w.n_batch / 2;
        snprintf(change, sizeof change, "-b %u", w.n_batch);
        consider_better(x, chosen, change, x->m, &w, &gain, out, cap);
    }
    plan_model pm;
    if (wide_weights(x->m) && plan_model_for_type(&x->m->config, "q8_0", &pm) == SW_OK) {
        snprintf(pm.name, sizeof pm.name, "%s", x->m->name);
        consider_better(x, chosen, "--weights q8_0", &pm, &x->w, &gain, out, cap);
    }
}
