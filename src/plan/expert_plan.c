/*
 * expert_plan.c — the expert cache's size, layout and cost model
 * (expert_plan.h). Pure: reads the plan, writes the plan.
 */
#include <math.h>
#include <string.h>

#include "plan/expert_plan.h"
#include "plan/expert_sim.h"
#include "plan/plan_api.h"
#include "util/error.h"

bool expert_plan_cached(const plan *p, uint32_t il) {
    return p->model.config.n_expert != 0 && p->experts_host[il] &&
           p->layer_place[il] != PLACE_HOST;
}

/* One expert's bytes, rounded up: its share of the layer's experts. */
static uint64_t expert_bytes(const plan *p, uint32_t il) {
    const uint64_t n = p->model.config.n_expert;
    return (p->model.layer_expert_bytes[il] + n - 1) / n;
}

void expert_plan_layout(const plan *p, uint32_t slots, expert_layout *out) {
    const model_config *c = &p->model.config;
    const uint64_t rows = (uint64_t)p->n_tok * c->n_expert_used;
    memset(out, 0, sizeof *out);
    out->slot_of = 0;
    out->y_row = plan_padded((uint64_t)c->n_expert * 4);
    out->y = out->y_row + plan_padded(rows * 4);
    out->total = out->y + plan_padded(rows * c->n_embd * 4);
    for (uint32_t il = 0; slots && il < c->n_layer; il++) {
        if (!expert_plan_cached(p, il))
            continue;
        /* gate/up then down slices, each part padded: at most this */
        out->layer[il] = out->total;
        out->layer_bytes[il] = plan_padded(slots * expert_bytes(p, il)) + 2 * PLAN_TENSOR_ALIGN;
        out->total += out->layer_bytes[il];
    }
}

uint64_t expert_plan_host_bytes(const plan *p) {
    const model_config *c = &p->model.config;
    const uint64_t rows = (uint64_t)p->n_tok * c->n_expert_used;
    return rows * (c->n_embd * 4 + 12) + (uint64_t)c->n_expert * 20 +   /* y, y_row, ids, guess */
           (uint64_t)c->n_layer * c->n_expert;                           /* prefetch marks */
}

static uint32_t n_cached(const plan *p) {
    uint32_t n = 0;
    for (uint32_t il = 0; il < p->model.config.n_layer; il++)
        n += expert_plan_cached(p, il);
    return n;
}

static void note(plan *p, const char *text) {
    if (p->n_notes < PLAN_MAX_NOTES)
        snprintf(p->notes[p->n_notes++], sizeof p->notes[0], "%.*s",
                 (int)sizeof p->notes[0] - 1, text);
}

/* The most slots (up to n_expert) whose cache fits in `room`; 0: none. */
static uint32_t fit_slots(const plan *p, uint64_t room) {
    expert_layout l;
    for (uint32_t s = p->model.config.n_expert; s > 0; s--) {
        expert_plan_layout(p, s, &l);
        if (l.total <= room)
            return s;
    }
    return 0;
}

static sw_status parse(const sw_expert_options *o, plan *p) {
    expert_policy pol = EXPERT_LRU;
    expert_copy_mode copy = EXPERT_COPY_AUTO;
    if (o->policy != NULL)
        SW_TRY(expert_policy_parse(o->policy, &pol));
    if (o->copy != NULL)
        SW_TRY(expert_copy_parse(o->copy, &copy));
    if (o->slots < -1)
        return sw_errorf(SW_ERR_ARG, "--expert-cache %d: a number of slots, or auto", o->slots);
    p->expert_policy = (uint8_t)pol;
    p->expert_copy = (uint8_t)copy;
    p->expert_prefetch = o->prefetch != 0;
    if (!(o->hit_rate >= 0 && o->hit_rate <= 1))
        return sw_errorf(SW_ERR_ARG, "--expert-hit-rate %g: a share from 0 to 1 (or 0%% to "
                         "100%%)", o->hit_rate);
    return SW_OK;
}

static double max2(double a, double b) { return a > b ? a : b; }
static double min2(double a, double b) { return a < b ? a : b; }

