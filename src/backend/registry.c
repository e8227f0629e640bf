/*
 * registry.c — which backends this build has, device discovery, and the
 * device rate measurements doctor runs (device_rates.h).
 *
 * The only file that mentions SW_HAVE_CUDA (STYLE.md 2): CMake defines it
 * for this file alone when the CUDA backend is compiled in. Everything else
 * asks here instead of testing the macro.
 */
#include <stdio.h>
#include <string.h>

#include "backend/device_rates.h"
#include "util/error.h"

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
