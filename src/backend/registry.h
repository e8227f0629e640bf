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

typedef struct backend_info {
    const char *name;          /* "cpu", "sim", "cuda", "pjrt" */
    bool has_device;           /* memory of its own that layers can be placed in */
    bool capacity_is_budget;   /* sim: --device-mem is its whole memory */
    bool queries_devices;      /* cuda: budget from sw_devices_query() */
    bool runs;                 /* this build can execute plans on it */
    const char *why_not;       /* when !runs: why, and what to do instead */
    bool float_weights;        /* pjrt: computes in f32/f16/bf16 weights only */
    bool budget_from_plugin;   /* pjrt: the plugin's memory limit, else --device-mem */
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
