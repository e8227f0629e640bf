/*
 * registry.h — the backends this build knows, by name: what each is (a
 * device with memory of its own, or the host), whether this build can run
 * it, and how to make one (backend_create in backend.h). The planner asks
 * here instead of comparing names; the engine creates through here.
 */
#ifndef SW_BACKEND_REGISTRY_H
#define SW_BACKEND_REGISTRY_H

#include <stdbool.h>

#include "spillway.h"

typedef struct backend_info {
    const char *name;          /* "cpu", "sim", "cuda", "pjrt" */
    bool has_device;           /* memory of its own that layers can be placed in */
    bool capacity_is_budget;   /* sim: --device-mem is its whole memory */
    bool queries_devices;      /* cuda: budget from sw_devices_query() */
    bool runs;                 /* this build can execute plans on it */
    const char *why_not;       /* when !runs: why, and what to do instead */
} backend_info;

/* Describes backend `name`. Errors: SW_ERR_ARG (unknown; the message lists
 * the known names). */
sw_status backend_lookup(const char *name, backend_info *out);

/* The backend used when none is named: the first device backend that
 * runs and sees a device, else "cpu". *note (may be NULL) gets a remark
 * when a device backend was passed over ("" otherwise). */
const char *backend_default_name(char *note, size_t cap);

#endif
