/*
 * split.c — plan_split_build(): the search over where each device's range
 * of layers ends (split.h). Each candidate range is priced by the
 * single-device search (plan.c) on its stage model, memoized, since the
 * search asks for the same range on the same device many times; the
 * chosen split's stages are then planned in full by plan_build.
 */
#include <stdlib.h>
#include <string.h>

#include "plan/expert_plan.h"
#include "plan/plan_internal.h"
#include "plan/split.h"
#include "util/error.h"

#define MEMO_CAP 8192u       /* evaluations kept; more are recomputed */
#define HOP_COPIES 2         /* device to pinned host, then host to device */

/* One device's range priced: whether a plan fits, its pass times, the
 * least host it needs, and when nothing fits the least device it needs. */
typedef struct stage_eval {
    bool used;
    uint32_t dev, first, end;
    bool fits, host_ok;
    double pass_s[2];
    uint64_t host_need;
    uint64_t min_dev;          /* least device need among host-fitting plans */
} stage_eval;

typedef struct split_search {
    const plan_model *m;
    const plan_budget *b;
    const uint64_t *dev_bytes;
    uint32_t n_dev, n_layer;
    const plan_rates *r;
    const plan_workload *w;
    const plan_pins *pins;
    bool cut_ok[PLAN_MAX_LAYERS + 1];     /* a range may end before layer i */
    uint32_t cut_lo[PLAN_MAX_DEVICES];    /* device d's range ends in [lo, hi] */
    uint32_t cut_hi[PLAN_MAX_DEVICES];    /* (the device pins of --place) */
    stage_eval *memo;                     /* MEMO_CAP entries */
    plan_model stage;                     /* scratch */
    plan_ctx ctx;                         /* scratch */
    search_result res;                    /* scratch */
    uint32_t n_evaluated;
} split_search;

/* A split's cuts and what it costs: cut[d] is where device d's range ends. */
typedef struct split_cand {
    uint32_t cut[PLAN_MAX_DEVICES];
    bool fits;
    double decode_s, prefill_max_s, stage_max_s;
    double spread;                        /* sum of squared stage prefill times */
    uint64_t short_bytes;                 /* summed device shortfall (not fitting) */
    bool host_ok;
} split_cand;

sw_status plan_stage_model(const plan_model *m, uint32_t first, uint32_t end, plan_model *out) {
    const model_config *c = &m->config;
    SW_TRY(model_config_window(c, first, end, &out->config));
    const model_config window = out->config;
    *out = *m;
    out->config = window;
    const uint32_t n = end - first;
    memset(out->layer_bytes, 0, sizeof out->layer_bytes);
    memset(out->layer_type_bytes, 0, sizeof out->layer_type_bytes);
    memset(out->layer_expert_bytes, 0, sizeof out->layer_expert_bytes);
    memset(out->layer_conv_bytes, 0, sizeof out->layer_conv_bytes);
    memcpy(out->layer_bytes, m->layer_bytes + first, n * sizeof out->layer_bytes[0]);
    memcpy(out->layer_type_bytes, m->layer_type_bytes + first, n * sizeof out->layer_type_bytes[0]);
    memcpy(out->layer_expert_bytes, m->layer_expert_bytes + first,
           n * sizeof out->layer_expert_bytes[0]);
    memcpy(out->layer_conv_bytes, m->layer_conv_bytes + first, n * sizeof out->layer_conv_bytes[0]);
    if (first > 0) { /* the embeddings are looked up before the first stage */
        if (m->tied) /* the LM head converts on its own now */
            out->output_conv_bytes = m->embd_conv_bytes;
        out->embd_bytes = out->embd_conv_bytes = 0;
        out->ple_bytes = out->ple_proj_bytes = 0;
        out->tied = false;
    }
    if (end < c->n_layer) { /* the LM head runs after the last stage */
        out->output_bytes = out->output_norm_bytes = out->output_conv_bytes = 0;
        memset(out->output_type_bytes, 0, sizeof out->output_type_bytes);
        out->tied = false;  /* output_bytes 0: no LM head, no logits (cost.c) */
    }
    snprintf(out->name, sizeof out->name, "%.32s [layers %u-%u]", m->name, first, end - 1);
    return SW_OK;
}

/* The stage's pins: the model's, renumbered; the LM head's only in the
 * last stage (the others have none: "host" costs nothing). */
