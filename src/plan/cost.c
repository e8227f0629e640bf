/*
 * cost.c — byte accounting and speed prediction for a placement.
 *
 * Bytes (exact; each device buffer padded to PLAN_TENSOR_ALIGN, as device
 * allocators hand out aligned blocks): device = activations + [LM head +
 * final norm + logits] + resident layers + ring slots (K x largest
 * streamed layer) + KV of every layer computed on the device (resident or
 * streamed: a layer's KV lives on the side that computes it). Host = host
 * activations + the cpu kernels' scratch + KV of host layers + pinned copies of streamed layers (when
 * they fit) + weights converted at load (--weights: the embedding, host
 * layers and unpinned streamed layers; resident layers pass through a
 * one-layer staging buffer) + the part of the file mapping read every
 * token that the host budget can cache; the rest of that working set is
 * re-read from disk each token ("disk spill").
 *
 * Time (a model, not a measurement; rates from doctor or the defaults):
 *   a layer on a side costs max(bytes read / rate, flops / flop rate) per
 *   pass; bytes read = its weights (of its experts, those a pass's tokens
 *   are routed to: read_bytes) + the KV it attends over (half the
 *   context filled), the weights of each type at the rate doctor measured
 *   for that side's decode kernels over it (the memory rate when
 *   unmeasured), the KV at the memory rate; flops = tokens x (2 x matrix
 *   params, experts: those a token runs + 4 x heads x head_dim x visible
 *   keys). On the device a layer
 *   costs at least its ops x the measured per-op launch and dispatch time:
 *   small layers are bound by issuing their kernels. A decode pass is n_seq tokens, a prefill
 *   pass n_batch tokens (the LM head runs for the last token only).
 *   A streamed layer also costs bytes / link rate per pass, copied by a
 *   prefetcher into K ring slots in order, while compute proceeds; the pass
 *   time is simulated over a few passes (max-plus recurrences below), so a
 *   link-bound pass costs exactly (sum of streamed bytes) / link rate, and
 *   copies hide behind host and resident compute only as far as K slots
 *   allow. Disk spill adds bytes / disk rate to each pass. Crossing the
 *   residual stream between sides (kilobytes) is ignored.
 */
#include <math.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "model/act.h"
#include "model/kv.h"
#include "model/weights.h"
#include "plan/plan_internal.h"

#define SIM_PASSES 6    /* passes simulated; the last one's time is reported */
/* Device ops per layer (the CUDA block entry's launches at decode) and per
 * forward outside the layers (metadata and stream copies, the LM head's
 * gather, norm, matmul and soft-cap, the logits' copy back). */
#define DEVICE_OPS_PER_LAYER 9
#define DEVICE_OPS_PER_FORWARD 9

uint64_t plan_padded(uint64_t bytes) {
    return (bytes + PLAN_TENSOR_ALIGN - 1) / PLAN_TENSOR_ALIGN * PLAN_TENSOR_ALIGN;
}

const char *plan_cat_name(cost_cat cat) {
    static const char *const names[CAT_COUNT] = {"compute", "device memory", "host compute",
                                                 "host memory", "link", "disk",
                                                 "op dispatch"};
    return cat < CAT_COUNT ? names[cat] : "?";
}

/* One side's speeds: memory, the decode kernels over each decode type
 * (NULL or 0: the memory rate), arithmetic, op dispatch. */
typedef struct side_rates {
    double mem_Bps;
    const double *decode_Bps;   /* (SW_DOCTOR_DECODE_TYPES) */
    double flops, op_s;
    cost_cat mem_cat, flop_cat;
} side_rates;

/* max(time to stream `weights` bytes (by_type of them in each decode type,
 * at its kernel's rate; the rest at the memory rate) and `other` bytes,
 * flops / flop rate), naming the larger; a device side also pays for
 * launching its ops, which the host issues while earlier ones run: a
 * layer of small kernels is bound by that. */
