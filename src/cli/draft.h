/*
 * draft.h — the speculative-decoding flags of the generating commands
 * (run, chat, batch, serve) and the drafter they give a scheduler:
 *   --draft-ngram          drafts from the sequence's own n-grams
 *   --draft-model PATH     (-md) drafts from a smaller model with the
 *                          target's vocabulary, planned first on the same
 *                          backend and device budget (its device bytes off
 *                          the target's), or within --draft-device-mem of
 *                          its own;
 *                          or, when PATH is a Gemma 4 assistant folder
 *                          (its config says Gemma4AssistantForCausalLM),
 *                          from that assistant over the target's caches,
 *                          its device bytes taken off the target's plan
 *   --draft-max N          drafts per verify (1..16; default: the cost
 *                          model's best for the plan and the drafter)
 */
#ifndef SW_CLI_DRAFT_H
#define SW_CLI_DRAFT_H

#include <stdbool.h>
#include <stdio.h>

#include "spillway.h"

typedef struct draft_flags {
    const char *model;          /* --draft-model / -md */
    bool ngram;                 /* --draft-ngram */
    long max;                   /* --draft-max; 0: the library's default */
    uint64_t device_mem_bytes;  /* --draft-device-mem; 0: the target's budget */
    /* The target's split over devices (--device-mem A,B,...), set by the
     * command before draft_reserve: the draft model goes on the split's
     * first device, its bytes off that device's budget. n_split 0: none. */
    const uint64_t *split;
    uint32_t n_split;
    const uint32_t *split_devices; /* --devices, or NULL: 0, 1, ... */
} draft_flags;

/* What a drafter holds until the scheduler using it is destroyed. */
typedef struct draft_ctx {
    sw_model *model;
    sw_engine *engine;
} draft_ctx;

/* Parses argv[i] (and its value) if it is a draft flag: returns the
 * arguments consumed (1 or 2), 0 if not ours, -1 on a bad value (message
 * printed). */
int draft_flags_parse(draft_flags *d, int argc, char **argv, int i);
void draft_flags_usage(FILE *out);
/* After parsing: CLI_EXIT_USAGE (message printed) for two drafters, or a
 * draft setting without a drafter; else CLI_EXIT_OK. */
int draft_flags_check(const draft_flags *d);

/* The draft model's plan options: the target's workload and backend, no
 * placement pins (a small model goes to the device first), and for its
 * budget --draft-device-mem when given, else the share the target's plan
 * reserved for it (target->draft_device_bytes), else the target's.
 * `spillway plan` plans the drafter with them as draft_start does. */
sw_plan_options draft_plan(const draft_flags *d, const sw_plan_options *target);

/* Before the target (the model, or the catalog name) is planned: p's
 * context is resolved (-c 0: the target's default), and the drafter's
 * device bytes go into p's draft_device_bytes (the plan's drafter row,
 * off its budget): a Gemma 4 assistant's (*assistant set), or a draft
 * model's plan on the device (planned first, on p's budget, as draft_plan
 * plans it, giving back what the target needs to fit; not with
 * --draft-device-mem, a budget of its own). With a split (d->n_split), the
 * drafter's share comes off the first device's budget and the split is
 * what must still fit; a Gemma 4 assistant is refused there. Returns an
 * exit status (error printed). */
int draft_reserve(const draft_flags *d, const sw_model *target, const char *catalog,
                  sw_plan_options *p, bool *assistant);

/* Gives scheduler q the drafter d asks for (none: nothing). A draft model
 * is opened and planned like the target (plan: the target's options) but
 * with no placement pins, all of its own budget, and the target's context
 * and sequences, and runs on `device` (where the target's first layers
 * are: a replica's or a split's); its engine and model go to *ctx. Returns
 * an exit status (error printed). */
int draft_start(const draft_flags *d, const sw_plan_options *plan, const sw_model *target,
                uint32_t device, sw_scheduler *q, draft_ctx *ctx);
/* After the scheduler is destroyed. Accepts a zeroed ctx. */
void draft_end(draft_ctx *ctx);

#endif
