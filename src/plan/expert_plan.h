/*
 * expert_plan.h — the expert cache in the plan (issue 38): how many slots
 * each cached layer gets, where they sit in the one device buffer, and
 * the cost model that decides, per missed expert and step, whether to
 * copy it into a slot or compute it on the host.
 *
 * A cached layer is a device layer (resident or streamed) whose experts
 * the plan leaves on the host (experts_host). The cache is sized after
 * the placement, from the device bytes the fixed part leaves, so it never
 * takes memory the placement counted on; --expert-cache N asks for N per
 * layer and fails, naming the bytes, when they do not fit.
 *
 * BUF_EXPERT_CACHE's layout (the engine reads it from here, so the two
 * cannot drift): the tables — slot_of (n_expert int32), y_row (n_tok * k
 * int32), y (n_tok * k rows of n_embd f32: outputs the host computed) —
 * then each cached layer's region in layer order: its slots' gate/up
 * slices, then (plan_padded) their down slices.
 */
#ifndef SW_PLAN_EXPERT_PLAN_H
#define SW_PLAN_EXPERT_PLAN_H

#include <stdbool.h>
#include <stdio.h>

#include "plan/plan.h"

typedef enum expert_copy_mode {
    EXPERT_COPY_AUTO = 0, EXPERT_COPY_ALWAYS, EXPERT_COPY_NEVER
} expert_copy_mode;

typedef struct expert_layout {
    uint64_t slot_of, y_row, y;          /* the tables' offsets */
    uint64_t layer[PLAN_MAX_LAYERS];     /* each cached layer's region; 0: not cached */
    uint64_t layer_bytes[PLAN_MAX_LAYERS];
    uint64_t total;
} expert_layout;

/* Copies into slots come from pinned memory: the mapping itself where
 * the device can register it (cudaHostRegister), else through this many
 * pinned buffers of one expert each, reused in turn (a buffer's next
 * fill waits for its last copy), so the host's copy of one expert
 * overlaps the link's of the one before. */
#define EXPERT_STAGE_BUFFERS 4

/* Whether layer il of p gets a cache (a device layer, experts on the host). */
bool expert_plan_cached(const plan *p, uint32_t il);

/* The cache's layout for p's (or a trial) slot count. */
void expert_plan_layout(const plan *p, uint32_t slots, expert_layout *out);

/* The staging's pinned bytes (EXPERT_STAGE_BUFFERS of the largest cached
 * expert, each slice padded); 0 without cached layers. */
uint64_t expert_plan_stage_bytes(const plan *p);

/* The host's tables for a step (engine/expert_cache.c allocates them):
 * the host's expert outputs, the routing, slot tables, prefetch marks. */
uint64_t expert_plan_host_bytes(const plan *p);

/* After plan_build: sizes the cache from o (slots 0: none; N; -1: auto),
 * adds its buffer to the device tier and notes. no_cache: why the
 * backend cannot hold one (NULL: it can). Errors: SW_ERR_ARG (bad policy
 * or copy word; a cache on a backend that cannot hold one, named),
 * SW_ERR_OOM_DEVICE (N slots that do not fit: need and room named). */
sw_status plan_expert_cache(plan *p, const sw_expert_options *o, const char *no_cache);

/* The cost model: seconds to compute a missed expert of layer il for m
 * tokens on the host (reading it at the host's memory rate or computing
 * at its flop rate, whichever binds) against copying it over the link
 * from pinned memory (the staging's host copy overlapping) and computing
 * on the device. Copying also leaves the expert in a slot
 * for later steps; the model does not count that (a conservative copy). */
double expert_plan_host_s(const plan *p, uint32_t il, uint32_t m);
double expert_plan_copy_s(const plan *p, uint32_t il, uint32_t m);
bool expert_plan_copy_wins(const plan *p, uint32_t il, uint32_t m);
/* The fewest routed tokens from which copying wins (UINT32_MAX: never
 * within n_tok). */
uint32_t expert_plan_copy_threshold(const plan *p, uint32_t il);

/* The predictions with the cache: p's decode and prefill tok/s from its
 * *_uncached ones, each cached layer's host experts replaced by
 * expert_hit_rate of them read from slots and the rest missed (copied or
 * computed on the host, as the engine decides). Run by plan_expert_cache. */
void expert_plan_predict(plan *p);
/* Whether misses of layer il ever fill a slot (copied, or prefetched):
 * if not, the slots stay empty and the predictions take no hits. */
bool expert_plan_fills(const plan *p, uint32_t il);

/* "auto" / "always" / "never", and parses them (SW_ERR_ARG). */
const char *expert_copy_name(expert_copy_mode m);
sw_status expert_copy_parse(const char *s, expert_copy_mode *out);

/* The plan table's "experts" row; nothing without a cache. */
void expert_plan_print(FILE *out, const plan *p);

#endif