static cost_term side_cost(const side_rates *r, double weights, const uint64_t *by_type,
                           double other, double flops, double n_ops) {
    double tm = other / r->mem_Bps, rest = weights;
    for (int i = 0; i < SW_DOCTOR_DECODE_TYPES; i++) {
        double rate = r->decode_Bps != NULL ? r->decode_Bps[i] : 0;
        tm += (double)by_type[i] / (rate > 0 ? rate : r->mem_Bps);
        rest -= (double)by_type[i];
    }
    tm += rest / r->mem_Bps;
    double tf = flops / r->flops, td = n_ops * r->op_s;
    cost_term t = tm >= tf ? (cost_term){tm, r->mem_cat} : (cost_term){tf, r->flop_cat};
    return td > t.s ? (cost_term){td, CAT_DISPATCH} : t;
}

/* Bytes of layer il a pass of n_tok tokens reads, and by_type of them in
 * each decode type: all its weights, but of its experts only those some
 * token is routed to; with k of n experts per token, independently and
 * evenly routed (a model: real routing is uneven), a share 1 - (1 -
 * k/n)^tokens of them. The decode types are scaled by the same share. */
static double read_bytes(const plan_model *m, uint32_t il, double n_tok, uint64_t *by_type) {
    const model_config *c = &m->config;
    const double all = (double)m->layer_bytes[il], ex = (double)m->layer_expert_bytes[il];
    double read = all;
    if (c->n_expert && ex > 0)
        read = all - ex + ex * (1 - pow(1 - (double)c->n_expert_used / c->n_expert, n_tok));
    for (int i = 0; i < SW_DOCTOR_DECODE_TYPES; i++)
        by_type[i] = read == all ? m->layer_type_bytes[il][i]
                                 : (uint64_t)((double)m->layer_type_bytes[il][i] * read / all);
    return read;
}

/* Of `read` bytes of layer il (by_type), those of the layer without its
 * experts: returned, with core_bt; exp_bt the experts' part. Scaled per
 * type by the shares of the stored bytes. */
static double split_bytes(const plan_model *m, uint32_t il, double read, const uint64_t *by_type,
                          uint64_t *core_bt, uint64_t *exp_bt) {
    const double all = (double)m->layer_bytes[il], ex = (double)m->layer_expert_bytes[il];
    const double ex_read = read - (all - ex); /* read_bytes reads the core whole */
    for (int i = 0; i < SW_DOCTOR_DECODE_TYPES; i++) {
        exp_bt[i] = read > 0 ? (uint64_t)((double)by_type[i] * (ex_read / read)) : 0;
        core_bt[i] = by_type[i] - exp_bt[i];
    }
    return read - ex_read;
}