static void stage_pins(const split_search *s, uint32_t first, uint32_t end, plan_pins *p) {
    memset(p, 0, sizeof *p);
    for (uint32_t il = first; il < end; il++) {
        p->layer[il - first] = s->pins->layer[il];
        p->experts[il - first] = s->pins->experts[il];
    }
    p->lm_head = end == s->n_layer ? s->pins->lm_head : PLACE_HOST;
}

/* The budget device d plans against. */
static plan_budget stage_budget(const split_search *s, uint32_t d, uint64_t host_bytes) {
    plan_budget b = *s->b;
    b.device_bytes = b.device_total_bytes = s->dev_bytes[d];
    if (d != 0) { /* a drafter sits beside the first layers only */
        b.drafter_bytes = 0;
        b.drafter[0] = '\0';
    }
    b.host_bytes = host_bytes;
    snprintf(b.device_name, sizeof b.device_name, "%.12s:%u", s->b->backend, d);
    return b;
}

static stage_eval *evaluate(split_search *s, uint32_t d, uint32_t first, uint32_t end) {
    const uint32_t h = ((d * 977u + first) * 1031u + end) % MEMO_CAP;
    stage_eval *e = NULL;
    for (uint32_t k = 0; k < 8 && e == NULL; k++) { /* a short probe, then overwrite */
        stage_eval *t = &s->memo[(h + k) % MEMO_CAP];
        if (t->used && t->dev == d && t->first == first && t->end == end)
            return t;
        if (!t->used)
            e = t;
    }
    if (e == NULL)
        e = &s->memo[h];
    memset(e, 0, sizeof *e);
    e->used = true;
    e->dev = d, e->first = first, e->end = end;
    s->n_evaluated++;
    plan_pins pins;
    if (plan_stage_model(s->m, first, end, &s->stage) != SW_OK)
        return e; /* a cut through a KV share: never fits */
    stage_pins(s, first, end, &pins);
    const plan_budget b = stage_budget(s, d, s->b->host_bytes);
    plan_ctx_init(&s->ctx, &s->stage, &b, s->r, s->w);
    plan_search(&s->ctx, &pins, &s->res);
    e->host_ok = s->res.host_ok_any;
    e->min_dev = s->res.min_dev_bytes;
    if ((e->fits = s->res.found)) {
        e->pass_s[PASS_DECODE] = s->res.best.pass_s[PASS_DECODE];
        e->pass_s[PASS_PREFILL] = s->res.best.pass_s[PASS_PREFILL];
        e->host_need = s->res.best.host_need_bytes;
    }
    return e;
}

/* Whether device d's range may end before layer `cut`. */
static bool cut_allowed(const split_search *s, uint32_t d, uint32_t cut) {
    return s->cut_ok[cut] && cut >= s->cut_lo[d] && cut <= s->cut_hi[d];
}

/* The device pins of --place as bounds on each cut: device d's range ends
 * after every layer pinned to devices up to d and before any pinned to a
 * later one. Errors: SW_ERR_ARG for pins out of order or past n_dev. */
static sw_status pin_bounds(split_search *s) {
    for (uint32_t d = 0; d + 1 < s->n_dev; d++) { /* each device one layer at least */
        s->cut_lo[d] = d + 1;
        s->cut_hi[d] = s->n_layer - (s->n_dev - 1 - d);
    }
    uint32_t last = 0; /* 1 + the device of the last pinned layer so far */
    for (uint32_t il = 0; il < s->n_layer; il++) {
        const uint32_t p = s->pins->device[il];
        if (p == 0)
            continue;
        if (p > s->n_dev)
            return sw_errorf(SW_ERR_ARG, "--place pins layer %u to dev%u, but the split has %u "
                             "devices (dev0-dev%u)", il, p - 1, s->n_dev, s->n_dev - 1);
        if (p < last)
            return sw_errorf(SW_ERR_ARG, "--place pins layer %u to dev%u after a layer on "
                             "dev%u: each device holds one contiguous range, in order", il, p - 1,
                             last - 1);
        last = p;
        for (uint32_t d = 0; d + 1 < s->n_dev; d++) {
            if (d >= p - 1 && il + 1 > s->cut_lo[d]) /* on dev p-1 <= d: before cut d */
                s->cut_lo[d] = il + 1;
            if (d < p - 1 && il < s->cut_hi[d])      /* on a later device: after cut d */
                s->cut_hi[d] = il;
        }
    }
    for (uint32_t d = 0; d + 1 < s->n_dev; d++)
        if (s->cut_lo[d] > s->cut_hi[d])
            return sw_errorf(SW_ERR_ARG, "--place's device pins cannot hold over %u devices: "
                             "each device keeps at least one layer, dev0's range first "
                             "(the cut after device %u has no room)", s->n_dev, d);
    return SW_OK;
}

