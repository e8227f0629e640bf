/*
 * split.h — one plan over several devices (issue 39, section 1): the
 * model's layers in contiguous ranges, one range per device, each device
 * with its own placement of its range (resident, streamed through its own
 * ring, or computed by the host), its own KV and activations; the
 * activation hops device to device between ranges.
 *
 * Each device's part is a whole single-device plan (plan.h) of a stage
 * model: the layers of its range renumbered from 0, with the token
 * embedding (and Gemma 4's per-layer embeddings) only in the first stage
 * and the LM head only in the last. So every rule of plan_build holds per
 * device, and the search here is only over where the ranges end.
 *
 * The search: for two devices every cut; for more, cuts that give each
 * device a share of the layer bytes proportional to its budget, then each
 * cut moved in halving steps while that helps. A cut never separates a
 * KV-shared layer from the layer whose cache it reads, nor puts a layer
 * pinned to a device (--place A-B=devN) outside that device's range. Splits compare by
 * fitting, then decode time (the stages run one after another for one
 * decode step, and each hop adds its copies), then pipelined prefill time
 * (the slowest stage, as chunks follow each other through the devices),
 * then the slowest stage's decode time, then the evenest stages (balance).
 *
 * The host is shared: the stages' host memory is summed against the one
 * host budget. Hops are priced through pinned host memory (a copy down
 * and a copy up per hop); the engine copies device to device where the
 * backend can (sim, cuda: copy_peer), which is faster, so the figure is an
 * upper bound on the hops' cost.
 */
#ifndef SW_PLAN_SPLIT_H
#define SW_PLAN_SPLIT_H

#include <stdio.h>

#include "plan/plan.h"

#define PLAN_MAX_DEVICES PLAN_PIN_MAX_DEVICES

typedef struct plan_split {
    char model[64];                       /* the model's name (the stages' say their layers) */
    uint32_t n_dev;
    uint32_t device[PLAN_MAX_DEVICES];    /* each the backend's device number
                                           * (--devices; by default 0, 1, ...) */
    uint32_t first[PLAN_MAX_DEVICES];     /* each device's layers: [first, end) */
    uint32_t end[PLAN_MAX_DEVICES];
    plan stage[PLAN_MAX_DEVICES];         /* each device's plan of its stage model */
    uint64_t host_bytes;                  /* the host's budget, shared */
    uint64_t host_planned_bytes;          /* the stages' host tiers summed */
    uint64_t pinned_planned_bytes;        /* ... and their pinned tiers */
    uint64_t hop_bytes[2];                /* one hop's activation bytes: decode, prefill */
    double hop_s[2];                      /* one hop's seconds: decode, prefill */
    double decode_tokens_per_s;           /* stages one after another, plus hops */
    double prefill_tokens_per_s;          /* chunks pipelined: the slowest stage */
    double prefill_serial_tokens_per_s;   /* one chunk alone through every stage */
    /* a pass cut into this many micro-batches of consecutive rows, which go
     * through the stages at once (split_micro.c); 1: whole. The speeds
     * then (0 when whole): a decode step, and one chunk alone. */
    uint32_t decode_parts, prefill_parts;
    double decode_parts_tokens_per_s, prefill_parts_tokens_per_s;
    double busy_share[PLAN_MAX_DEVICES];  /* share of a pipelined prefill each works */
    /* the whole model on one device of the largest budget, for comparison:
     * whether any plan fits it, and that plan's decode speed */
    bool single_fits;
    double single_decode_tokens_per_s;
    uint32_t n_evaluated;                 /* stage plans the search built */
} plan_split;

/* Plans `model` over n_dev devices with device_bytes[d] each (budget's
 * device_bytes is ignored; its name, backend and host budget are used).
 * pins are in the model's layer numbers. *out is large (allocate it).
 * Errors: SW_ERR_ARG (n_dev not in 2..PLAN_MAX_DEVICES, fewer layers than
 * devices, no device, as plan_build), SW_ERR_OOM_DEVICE naming the short
 * device and the budgets that would fit, SW_ERR_OOM_HOST (also for its own
 * scratch). No I/O; deterministic. */
sw_status plan_split_build(const plan_model *model, const plan_budget *budget,
                           const uint64_t *device_bytes, uint32_t n_dev,
                           const plan_rates *rates, const plan_workload *work,
                           const plan_pins *pins, plan_split *out);

/* What sw_plan_create does for one device, for n_dev budgets: the model
 * (file or catalog), backend, host budget, rates, workload and pins from
 * the options (device_mem_bytes and device_mem_fraction unused), then
 * plan_split_build. devices: the backend's device numbers (--devices;
 * NULL: 0, 1, ...); on devices that report their memory (CUDA) each budget
 * is capped by its device's free memory, and with an expert cache on
 * each device that keeps experts on the host (plan_split_expert_cache).
 * Reads the machine as sw_plan_create does. Errors: as plan_split_build
 * and plan_split_expert_cache; a drafter's bytes (opt->draft_device_bytes)
 * come off the first device's budget (its drafter row). SW_ERR_ARG for a
 * device named twice;
 * SW_ERR_NO_DEVICE for a device that is not there. */
sw_status plan_split_create(const sw_model *model, const char *catalog_name,
                            const sw_plan_options *opt, const uint64_t *device_bytes,
                            const uint32_t *devices, uint32_t n_dev, plan_split *out);

/* After plan_split_build: each stage's expert cache, as plan_expert_cache
 * sizes one in what that device's placement leaves (o->slots 0: none;
 * stages keeping no experts on the host get a note), the split's
 * predictions redone with them. no_cache: as plan_expert_cache's.
 * Errors: plan_expert_cache's, naming the device and its layers. */
sw_status plan_split_expert_cache(plan_split *s, const plan_model *m, const plan_rates *r,
                                  const plan_workload *w, const sw_expert_options *o,
                                  const char *no_cache);

/* The stage model of layers [first, end): the layers renumbered, the
 * embedding only when first == 0, the LM head only when end == n_layer.
 * Errors: SW_ERR_ARG (empty or out-of-range range, a KV-shared layer whose
 * cache is before first). */
sw_status plan_stage_model(const plan_model *m, uint32_t first, uint32_t end,
                           plan_model *out);

/* Fills decode_parts and prefill_parts (and the speeds they give) for a
 * planned split s of model m (split_micro.c); plan_split_build leaves them
 * 1, and plan_split_create calls this where the backend's kernels give a
 * token the same bits in any batch. Errors: SW_ERR_OOM_HOST. */
sw_status plan_split_micro(const plan_model *m, const plan_rates *r, const plan_workload *w,
                           plan_split *s);

/* The split for a person: one block of rows per device, the host, the
 * hops and the predictions; and as JSON (each device's plan in full). */
void plan_split_print_table(FILE *out, const plan_split *s);
void plan_split_print_json(FILE *out, const plan_split *s);

#endif