/* Per-layer costs on both sides, both passes, both device rate sets. */
static void layer_costs(plan_ctx *x) {
    const model_config *c = &x->m->config;
    const plan_rates *r = x->r;
    plan_rates ref;
    plan_rates_default(&ref);
    /* the reference set breaks ties by bandwidth alone (no kernel rates,
     * no dispatch), as before they were modelled */
    const side_rates dev[2] = {
        {r->device_mem_Bps, r->device_decode_Bps, r->device_flops, r->device_op_s,
         CAT_DEVICE_MEM, CAT_COMPUTE},
        {ref.device_mem_Bps, NULL, ref.device_flops, 0, CAT_DEVICE_MEM, CAT_COMPUTE}};
    const side_rates host = {r->host_mem_Bps, r->host_decode_Bps, r->host_flops, 0,
                             CAT_HOST_MEM, CAT_HOST_COMPUTE};
    const double E = c->n_embd;
    double tokens[2] = {x->w.n_seq, x->n_chunk};
    uint32_t half = x->w.n_ctx / 2 ? x->w.n_ctx / 2 : 1;
    for (uint32_t il = 0; il < x->n_layer; il++) {
        const double hd = model_layer_head_dim(c, il), nq = (double)c->n_head * hd;
        const double nkv = model_layer_n_head_kv(c, il) * hd;
        /* K and V projections: none in a KV-shared layer, one for keys as values */
        const double kv_mats = !model_layer_owns_kv(c, il) ? 0 : c->layer[il].k_eq_v ? 1 : 2;
        double params = E * (nq + kv_mats * nkv) + nq * E + 3 * E * model_layer_n_ff(c, il);
        if (c->n_embd_per_layer)
            params += 2 * E * c->n_embd_per_layer;
        /* the router, and the experts a token runs */
        const double exp_params = c->n_expert ? E * c->n_expert +
                                                    3 * E * c->n_ff_exp * c->n_expert_used
                                              : 0;
        params += exp_params;
        double visible = x->kv_rows[il] < half ? x->kv_rows[il] : half;
        double kv_read = visible * 2 * nkv * kv_elem_bytes(plan_kv_tensor_type(x->w.kv_type)) *
                         x->w.n_seq;
        double per_tok = 2 * params + 4 * nq * visible;
        for (int p = 0; p < 2; p++) {
            uint64_t bt[SW_DOCTOR_DECODE_TYPES], core_bt[SW_DOCTOR_DECODE_TYPES];
            uint64_t exp_bt[SW_DOCTOR_DECODE_TYPES];
            const double wb = read_bytes(x->m, il, tokens[p], bt);
            const double eb = wb - split_bytes(x->m, il, wb, bt, core_bt, exp_bt);
            const double core_flops = (per_tok - 2 * exp_params) * tokens[p];
            for (int k = 0; k < 2; k++) {
                x->dev[k][p][il] = side_cost(&dev[k], wb, bt, kv_read, per_tok * tokens[p],
                                             DEVICE_OPS_PER_LAYER);
                x->dev_core[k][p][il] = side_cost(&dev[k], wb - eb, core_bt, kv_read,
                                                  core_flops, DEVICE_OPS_PER_LAYER);
            }
            x->host[p][il] = side_cost(&host, wb, bt, kv_read, per_tok * tokens[p], 0);
            x->host_experts[p][il] = side_cost(&host, eb, exp_bt, 0,
                                               2 * exp_params * tokens[p], 0);
        }
    }
    /* a split's stage before the last has no LM head (output_bytes 0) */
    double lm_flops = x->m->output_bytes ? 2 * E * c->n_vocab : 0;
    double lm_bytes = (double)x->m->output_bytes;
    const uint64_t *lm_types = x->m->output_type_bytes;
    double lm_tokens[2] = {x->w.n_seq, 1};
    for (int p = 0; p < 2; p++) {
        for (int k = 0; k < 2; k++)
            x->lm_dev[k][p] = side_cost(&dev[k], lm_bytes, lm_types, 0,
                                        lm_flops * lm_tokens[p], DEVICE_OPS_PER_FORWARD);
        x->lm_host[p] = side_cost(&host, lm_bytes, lm_types, 0, lm_flops * lm_tokens[p], 0);
    }
}

void plan_ctx_init(plan_ctx *x, const plan_model *m, const plan_budget *b,
                   const plan_rates *r, const plan_workload *w) {
    const model_config *c = &m->config;
    memset(x, 0, sizeof *x);
    x->m = m;
    x->b = b;
    x->r = r;
    x->w = *w;
    x->n_layer = c->n_layer;
    x->n_tok = w->n_batch > w->n_seq ? w->n_batch : w->n_seq;
    x->n_chunk = w->n_batch < w->n_ctx ? w->n_batch : w->n_ctx;
    uint32_t kv_type = plan_kv_tensor_type(w->kv_type);
    for (uint32_t il = 0; il < c->n_layer; il++) {
        x->kv_rows[il] = kv_layer_rows(c, il, w->n_ctx, w->n_batch);
        x->kv_bytes[il] = kv_layer_bytes(c, il, (uint64_t)x->kv_rows[il] * w->n_seq, kv_type);
    }
    /* Device allocators hand out aligned blocks (the sim pool: 256 bytes),
     * so every device buffer is counted padded to PLAN_TENSOR_ALIGN. */
    act_layout act;
    act_layout_init(c, x->n_tok, &act);
    x->host_act_bytes = act.bytes;
    x->dev_act_bytes = plan_padded(act.bytes);
    x->host_scratch_bytes = backend_cpu_scratch_bytes(
        w->n_threads, w->n_ctx, model_attn_group(c), model_max_row_elems(c));
    x->logits_bytes = m->output_bytes ? plan_padded((uint64_t)c->n_vocab * x->n_tok *
                                                    sizeof(float))
                                      : 0;
    x->lm_dev_bytes = m->output_bytes + m->output_norm_bytes + x->logits_bytes;
    layer_costs(x);
}