/* One hop's bytes for a pass of n_tok tokens: the residual stream, and
 * Gemma 4's per-layer inputs for the layers after it (counted for every
 * layer: the most any hop carries). */
static uint64_t hop_bytes(const plan_model *m, uint32_t n_tok) {
    const model_config *c = &m->config;
    return (uint64_t)n_tok * ((uint64_t)c->n_embd + (uint64_t)c->n_embd_per_layer * c->n_layer) *
           sizeof(float);
}

static double hop_seconds(const plan_rates *r, uint64_t bytes) {
    return HOP_COPIES * ((double)bytes / r->h2d_pinned_Bps + r->device_op_s);
}

/* Prices the split in c->cut. */
static void price(split_search *s, split_cand *c) {
    c->fits = c->host_ok = true;
    c->decode_s = c->prefill_max_s = c->stage_max_s = c->spread = 0;
    c->short_bytes = 0;
    uint64_t host = 0;
    for (uint32_t d = 0, first = 0; d < s->n_dev; first = c->cut[d++]) {
        const stage_eval *e = evaluate(s, d, first, c->cut[d]);
        if (!e->host_ok) {
            c->fits = c->host_ok = false;
            c->short_bytes = UINT64_MAX;
            continue;
        }
        if (!e->fits) {
            c->fits = false;
            if (c->short_bytes != UINT64_MAX)
                c->short_bytes += e->min_dev > s->dev_bytes[d] ? e->min_dev - s->dev_bytes[d] : 0;
            continue;
        }
        host += e->host_need;
        c->decode_s += e->pass_s[PASS_DECODE];
        c->spread += e->pass_s[PASS_PREFILL] * e->pass_s[PASS_PREFILL];
        if (e->pass_s[PASS_PREFILL] > c->prefill_max_s)
            c->prefill_max_s = e->pass_s[PASS_PREFILL];
        if (e->pass_s[PASS_DECODE] > c->stage_max_s)
            c->stage_max_s = e->pass_s[PASS_DECODE];
    }
    if (c->fits && host > s->b->host_bytes)
        c->fits = c->host_ok = false;
    c->decode_s += (s->n_dev - 1) * hop_seconds(s->r, hop_bytes(s->m, s->w->n_seq));
}

/* Whether a beats b: fitting, decode time, pipelined prefill, balance;
 * among splits that do not fit, the least device shortfall. */
static bool cand_better(const split_cand *a, const split_cand *b) {
    if (a->fits != b->fits)
        return a->fits;
    if (!a->fits)
        return a->short_bytes < b->short_bytes;
    const double tol = 1e-12;
    if (a->decode_s < b->decode_s * (1 - tol) || a->decode_s > b->decode_s * (1 + tol))
        return a->decode_s < b->decode_s;
    if (a->prefill_max_s != b->prefill_max_s)
        return a->prefill_max_s < b->prefill_max_s;
    if (a->stage_max_s != b->stage_max_s)
        return a->stage_max_s < b->stage_max_s;
    return a->spread < b->spread; /* the stages off the critical path as even as they go */
}

/* Cuts giving each device a share of the layer bytes in proportion to its
 * budget (on allowed cut points, each range non-empty). */
static void proportional(const split_search *s, split_cand *c) {
    double total = 0, budget = 0, acc = 0, want = 0;
    for (uint32_t il = 0; il < s->n_layer; il++)
        total += (double)s->m->layer_bytes[il];
    for (uint32_t d = 0; d < s->n_dev; d++)
        budget += (double)s->dev_bytes[d];
    uint32_t cut = 0, prev = 0;
    for (uint32_t d = 0; d + 1 < s->n_dev; d++) {
        want += total * (double)s->dev_bytes[d] / budget;
        uint32_t lo = prev + 1, hi = s->n_layer - (s->n_dev - 1 - d);
        lo = lo > s->cut_lo[d] ? lo : s->cut_lo[d];
        hi = hi < s->cut_hi[d] ? hi : s->cut_hi[d];
        while (cut < lo)
            acc += (double)s->m->layer_bytes[cut++];
        while (cut < hi && (acc < want || !s->cut_ok[cut]))
            acc += (double)s->m->layer_bytes[cut++];
        c->cut[d] = prev = cut;
    }
    c->cut[s->n_dev - 1] = s->n_layer;
}

