/*
 * registry.h — the backends this build knows, by name: what each is (a
 * device with memory of its own, or the host), whether this build can run
 * it, and how to make one (backend_create). The planner asks here instead
 * of comparing names; the engine creates through here. What a plugin
 * backend's doctor shows is in plugin_doctor.h.
 */
#ifndef SW_BACKEND_REGISTRY_H
#define SW_BACKEND_REGISTRY_H

#include <stdbool.h>

#include "backend/backend.h"
#include "backend/backend_params.h"
#include "spillway.h"

/* Where a backend's device budget (the bytes the planner may place layers
 * in) comes from. The planner reads the machine accordingly (plan/api.c). */
typedef enum backend_budget_source {
    BACKEND_BUDGET_NONE,    /* no device memory: everything stays on the host */
    BACKEND_BUDGET_GIVEN,   /* a rehearsal: --device-mem is the whole device memory
                             * (required, a size, not a share), --host-mem is taken
                             * as given and the rates are the host's */
    BACKEND_BUDGET_DEVICES, /* sw_devices_query()'s first device: its free memory,
                             * capped by --device-mem (a size or a share) */
    BACKEND_BUDGET_PLUGIN,  /* the runtime plugin's reported free memory, capped by
                             * --device-mem; --device-mem alone when it reports none.
                             * Such a backend also has a plugin check
                             * (plugin_doctor.h). */
} backend_budget_source;

typedef struct backend_info {
    const char *name;          /* "cpu", "sim", "cuda", "pjrt" */
    bool has_device;           /* memory of its own that layers can be placed in */
    backend_budget_source budget; /* where that memory's budget comes from */
    bool runs;                 /* this build can execute plans on it */
    const char *why_not;       /* when !runs: why, and what to do instead */
    bool float_weights;        /* computes with float (F32/F16/BF16) weights only:
                                * the planner has quantized ones dequantized to BF16 */
    const char *no_expert_cache; /* why it cannot hold an expert cache's slots
                                  * (BOP_MOE_CACHED); NULL: it can */
    bool rows_alone;           /* a token's results have the same bits whatever batch it
                                * is in (the cpu kernels): a split may cut a forward into
                                * micro-batches without changing them */
} backend_info;

/* Makes backend `name` ("cpu", "sim", "cuda", "pjrt"; those this build
 * cannot run say why). Errors: SW_ERR_ARG (unknown name, bad params),
 * SW_ERR_UNSUPPORTED (known but not in this build), SW_ERR_OOM_HOST, and
 * the backend's own. */
sw_status backend_create(const char *name, const backend_params *p, backend **out);

/* Describes backend `name`. Errors: SW_ERR_ARG (unknown; the message lists
 * the known names). */
sw_status backend_lookup(const char *name, backend_info *out);

/* A plugin backend's device (pjrt): free bytes it reports (0: it does not
 * report them) and a display name. Errors: the plugin's (no plugin, no
 * device, not this build). */
sw_status backend_device_budget(const char *name, uint64_t *free_bytes, char *device,
                                size_t cap);

/* The backend used when none is named: the first device backend that
 * runs and sees a device, else "cpu". *note (may be NULL) gets a remark
 * when a device backend was passed over ("" otherwise). NULL when host
 * memory is short for asking the devices (no silent "cpu"). */
const char *backend_default_name(char *note, size_t cap);

#endif