static double flops_per_token(const plan *p) {
    const model_config *c = &p->model.config;
    return 6.0 * c->n_ff_exp * c->n_embd;   /* gate, up (2 ff rows) and down */
}

/* Seconds the device takes for one expert's m tokens from its slot. */
static double device_s(const plan *p, uint32_t il, double m) {
    const plan_rates *r = &p->rates;
    return max2((double)expert_bytes(p, il) / r->device_mem_Bps,
                m * flops_per_token(p) / r->device_flops);
}

uint64_t expert_plan_stage_bytes(const plan *p) {
    uint64_t most = 0;
    for (uint32_t il = 0; il < p->model.config.n_layer; il++)
        if (expert_plan_cached(p, il) && expert_bytes(p, il) > most)
            most = expert_bytes(p, il);
    /* each buffer holds one expert's two slices, each padded */
    return most ? EXPERT_STAGE_BUFFERS * (plan_padded(most) + 2 * PLAN_TENSOR_ALIGN) : 0;
}

/* The pinned staging the copies may go through (expert_plan.h), in the
 * pinned tier; the engine leaves it unallocated when the device reads
 * the mapping itself. */
static sw_status staging(plan *p) {
    const uint64_t bytes = expert_plan_stage_bytes(p);
    if (bytes == 0 || (expert_copy_mode)p->expert_copy == EXPERT_COPY_NEVER)
        return SW_OK;
    if (p->n_buffers + 1 > PLAN_MAX_BUFFERS)
        return sw_errorf(SW_ERR_ARG, "plan: too many buffers for an expert cache");
    p->buffers[p->n_buffers++] = (plan_buffer){.kind = BUF_EXPERT_CACHE,
                                               .purpose = "expert copy staging",
                                               .tier = TIER_PINNED, .bytes = bytes,
                                               .layer = -1};
    p->tier_bytes[TIER_PINNED] += bytes;
    return SW_OK;
}

bool expert_plan_fills(const plan *p, uint32_t il) {
    switch ((expert_copy_mode)p->expert_copy) {
    case EXPERT_COPY_ALWAYS: return true;
    case EXPERT_COPY_NEVER: return false;
    default: return p->expert_prefetch || expert_plan_copy_threshold(p, il) != UINT32_MAX;
    }
}

/* The cache in the predictions (expert_plan.h): each cached layer's
 * experts, which the cost model put on the host (expert_host_s), become
 * hit_rate of them read from slots by the device and the rest missed —
 * copied or computed where they live, as the engine decides per expert. Evenly routed
 * tokens (the cost model's assumption): a pass of n tokens needs
 * n_expert (1 - (1 - k/n_expert)^n) distinct experts, n k / that tokens
 * each; a step's hits and copies share the layer's slots. Prefetch is
 * not modelled (its guesses cost link time too). */
void expert_plan_predict(plan *p) {
    const model_config *c = &p->model.config;
    const double n_e = c->n_expert, k = c->n_expert_used, slots = p->expert_slots;
    double *tps[2] = {&p->decode_tokens_per_s, &p->prefill_tokens_per_s};
    const double from[2] = {p->decode_tokens_per_s_uncached, p->prefill_tokens_per_s_uncached};
    for (int ps = 0; ps < 2; ps++) {
        const double n = p->pass_tokens[ps];
        *tps[ps] = from[ps];
        if (!(*tps[ps] > 0) || !(n > 0) || n_e == 0)
            continue;
        const double need = n_e * (1 - pow(1 - k / n_e, n)), m = n * k / need;
        const uint32_t m_whole = (uint32_t)ceil(m);
        double pass_s = n / *tps[ps], saved = 0;
        for (uint32_t il = 0; il < c->n_layer; il++) {
            if (!expert_plan_cached(p, il) || !(p->expert_host_s[ps][il] > 0))
                continue;
            /* a step holds at most `slots` experts: hits and this step's
             * copies share them, the rest of a wide chunk's stay on the host */
            const double host1 = p->expert_host_s[ps][il] / need;
            const bool fills = expert_plan_fills(p, il);
            const double hits = fills ? min2(p->expert_hit_rate * need, slots) : 0;
            const double copied = fills && expert_plan_copy_wins(p, il, m_whole)
                                      ? min2(need - hits, slots - hits) : 0;
            const double with = hits * device_s(p, il, m) +
                                copied * expert_plan_copy_s(p, il, m_whole) +
                                (need - hits - copied) * host1;
            saved += p->expert_host_s[ps][il] - with;
        }
        /* a pass never drops below what its other parts take */
        pass_s = pass_s - saved > pass_s * 1e-3 ? pass_s - saved : pass_s * 1e-3;
        *tps[ps] = n / pass_s;
    }
}