uint64_t plan_device_layer_bytes(const plan_ctx *x, const plan_choice *c, uint32_t il) {
    return x->m->layer_bytes[il] - (c->experts_host[il] ? x->m->layer_expert_bytes[il] : 0);
}

uint64_t plan_all_resident_bytes(const plan_ctx *x) {
    uint64_t total = x->dev_act_bytes + x->lm_dev_bytes;
    for (uint32_t il = 0; il < x->n_layer; il++)
        total += x->m->layer_bytes[il] + x->kv_bytes[il];
    return total;
}

double plan_link_rate(const plan_ctx *x, bool pinned) {
    return pinned ? x->r->h2d_pinned_Bps : x->r->h2d_pageable_Bps;
}

void plan_choice_account(const plan_ctx *x, plan_choice *c) {
    const plan_model *m = x->m;
    uint64_t dev = 0, host_kv = 0, mapped = 0, streamed_conv = 0;
    c->n_resident = c->n_streamed = c->n_host = 0;
    c->slot_bytes = c->streamed_bytes = c->staging_bytes = 0;
    /* The embedding is looked up on the host, so a converted one stays there. */
    c->conv_bytes = m->embd_conv_bytes + (m->tied ? 0 : m->output_conv_bytes);
    for (uint32_t il = 0; il < x->n_layer; il++) {
        uint64_t lb = plan_device_layer_bytes(x, c, il), cb = m->layer_conv_bytes[il];
        if (c->place[il] != PLACE_HOST && c->experts_host[il]) /* read from the mapping */
            mapped += m->layer_expert_bytes[il];
        if (c->place[il] == PLACE_RESIDENT) {
            c->n_resident++;
            dev += lb + x->kv_bytes[il];
            c->staging_bytes = cb > c->staging_bytes ? cb : c->staging_bytes;
        } else if (c->place[il] == PLACE_STREAMED) {
            c->n_streamed++;
            c->streamed_bytes += lb;
            streamed_conv += cb;
            c->slot_bytes = lb > c->slot_bytes ? lb : c->slot_bytes;
            dev += x->kv_bytes[il];
        } else {
            c->n_host++;
            host_kv += x->kv_bytes[il];
            c->conv_bytes += cb;
            mapped += lb - cb;
        }
    }
    if (x->b->has_device)
        dev += x->dev_act_bytes + (uint64_t)(c->n_streamed ? PLAN_RING_SLOTS : 0) * c->slot_bytes;
    if (c->lm == PLACE_RESIDENT)
        dev += x->lm_dev_bytes;
    else   /* read every token, from the mapping unless converted */
        mapped += m->output_bytes - (m->tied ? m->embd_conv_bytes : m->output_conv_bytes);
    c->dev_bytes = dev;
    c->host_alloc_bytes = x->host_act_bytes + x->host_scratch_bytes + host_kv + c->conv_bytes +
                          c->staging_bytes;
    c->host_need_bytes = c->host_alloc_bytes + streamed_conv;
    /* Pin the streamed layers only if that pushes nothing else out of RAM:
     * pinned memory cannot be paged, and the mapped working set must stay
     * cached or it is re-read from disk every token. */
    c->stream_pinned = c->n_streamed > 0 && c->streamed_bytes <= x->b->pinned_limit_bytes &&
                       c->host_alloc_bytes + c->streamed_bytes + mapped <= x->b->host_bytes;
    if (c->stream_pinned) {
        c->host_alloc_bytes += c->streamed_bytes;
    } else {
        c->conv_bytes += streamed_conv;
        c->host_alloc_bytes += streamed_conv;
        mapped += c->streamed_bytes - streamed_conv;
    }
    uint64_t room = x->b->host_bytes > c->host_alloc_bytes
                        ? x->b->host_bytes - c->host_alloc_bytes : 0;
    c->mapped_bytes = mapped;
    c->disk_bytes = mapped > room ? mapped - room : 0;
}

/* A device layer's seconds: the whole layer, or its device part then its
 * experts on the host (the device waits for them). */
static double device_layer_s(const plan_ctx *x, const plan_choice *c, int k, int p,
                             uint32_t il) {
    return c->experts_host[il] ? x->dev_core[k][p][il].s + x->host_experts[p][il].s
                               : x->dev[k][p][il].s;
}

