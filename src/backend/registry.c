/*
 * registry.c — which backends this build has and how to make them by name
 * (registry.h, backend_create), device discovery, and the device rate
 * measurements doctor runs (device_rates.h).
 *
 * The only file that mentions SW_HAVE_CUDA (STYLE.md 2) and SW_HAVE_PJRT:
 * CMake defines them for this file alone when those backends are compiled
 * in. Everything else
 * asks here instead of testing the macro, and nothing else compares
 * backend names.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/device_rates.h"
#include "backend/plugin_doctor.h"
#include "backend/registry.h"
#include "backend/sim/sim.h"
#include "util/error.h"

typedef struct backend_entry {
    backend_info info;
    sw_status (*create)(const backend_params *p, backend **out); /* NULL: !info.runs */
} backend_entry;

#ifdef SW_HAVE_CUDA
#include "backend/cuda/cuda_backend.h"
#define CUDA_RUNS true
#define CUDA_CREATE backend_cuda_create
#else
#define CUDA_RUNS false
#define CUDA_CREATE NULL
#endif

#ifdef SW_HAVE_PJRT
#include "backend/pjrt/pjrt_backend.h"
#define PJRT_RUNS true
#define PJRT_CREATE backend_pjrt_create
#else
#define PJRT_RUNS false
#define PJRT_CREATE NULL
#endif

static const backend_entry entries[] = {
    {{.name = "cpu", .has_device = false, .budget = BACKEND_BUDGET_NONE, .runs = true,
      .rows_alone = true}, backend_cpu_create},
    {{.name = "sim", .has_device = true, .budget = BACKEND_BUDGET_GIVEN, .runs = true,
      .rows_alone = true}, backend_sim_create},
    {{.name = "cuda", .has_device = true, .budget = BACKEND_BUDGET_DEVICES, .runs = CUDA_RUNS,
      .why_not = "this build has no CUDA backend: nvcc was not found when it was configured; "
      "install the CUDA toolkit and build again (cmake -B build -DSPILLWAY_CUDA=ON), or "
      "rehearse the card's budget with --backend sim --device-mem SIZE"}, CUDA_CREATE},
    {{.name = "pjrt", .has_device = true, .budget = BACKEND_BUDGET_PLUGIN, .runs = PJRT_RUNS,
      .why_not = "this build has no PJRT backend: CMake did not find pjrt_c_api.h; run "
      "'spillway fetch pjrt-cpu' (it installs the header package too) and build again",
      .float_weights = true,
      .no_expert_cache = "the pjrt backend cannot hold an expert cache: its compiled block "
      "programs take a layer's experts whole, with no slots (BOP_MOE_CACHED)"}, PJRT_CREATE},
};
#define N_ENTRIES (sizeof entries / sizeof entries[0])

static const backend_entry *find(const char *name) {
    for (size_t i = 0; name != NULL && i < N_ENTRIES; i++)
        if (!strcmp(entries[i].info.name, name))
            return &entries[i];
    return NULL;
}

sw_status backend_lookup(const char *name, backend_info *out) {
    const backend_entry *e = find(name);
    if (e == NULL)
        return sw_errorf(SW_ERR_ARG, "unknown backend '%s' (cpu, sim, cuda or pjrt)",
                         name ? name : "(null)");
    *out = e->info;
    return SW_OK;
}

sw_status backend_device_budget(const char *name, uint64_t *free_bytes, char *device,
                                size_t cap) {
    const backend_entry *e = find(name);
    *free_bytes = 0;
    if (e == NULL || e->info.budget != BACKEND_BUDGET_PLUGIN)
        return sw_errorf(SW_ERR_ARG, "backend '%s' has no plugin to ask", name ? name : "?");
    if (!e->info.runs)
        return sw_errorf(SW_ERR_UNSUPPORTED, "%s", e->info.why_not);
#ifdef SW_HAVE_PJRT
    return backend_pjrt_probe(free_bytes, device, cap);
#else
    (void)device;
    (void)cap;
    return sw_errorf(SW_ERR_UNSUPPORTED, "%s", e->info.why_not);
#endif
}