/* Moves each cut between its neighbours in halving steps while that helps. */
static void refine(split_search *s, split_cand *best) {
    price(s, best);
    for (uint32_t step = s->n_layer / 2 ? s->n_layer / 2 : 1;; step /= 2) {
        bool moved = true;
        while (moved) {
            moved = false;
            for (uint32_t d = 0; d + 1 < s->n_dev; d++) {
                const uint32_t lo = d ? best->cut[d - 1] : 0, hi = best->cut[d + 1];
                for (int dir = -1; dir <= 1; dir += 2) {
                    split_cand t = *best;
                    const int64_t to = (int64_t)best->cut[d] + dir * (int64_t)step;
                    if (to <= (int64_t)lo || to >= (int64_t)hi || !cut_allowed(s, d, (uint32_t)to))
                        continue;
                    t.cut[d] = (uint32_t)to;
                    price(s, &t);
                    if (cand_better(&t, best)) {
                        *best = t;
                        moved = true;
                    }
                }
            }
        }
        if (step == 1)
            break;
    }
}

/* Two devices: every allowed cut. Returns whether there was one. */
static bool every_cut(split_search *s, split_cand *best) {
    bool any = false;
    for (uint32_t cut = 1; cut < s->n_layer; cut++) {
        if (!cut_allowed(s, 0, cut))
            continue;
        split_cand t = {.cut = {cut, s->n_layer}};
        price(s, &t);
        if (!any || cand_better(&t, best))
            *best = t;
        any = true;
    }
    return any;
}

/* Whether every cut of c is allowed (the proportional start may not be). */
static bool cuts_allowed(const split_search *s, const split_cand *c) {
    for (uint32_t d = 0; d + 1 < s->n_dev; d++)
        if (!cut_allowed(s, d, c->cut[d]))
            return false;
    return true;
}

static sw_status explain(split_search *s, const split_cand *c) {
    char msg[1024], a[32], b[32];
    size_t n = 0;
    if (!c->host_ok) {
        plan_format_size(s->b->host_bytes, a, sizeof a);
        return sw_errorf(SW_ERR_OOM_HOST, "host memory is short: no split of %s's %u layers "
                         "over %u devices fits the host budget of %s, which every device's "
                         "activations, host layers and KV share; raise --host-mem or plan "
                         "a shorter context", s->m->name, s->n_layer, s->n_dev, a);
    }
    n += (size_t)snprintf(msg + n, sizeof msg - n, "no split of %s's %u layers over %u "
                          "devices fits; the closest:", s->m->name, s->n_layer, s->n_dev);
    char fit[256] = "";
    size_t nf = 0;
    for (uint32_t d = 0, first = 0; d < s->n_dev; first = c->cut[d++]) {
        const stage_eval *e = evaluate(s, d, first, c->cut[d]);
        uint64_t need = e->fits ? s->dev_bytes[d] : e->min_dev;
        if (!e->fits && n < sizeof msg) {
            plan_format_size(need - s->dev_bytes[d], a, sizeof a);
            plan_format_size(need, b, sizeof b);
            n += (size_t)snprintf(msg + n, sizeof msg - n, " device %u: %s short for layers "
                                  "%u-%u (their smallest plan needs %s of it);", d, a, first,
                                  c->cut[d] - 1, b);
        }
        /* a size that fits, rounded up to a tenth of a GiB (under 1 GiB to
         * a MiB, under 1 MiB to a KiB: a tenth of a GiB could be ten times
         * the need) */
        const uint64_t tenth = (1ull << 30) / 10, mib = 1ull << 20, kib = 1024;
        if (nf < sizeof fit && need < mib)
            nf += (size_t)snprintf(fit + nf, sizeof fit - nf, "%s%lluK", d ? "," : "",
                                   (unsigned long long)((need + kib - 1) / kib));
        else if (nf < sizeof fit && need < (1ull << 30))
            nf += (size_t)snprintf(fit + nf, sizeof fit - nf, "%s%lluM", d ? "," : "",
                                   (unsigned long long)((need + mib - 1) / mib));
        else if (nf < sizeof fit)
            nf += (size_t)snprintf(fit + nf, sizeof fit - nf, "%s%.1fG", d ? "," : "",
                                   (double)((need + tenth - 1) / tenth) / 10);
    }
    if (n < sizeof msg)
        snprintf(msg + n, sizeof msg - n, " changes that fit: --device-mem %s (this split), or "
                 "more devices", fit);
    return sw_errorf(SW_ERR_OOM_DEVICE, "%s", msg);
}