sw_status plan_expert_cache(plan *p, const sw_expert_options *o, const char *no_cache) {
    char text[256], need[24], room_s[24];
    if (o == NULL || o->slots == 0)
        return SW_OK;
    SW_TRY(parse(o, p));
    if (no_cache != NULL)
        return sw_errorf(SW_ERR_ARG, "--expert-cache: %s; drop it (-ncmoe alone computes the "
                         "experts on the host)", no_cache);
    const uint32_t n_layers = n_cached(p);
    if (p->model.config.n_expert == 0 || n_layers == 0) {
        note(p, p->model.config.n_expert == 0
                    ? "--expert-cache ignored: the model has no experts"
                    : "--expert-cache: no device layer keeps its experts on the host "
                      "(-ncmoe N or --place experts:...=host), so nothing is cached");
        return SW_OK;
    }
    const uint64_t used = p->tier_bytes[TIER_DEVICE];
    const uint64_t room = p->budget.device_bytes > used ? p->budget.device_bytes - used : 0;
    uint32_t slots = o->slots < 0 ? fit_slots(p, room) : (uint32_t)o->slots;
    if (slots > p->model.config.n_expert)
        return sw_errorf(SW_ERR_ARG, "--expert-cache %u: layers have %u experts", slots,
                         p->model.config.n_expert);
    expert_layout l;
    expert_plan_layout(p, slots, &l);
    plan_format_size(room, room_s, sizeof room_s);
    if (slots == 0) {
        snprintf(text, sizeof text, "--expert-cache auto: %s left on the device, not one slot "
                 "per layer; no cache", room_s);
        note(p, text);
        return SW_OK;
    }
    plan_format_size(l.total, need, sizeof need);
    if (l.total > room)
        return sw_errorf(SW_ERR_OOM_DEVICE, "device: an expert cache of %u slots x %u layers "
                         "needs %s; the placement leaves %s of the budget (try --expert-cache "
                         "auto, or fewer slots, or -ncmoe on fewer layers)", slots, n_layers,
                         need, room_s);
    if (p->n_buffers + 3 > PLAN_MAX_BUFFERS)
        return sw_errorf(SW_ERR_ARG, "plan: too many buffers for an expert cache");
    p->buffers[p->n_buffers++] = (plan_buffer){.kind = BUF_EXPERT_CACHE, .purpose = "expert cache",
                                               .tier = TIER_DEVICE, .bytes = l.total,
                                               .layer = -1};
    p->tier_bytes[TIER_DEVICE] += l.total;
    const uint64_t host = expert_plan_host_bytes(p);
    p->buffers[p->n_buffers++] = (plan_buffer){.kind = BUF_EXPERT_CACHE,
                                               .purpose = "expert cache tables",
                                               .tier = TIER_HOST, .bytes = host, .layer = -1};
    p->tier_bytes[TIER_HOST] += host;
    p->expert_slots = slots;
    p->expert_layers = n_layers;
    p->expert_cache_bytes = l.total;
    p->expert_hit_given = o->hit_rate > 0;
    p->expert_hit_rate = o->hit_rate > 0 ? o->hit_rate : (double)slots / p->model.config.n_expert;
    SW_TRY(staging(p));
    p->decode_tokens_per_s_uncached = p->decode_tokens_per_s;
    p->prefill_tokens_per_s_uncached = p->prefill_tokens_per_s;
    expert_plan_predict(p);
    snprintf(text, sizeof text, "expert cache: %u of %u experts per layer, %u layers (%s%s); "
             "misses copied or host-computed per step (%s)%s", slots,
             p->model.config.n_expert, n_layers, need, o->slots < 0 ? ", auto" : "",
             expert_copy_name((expert_copy_mode)p->expert_copy),
             p->expert_prefetch ? "; prefetch" : "");
    note(p, text);
    return SW_OK;
}

