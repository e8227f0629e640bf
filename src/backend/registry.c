/*
 * registry.c — which backends this build has, and device discovery.
 *
 * The only file that mentions SW_HAVE_CUDA (STYLE.md 2): CMake defines it
 * for this file alone when the CUDA backend is compiled in. Everything else
 * asks here instead of testing the macro.
 */
#include <stdio.h>
#include <string.h>

#include "util/error.h"

#ifdef SW_HAVE_CUDA
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