/* Plans the chosen split's stages in full; the host budget is handed out
 * so that the stages' host memory sums within it. */
static sw_status fill(split_search *s, const split_cand *c, plan_split *out) {
    uint64_t need = 0;
    for (uint32_t d = 0, first = 0; d < s->n_dev; first = c->cut[d++])
        need += evaluate(s, d, first, c->cut[d])->host_need;
    uint64_t spare = s->b->host_bytes - need;
    for (uint32_t d = 0, first = 0; d < s->n_dev; first = c->cut[d++]) {
        const uint64_t mine = evaluate(s, d, first, c->cut[d])->host_need;
        const plan_budget b = stage_budget(s, d, mine + spare);
        plan_pins pins;
        stage_pins(s, first, c->cut[d], &pins);
        SW_TRY(plan_stage_model(s->m, first, c->cut[d], &s->stage));
        SW_TRY(plan_build(&s->stage, &b, s->r, s->w, &pins, &out->stage[d]));
        const plan *p = &out->stage[d];
        const uint64_t used = p->tier_bytes[TIER_HOST] + p->tier_bytes[TIER_PINNED];
        spare -= used > mine ? (used - mine < spare ? used - mine : spare) : 0;
        out->device[d] = d;
        out->first[d] = first;
        out->end[d] = c->cut[d];
        out->host_planned_bytes += p->tier_bytes[TIER_HOST];
        out->pinned_planned_bytes += p->tier_bytes[TIER_PINNED];
    }
    return SW_OK;
}

/* Predictions from the stage plans: decode one stage after another plus
 * the hops; prefill chunks pipelined (the slowest stage or hop) and alone. */
static void predict(const plan_model *m, const plan_rates *r, const plan_workload *w,
                    plan_split *out) {
    const uint32_t n_seq = w->n_seq;
    const uint32_t n_chunk = w->n_batch < w->n_ctx ? w->n_batch : w->n_ctx;
    double dec = 0, pre = 0, pre_max = 0, pre_s[PLAN_MAX_DEVICES];
    for (int p = 0; p < 2; p++) {
        out->hop_bytes[p] = hop_bytes(m, p == PASS_DECODE ? n_seq : n_chunk);
        out->hop_s[p] = hop_seconds(r, out->hop_bytes[p]);
    }
    for (uint32_t d = 0; d < out->n_dev; d++) {
        const plan *p = &out->stage[d];
        dec += n_seq / p->decode_tokens_per_s;
        pre_s[d] = n_chunk / p->prefill_tokens_per_s;
        pre += pre_s[d];
        pre_max = pre_s[d] > pre_max ? pre_s[d] : pre_max;
    }
    const double hops = (double)(out->n_dev - 1);
    out->decode_tokens_per_s = n_seq / (dec + hops * out->hop_s[PASS_DECODE]);
    out->prefill_serial_tokens_per_s = n_chunk / (pre + hops * out->hop_s[PASS_PREFILL]);
    const double slowest = pre_max > out->hop_s[PASS_PREFILL] ? pre_max
                                                               : out->hop_s[PASS_PREFILL];
    out->prefill_tokens_per_s = n_chunk / slowest;
    for (uint32_t d = 0; d < out->n_dev; d++)
        out->busy_share[d] = pre_s[d] / slowest;
}

sw_status plan_split_expert_cache(plan_split *s, const plan_model *m, const plan_rates *r,
                                  const plan_workload *w, const sw_expert_options *o,
                                  const char *no_cache) {
    if (o == NULL || o->slots == 0)
        return SW_OK;
    for (uint32_t d = 0; d < s->n_dev; d++) {
        plan *p = &s->stage[d];
        const uint64_t host = p->tier_bytes[TIER_HOST];
        const sw_status st = plan_expert_cache(p, o, no_cache);
        if (st != SW_OK) {
            char msg[512]; /* sw_last_error() is the buffer sw_errorf writes */
            snprintf(msg, sizeof msg, "%s", sw_last_error());
            return sw_errorf(st, "device %u (layers %u-%u): %s", d, s->first[d], s->end[d] - 1,
                             msg);
        }
        s->host_planned_bytes += p->tier_bytes[TIER_HOST] - host;
    }
    predict(m, r, w, s); /* the stages' speeds with their caches */
    return SW_OK;
}