/* Steady-state seconds of one pass: layers in order, each streamed layer
 * waiting for its copy; copies run in order on one link as soon as their
 * slot is free (the layer K streamed layers earlier has been computed). */
static double simulate(const plan_ctx *x, const plan_choice *c, int k, int p, double tail_s) {
    double t = 0, link_free = 0, slot_free[PLAN_RING_SLOTS] = {0}, prev_end = 0, end = 0;
    double rate = plan_link_rate(x, c->stream_pinned);
    uint64_t seq = 0;
    for (int pass = 0; pass < SIM_PASSES; pass++) {
        prev_end = end;
        for (uint32_t il = 0; il < x->n_layer; il++) {
            if (c->place[il] == PLACE_HOST) {
                t += x->host[p][il].s;
                continue;
            }
            const double s = device_layer_s(x, c, k, p, il);
            if (c->place[il] == PLACE_STREAMED) {
                double *slot = &slot_free[seq++ % PLAN_RING_SLOTS];
                double start = link_free > *slot ? link_free : *slot;
                link_free = start + (double)plan_device_layer_bytes(x, c, il) / rate;
                t = t > link_free ? t : link_free;
                t += s;
                *slot = t;
                continue;
            }
            t += s;
        }
        t += tail_s;
        end = t;
    }
    return end - prev_end;
}

/* Sums the sequential terms (layers, LM head, disk) by category into
 * cat_s; returns their total. */
static double sum_categories(const plan_ctx *x, const plan_choice *c, int k, int p,
                             double *cat_s) {
    double total = 0;
    for (int i = 0; i < CAT_COUNT; i++)
        cat_s[i] = 0;
    for (uint32_t il = 0; il < x->n_layer; il++) {
        const bool split = c->place[il] != PLACE_HOST && c->experts_host[il];
        const cost_term *t = c->place[il] == PLACE_HOST ? &x->host[p][il]
                           : split ? &x->dev_core[k][p][il] : &x->dev[k][p][il];
        cat_s[t->cat] += t->s;
        total += t->s;
        if (split) {
            cat_s[x->host_experts[p][il].cat] += x->host_experts[p][il].s;
            total += x->host_experts[p][il].s;
        }
    }
    const cost_term *lm = c->lm == PLACE_RESIDENT ? &x->lm_dev[k][p] : &x->lm_host[p];
    cat_s[lm->cat] += lm->s;
    double disk = (double)c->disk_bytes / x->r->disk_read_Bps;
    cat_s[CAT_DISK] += disk;
    return total + lm->s + disk;
}

/* Seconds of pass p under rate set k; cat_s gets the time per category,
 * with waiting for copies counted as the link's. */
static double pass_time(const plan_ctx *x, const plan_choice *c, int k, int p, double *cat_s) {
    double seq_s = sum_categories(x, c, k, p, cat_s);
    if (c->n_streamed == 0)
        return seq_s;
    const cost_term *lm = c->lm == PLACE_RESIDENT ? &x->lm_dev[k][p] : &x->lm_host[p];
    double tail = lm->s + (double)c->disk_bytes / x->r->disk_read_Bps;
    double pass = simulate(x, c, k, p, tail);
    /* Copies fully hidden: the pass is its sequential work, exactly, so it
     * ties with placements that stream nothing (the simulation sums in
     * another order and may differ in the last bits). */
    if (pass < seq_s * (1 + 1e-12))
        pass = seq_s;
    cat_s[CAT_LINK] = pass - seq_s;
    return pass;
}

void plan_choice_predict(const plan_ctx *x, plan_choice *c) {
    for (int p = 0; p < 2; p++) {
        double cat_s[CAT_COUNT], ref_cat[CAT_COUNT];
        c->pass_s[p] = pass_time(x, c, RATES_ACTUAL, p, cat_s);
        c->ref_s[p] = pass_time(x, c, RATES_REF, p, ref_cat);
        c->link_s[p] = (double)c->streamed_bytes / plan_link_rate(x, c->stream_pinned);
        cost_cat best = CAT_COMPUTE;
        for (int i = 1; i < CAT_COUNT; i++)
            if (cat_s[i] > cat_s[best])
                best = (cost_cat)i;
        c->cat[p] = best;
    }
}
