/*
 * split_engine.h — an engine over a split plan (plan/split.h): one stage
 * engine per device, driven by the first (split_engine.c), and what each
 * device did, for --report and the tests.
 */
#ifndef SW_ENGINE_SPLIT_ENGINE_H
#define SW_ENGINE_SPLIT_ENGINE_H

#include "engine/engine.h"
#include "plan/split.h"

/* Creates the stages of s in order, each executing its device's plan
 * exactly (its own device backend with that device's budget), the later
 * ones on threads of their own (pipeline.c; SPILLWAY_SPLIT_PIPELINE=0: in
 * turn on the caller's), a forward wanting logits in the micro-batches the
 * plan found faster (SPILLWAY_SPLIT_PARTS=0: never; =N: always N), the
 * stream device to device where both sides can (SPILLWAY_SPLIT_PEER=0:
 * through the host). The engine returned is used as any other:
 * sessions, batches, the report.
 * Errors: SW_ERR_ARG (a split that is not of this model), and engine
 * creation's, prefixed with the device. */
sw_status engine_create_split(const sw_model *model, const plan_split *s,
                              const sw_engine_options *opt, const engine_hooks *hooks,
                              sw_engine **out, sw_alloc_failure *failure);

/* One device of an engine: its layers, budget, plan and what it used. */
typedef struct engine_device_stat {
    uint32_t device;           /* the backend's device number */
    uint32_t first_layer, end_layer;
    uint64_t budget_bytes, plan_bytes, peak_bytes, bytes_to_device;
    double copy_busy_s;
    double busy_s;             /* seconds its forwards computed (its busy share:
                                * over the engine's prefill and decode seconds) */
    bool peer_in;              /* the stream comes device to device from the one before */
    uint64_t peer_bytes;       /* ... those bytes */
} engine_device_stat;

/* How many devices the engine drives (0 for the cpu backend), and device
 * d's figures. Errors: SW_ERR_ARG (no such device). */
uint32_t engine_n_devices(const sw_engine *e);
sw_status engine_device_stats(const sw_engine *e, uint32_t d, engine_device_stat *out);

#endif