sw_status backend_plugin_doctor(const char *name, backend_plugin_report *out) {
    const backend_entry *e = find(name);
    if (out == NULL)
        return sw_errorf(SW_ERR_ARG, "backend_plugin_doctor: report is NULL");
    memset(out, 0, sizeof *out);
    out->accelerator = "device";
    out->problem = BACKEND_PLUGIN_FAILED;
    if (e == NULL || e->info.budget != BACKEND_BUDGET_PLUGIN) {
        out->status = sw_errorf(SW_ERR_ARG, "backend '%s' has no plugin to check (only pjrt "
                                "has)", name ? name : "(null)");
    } else {
#ifdef SW_HAVE_PJRT
        return backend_pjrt_doctor(out);
#else
        out->problem = BACKEND_PLUGIN_NOT_BUILT;
        out->status = sw_errorf(SW_ERR_UNSUPPORTED, "%s", e->info.why_not);
#endif
    }
    snprintf(out->message, sizeof out->message, "%s", sw_last_error());
    return out->status;
}

const char *backend_default_name(char *note, size_t cap) {
    if (note != NULL && cap > 0)
        note[0] = '\0';
    /* The CUDA backend when this build has it and a device is visible;
     * otherwise the cpu backend, saying why. */
    sw_device_report *rep = malloc(sizeof *rep);
    if (rep == NULL)
        return NULL;
    bool visible = sw_devices_query(rep) == SW_OK;
    free(rep);
    if (visible && CUDA_RUNS)
        return "cuda";
    if (note != NULL && cap > 0)
        snprintf(note, cap, "no device visible (see spillway info --devices), so the cpu "
                 "backend; --backend sim --device-mem SIZE rehearses a device");
    return "cpu";
}

sw_status backend_create(const char *name, const backend_params *p, backend **out) {
    const backend_entry *e = find(name);
    if (out != NULL)
        *out = NULL;
    if (e == NULL)
        return sw_errorf(SW_ERR_ARG, "unknown backend '%s' (cpu, sim, cuda or pjrt)",
                         name ? name : "(null)");
    if (e->create == NULL)
        return sw_errorf(SW_ERR_UNSUPPORTED, "%s", e->info.why_not);
    if (p == NULL || out == NULL)
        return sw_errorf(SW_ERR_ARG, "backend_create: NULL argument");
    if (e->info.budget == BACKEND_BUDGET_GIVEN && p->capacity_bytes == 0)
        return sw_errorf(SW_ERR_ARG, "the simulated device needs a capacity: pass "
                         "--device-mem SIZE (e.g. 512M)");
    return e->create(p, out);
}

#ifdef SW_HAVE_CUDA
#include "backend/cuda/cuda_bandwidth.h"
#include "backend/cuda/cuda_devices.h"
#endif

sw_status sw_devices_query(sw_device_report *report) {
    sw_status st;
    if (report == NULL)
        return sw_errorf(SW_ERR_ARG, "sw_devices_query: report is NULL");
    memset(report, 0, sizeof *report);
#ifdef SW_HAVE_CUDA
    snprintf(report->backend, sizeof report->backend, "cuda");
    st = cuda_devices_query(report);
#else
    st = sw_errorf(SW_ERR_NO_DEVICE,
                   "no CUDA device visible: this build has no CUDA backend (nvcc was not "
                   "found at build time; rebuild with -DSPILLWAY_CUDA=ON after installing "
                   "the CUDA toolkit)");
#endif
    if (st == SW_OK)
        return SW_OK;
    /* Keep report->message and sw_last_error() identical, even if cut. */
    snprintf(report->message, sizeof report->message, "%s", sw_last_error());
    return sw_errorf(st, "%s", report->message);
}

sw_status backend_measure_device(int index, uint64_t bytes, backend_device_rates *out) {
    if (out == NULL || index < 0 || bytes == 0)
        return sw_errorf(SW_ERR_ARG, "backend_measure_device: bad arguments");
    memset(out, 0, sizeof *out);
#ifdef SW_HAVE_CUDA
    sw_status st = cuda_measure_h2d(index, bytes, &out->h2d_pinned_Bps,
                                    &out->h2d_pageable_Bps, &out->device_mem_Bps);
    if (st == SW_OK)
        st = cuda_measure_flops(index, &out->device_flops);
    if (st == SW_OK)
        st = cuda_measure_launch(index, &out->device_op_s);
    if (st == SW_OK)
        st = cuda_measure_decode(index, bytes, out->decode_Bps);
    if (st != SW_OK)
        memset(out, 0, sizeof *out);
    return st;
#else
    return sw_errorf(SW_ERR_NO_DEVICE, "no CUDA device visible: this build has no CUDA "
                     "backend, so device %d cannot be measured", index);
#endif
}