/* The whole model on the largest budget alone, for comparison. */
static void single(split_search *s, plan_split *out) {
    uint32_t big = 0;
    for (uint32_t d = 1; d < s->n_dev; d++)
        big = s->dev_bytes[d] > s->dev_bytes[big] ? d : big;
    const plan_budget b = stage_budget(s, big, s->b->host_bytes);
    plan_ctx_init(&s->ctx, s->m, &b, s->r, s->w);
    plan_search(&s->ctx, s->pins, &s->res);
    out->single_fits = s->res.found;
    out->single_decode_tokens_per_s =
        s->res.found ? s->w->n_seq / s->res.best.pass_s[PASS_DECODE] : 0;
}

static sw_status check(const plan_model *m, const plan_budget *b, const uint64_t *dev_bytes,
                       uint32_t n_dev, const plan_rates *r, const plan_workload *w,
                       plan_split *out) {
    if (m == NULL || b == NULL || dev_bytes == NULL || r == NULL || w == NULL || out == NULL)
        return sw_errorf(SW_ERR_ARG, "plan_split_build: NULL argument");
    if (n_dev < 2 || n_dev > PLAN_MAX_DEVICES)
        return sw_errorf(SW_ERR_ARG, "a split is over 2 to %d devices, not %u", PLAN_MAX_DEVICES,
                         n_dev);
    if (!b->has_device)
        return sw_errorf(SW_ERR_ARG, "several device budgets need a backend with devices "
                         "(--backend sim, cuda or pjrt); the %s backend has none", b->backend);
    if (m->config.n_layer < n_dev)
        return sw_errorf(SW_ERR_ARG, "%s has %u layers: too few to give each of %u devices "
                         "one", m->name, m->config.n_layer, n_dev);
    for (uint32_t d = 0; d < n_dev; d++)
        if (dev_bytes[d] == 0)
            return sw_errorf(SW_ERR_ARG, "device %u has a budget of 0 bytes", d);
    return SW_OK;
}

sw_status plan_split_build(const plan_model *model, const plan_budget *budget,
                           const uint64_t *device_bytes, uint32_t n_dev,
                           const plan_rates *rates, const plan_workload *work,
                           const plan_pins *pins, plan_split *out) {
    static const plan_pins no_pins;
    sw_status st = check(model, budget, device_bytes, n_dev, rates, work, out);
    if (st != SW_OK)
        return st;
    split_search *s = calloc(1, sizeof *s);
    if (s == NULL || (s->memo = calloc(MEMO_CAP, sizeof *s->memo)) == NULL) {
        st = sw_errorf(SW_ERR_OOM_HOST, "out of host memory planning a split");
        goto done;
    }
    memset(out, 0, sizeof *out);
    s->m = model, s->b = budget, s->dev_bytes = device_bytes, s->n_dev = n_dev;
    s->n_layer = model->config.n_layer, s->r = rates, s->w = work;
    s->pins = pins ? pins : &no_pins;
    for (uint32_t cut = 1; cut < s->n_layer; cut++) {
        s->cut_ok[cut] = true;
        for (uint32_t il = cut; il < s->n_layer && s->cut_ok[cut]; il++)
            s->cut_ok[cut] = model_layer_kv_owner(&model->config, il) >= cut;
    }
    if ((st = pin_bounds(s)) != SW_OK)
        goto done;
    split_cand best;
    memset(&best, 0, sizeof best);
    bool found = true;
    if (n_dev == 2) {
        found = every_cut(s, &best);
    } else {
        proportional(s, &best);
        refine(s, &best);
        found = cuts_allowed(s, &best);
    }
    if (!found) {
        st = sw_errorf(SW_ERR_ARG, "no split of %s's %u layers over %u devices keeps every "
                       "KV-shared layer with its cache and every --place device pin: move "
                       "the pins", model->name, s->n_layer, n_dev);
        goto done;
    }
    if (!best.fits) {
        st = explain(s, &best);
        goto done;
    }
    snprintf(out->model, sizeof out->model, "%s", model->name);
    out->n_dev = n_dev;
    out->host_bytes = budget->host_bytes;
    if ((st = fill(s, &best, out)) != SW_OK)
        goto done;
    predict(s->m, s->r, s->w, out);
    out->decode_parts = out->prefill_parts = 1; /* plan_split_micro may cut passes */
    single(s, out);
    out->n_evaluated = s->n_evaluated;
done:
    if (s != NULL)
        free(s->memo);
    free(s);
    return st;
}
