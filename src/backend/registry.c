/*
 * registry.c — which backends this build has and how to make them by name
 * (registry.h, backend_create), device discovery, and the device rate
 * measurements doctor runs (device_rates.h).
 *
 * The only file that mentions SW_HAVE_CUDA (STYLE.md 2): CMake defines it
 * for this file alone when the CUDA backend is compiled in. Everything else
 * asks here instead of testing the macro, and nothing else compares
 * backend names.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/device_rates.h"
#include "backend/registry.h"
#include "util/error.h"

typedef struct backend_entry {
    backend_info info;
    sw_status (*create)(const backend_params *p, backend **out); /* NULL: !info.runs */
} backend_entry;

static const backend_entry entries[] = {
    {{"cpu", false, false, false, true, NULL}, backend_cpu_create},
    {{"sim", true, true, false, true, NULL}, backend_sim_create},
    {{"cuda", true, false, true, false,
      "the CUDA backend's kernels are not built yet; plan for the card with "
      "'spillway plan --backend cuda', or rehearse its budget with --backend sim "
      "--device-mem SIZE"}, NULL},
    {{"pjrt", true, false, false, false,
      "the PJRT backend is not built yet; rehearse a device budget with --backend sim "
      "--device-mem SIZE"}, NULL},
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

const char *backend_default_name(char *note, size_t cap) {
    if (note != NULL && cap > 0)
        note[0] = '\0';
    /* A device backend becomes the default once it runs plans; until then
     * a visible GPU is worth a remark, not a plan the engine cannot run. */
    sw_device_report *rep = malloc(sizeof *rep);
    bool visible = rep != NULL && sw_devices_query(rep) == SW_OK;
    free(rep);
    if (note != NULL && cap > 0)
        snprintf(note, cap, visible
                 ? "a CUDA device is visible but its backend is not built yet, so the cpu "
                   "backend; --backend cuda plans for the card, --backend sim rehearses it"
                 : "no device visible (see spillway info --devices), so the cpu backend; "
                   "--backend sim --device-mem SIZE rehearses a device");
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
    if (e->info.capacity_is_budget && p->capacity_bytes == 0)
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
    report->cuda_compiled = 1;
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
    if (st != SW_OK)
        memset(out, 0, sizeof *out);
    return st;
#else
    return sw_errorf(SW_ERR_NO_DEVICE, "no CUDA device visible: this build has no CUDA "
                     "backend, so device %d cannot be measured", index);
#endif
}