double expert_plan_host_s(const plan *p, uint32_t il, uint32_t m) {
    const plan_rates *r = &p->rates;
    return max2((double)expert_bytes(p, il) / r->host_mem_Bps,
                m * flops_per_token(p) / r->host_flops);
}

double expert_plan_copy_s(const plan *p, uint32_t il, uint32_t m) {
    const plan_rates *r = &p->rates;
    const double bytes = (double)expert_bytes(p, il);
    /* from pinned memory: the mapping registered with the device, or
     * staged through pinned buffers (a host copy the link overlaps) */
    return max2(bytes / r->h2d_pinned_Bps, bytes / r->host_mem_Bps) + device_s(p, il, m);
}

bool expert_plan_copy_wins(const plan *p, uint32_t il, uint32_t m) {
    switch ((expert_copy_mode)p->expert_copy) {
    case EXPERT_COPY_ALWAYS: return true;
    case EXPERT_COPY_NEVER: return false;
    default: return expert_plan_copy_s(p, il, m) < expert_plan_host_s(p, il, m);
    }
}

uint32_t expert_plan_copy_threshold(const plan *p, uint32_t il) {
    for (uint32_t m = 1; m <= p->n_tok; m++)
        if (expert_plan_copy_wins(p, il, m))
            return m;
    return UINT32_MAX;
}

const char *expert_copy_name(expert_copy_mode m) {
    return m == EXPERT_COPY_ALWAYS ? "always" : m == EXPERT_COPY_NEVER ? "never" : "auto";
}

sw_status expert_copy_parse(const char *s, expert_copy_mode *out) {
    const char *names[3] = {"auto", "always", "never"};
    for (int i = 0; s != NULL && i < 3; i++)
        if (!strcmp(s, names[i])) {
            *out = (expert_copy_mode)i;
            return SW_OK;
        }
    return sw_errorf(SW_ERR_ARG, "--expert-copy '%s': auto, always or never", s ? s : "");
}

void expert_plan_print(FILE *out, const plan *p) {
    char sz[24], per[24];
    if (p->expert_slots == 0)
        return;
    uint32_t first = 0;
    while (first < p->model.config.n_layer && !expert_plan_cached(p, first))
        first++;
    expert_layout l;
    expert_plan_layout(p, p->expert_slots, &l);
    plan_format_size(p->expert_cache_bytes, sz, sizeof sz);
    plan_format_size(l.layer_bytes[first], per, sizeof per);
    fprintf(out, "%-9s cache %u of %u slots/layer x %u layers = %s (%s/layer) on the device, %s%s",
            "experts", p->expert_slots, p->model.config.n_expert, p->expert_layers, sz, per,
            expert_policy_name((expert_policy)p->expert_policy),
            p->expert_prefetch ? ", prefetch" : "");
    const uint32_t t = expert_plan_copy_threshold(p, first);
    if ((expert_copy_mode)p->expert_copy != EXPERT_COPY_AUTO)
        fprintf(out, "; misses: copy %s\n", expert_copy_name((expert_copy_mode)p->expert_copy));
    else if (t == UINT32_MAX)
        fprintf(out, "; misses computed on the host (copying never wins at these rates)\n");
    else
        fprintf(out, "; a miss is copied when >= %u tokens route to it, else computed on "
                "the host\n", t);
    if (!expert_plan_fills(p, first))
        fprintf(out, "%-9s predictions: no miss is ever copied, so the slots stay empty "
                "(--expert-copy always or --expert-prefetch on fill them)", "");
    else
        fprintf(out, "%-9s predictions take %.0f%% of needed experts to be cached (%s)", "",
                100 * p->expert_hit_rate,
                p->expert_hit_given ? "--expert-hit-rate"
                                    : "slots/experts: evenly spread routing; a real trace's "
                                      "rate from spillway bench --expert-trace is better");
    fprintf(out, "; without the cache: prefill %.0f tok/s, decode %.1f tok/s\n",
            p->prefill_tokens_per_s_uncached, p->decode_tokens_per_s_uncached);
}
