/*
 * plan_internal.h — what the planner's files share: the per-search context
 * (sizes and per-layer costs fixed by the model, budget, rates and
 * workload), a candidate placement ("choice") with its byte accounting and
 * predicted times, and the search itself. Not for use outside src/plan/.
 */
#ifndef SW_PLAN_PLAN_INTERNAL_H
#define SW_PLAN_PLAN_INTERNAL_H

#include "plan/plan_api.h"

#define PLAN_RING_SLOTS 2   /* K: prefetch one layer ahead (DESIGN.md) */

/* What bounds a cost term; the bottleneck is the category with most time. */
typedef enum cost_cat {
    CAT_COMPUTE,        /* device arithmetic */
    CAT_DEVICE_MEM,     /* device memory bandwidth */
    CAT_HOST_COMPUTE,
    CAT_HOST_MEM,
    CAT_LINK,           /* host-to-device copies of streamed layers */
    CAT_DISK,           /* mapped weights the host cannot cache */
    CAT_DISPATCH,       /* launching device ops: small layers */
    CAT_COUNT
} cost_cat;

typedef struct cost_term {
    double s;           /* seconds */
    cost_cat cat;
} cost_term;

/* One pass on each side: [0] a decode step (n_seq tokens), [1] a prefill
 * chunk (n_batch tokens). */
enum { PASS_DECODE = 0, PASS_PREFILL = 1 };
enum { RATES_ACTUAL = 0, RATES_REF = 1 };

typedef struct plan_ctx {
    const plan_model *m;
    const plan_budget *b;
    const plan_rates *r;
    plan_workload w;
    uint32_t n_layer;
    uint32_t n_tok;                          /* max(n_batch, n_seq) */
    uint32_t n_chunk;                        /* prefill tokens per pass */
    uint32_t kv_rows[PLAN_MAX_LAYERS];
    uint64_t kv_bytes[PLAN_MAX_LAYERS];      /* allocated, all sequences */
    uint64_t dev_act_bytes, host_act_bytes;  /* act_layout_init() bytes */
    uint64_t host_scratch_bytes;             /* backend_cpu_scratch_bytes() */
    uint64_t logits_bytes;                   /* device logits (n_tok, n_vocab) */
    uint64_t lm_dev_bytes;                   /* LM head + final norm + logits */
    /* Costs per [rate set][pass][layer]. Rate set RATES_ACTUAL uses the
     * given rates; RATES_REF puts a reference accelerator (the default
     * device rates) behind the same link and host, to break exact ties the
     * way a real device would (the sim computes at host speed, so on it
     * every placement that hides its copies ties). */
    cost_term dev[2][2][PLAN_MAX_LAYERS];    /* layer computed on the device */
    cost_term host[2][PLAN_MAX_LAYERS];      /* layer computed on the host */
    /* a device layer without its experts, and its experts on the host
     * (layers with experts only; otherwise dev and zero) */
    cost_term dev_core[2][2][PLAN_MAX_LAYERS];
    cost_term host_experts[2][PLAN_MAX_LAYERS];
    cost_term lm_dev[2][2], lm_host[2];
} plan_ctx;

/* A candidate placement and what it costs. */
typedef struct plan_choice {
    plan_place place[PLAN_MAX_LAYERS];
    bool experts_host[PLAN_MAX_LAYERS]; /* a device layer's experts on the host */
    plan_place lm;                  /* PLACE_RESIDENT or PLACE_HOST */
    uint32_t n_resident, n_streamed, n_host;
    uint64_t slot_bytes;            /* largest streamed layer; 0 if none */
    uint64_t streamed_bytes;        /* sum of streamed layers */
    bool stream_pinned;
    uint64_t dev_bytes;             /* device total */
    uint64_t host_alloc_bytes;      /* host activations + kernel scratch + host
                                     * KV + pinned + converted weights + staging */
    uint64_t host_need_bytes;       /* the same without pinning (the least the
                                     * host must allocate) */
    uint64_t conv_bytes;            /* --weights conversions kept on the host */
    uint64_t staging_bytes;         /* converts resident layers at load */
    uint64_t mapped_bytes;          /* mapping read per token (page cache) */
    uint64_t disk_bytes;            /* ... of which the host cannot cache */
    double pass_s[2];               /* seconds per decode step / prefill chunk */
    double ref_s[2];                /* the same under the reference device */
    double link_s[2];               /* link busy time per pass */
    cost_cat cat[2];                /* bottleneck per pass */
} plan_choice;

/* cost.c ------------------------------------------------------------------ */

/* Sizes and per-layer costs for one workload. Pure. */
void plan_ctx_init(plan_ctx *x, const plan_model *m, const plan_budget *b,
                   const plan_rates *r, const plan_workload *w);

/* From c->place, c->experts_host and c->lm: counts, device/host bytes,
 * stream source, disk spill. Does not predict speed. */
void plan_choice_account(const plan_ctx *x, plan_choice *c);

/* Fills pass_s, link_s and cat by simulating the streaming pipeline. */
void plan_choice_predict(const plan_ctx *x, plan_choice *c);

/* "compute", "device memory", "host compute", "host memory", "link", "disk" */
const char *plan_cat_name(cost_cat cat);

/* Bytes of layer il a device holds under choice c: all of it, or without
 * its experts when the host computes them. */
uint64_t plan_device_layer_bytes(const plan_ctx *x, const plan_choice *c, uint32_t il);

/* Bytes a device holds when the whole model is resident (for "frees"). */
uint64_t plan_all_resident_bytes(const plan_ctx *x);

/* Host-to-device rate a choice's streamed layers move at. */
double plan_link_rate(const plan_ctx *x, bool pinned);

/* plan.c ------------------------------------------------------------------ */

typedef struct search_result {
    bool found;
    plan_choice best;
    bool host_ok_any;               /* some placement fits the host */
    uint64_t min_dev_bytes;         /* least device need among host-fitting ones */
    plan_choice min_dev;            /* that placement */
    uint64_t min_host_bytes;        /* least host need among all placements */
} search_result;

/* Searches placements for x under pins (the caller checked the pins
 * against the device's existence). */
void plan_search(const plan_ctx *x, const plan_pins *pins, search_result *res);

/* fill.c ------------------------------------------------------------------ */

/* Writes the plan for choice c (predicted): placements, every buffer,
 * totals per tier, predictions and the notes that explain them. */
void plan_fill(const plan_ctx *x, const plan_choice *c, const plan_pins *pins, plan *out);

/* suggest.c --------------------------------------------------------------- */

/* Records the failure message (short tier, bytes missing, changes that fit)
 * and returns SW_ERR_OOM_DEVICE or SW_ERR_OOM_HOST. */
sw_status plan_explain_failure(const plan_ctx *x, const search_result *res);

/* A cheaper change that would speed the chosen plan up, or "". */
void plan_find_better(const plan_ctx *x, const plan_choice *chosen, char *out, size_t cap);

/* Layers of `c` with placement p as "0-11,14" (or "" if none). */
void plan_format_ranges(const plan_place *place, uint32_t n_layer, plan_place p, char *buf,
                        size_t cap);

#endif
