/*
 * bandwidth.cu — host-to-device and device memory bandwidth for doctor (see
 * cuda_bandwidth.h).
 *
 * Timed with events around synchronous cudaMemcpy calls: for pageable
 * memory the runtime stages through its own pinned buffer, and that cost
 * is exactly what a pageable transfer costs the engine, so it belongs in
 * the number. Best of MEASURE_RUNS after one warm-up copy, because the
 * first copy also pays for page faults and DMA mapping.
 */
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_bandwidth.h"
#include "backend/cuda/cuda_common.h"

#define MEASURE_RUNS 3
#define MIB (1024.0 * 1024.0)

/* Best-of-runs seconds for one cudaMemcpy of n bytes. */
static sw_status time_copy(void *dst, const void *src, size_t n, cudaMemcpyKind kind,
                           cudaEvent_t e0, cudaEvent_t e1, double *best_s) {
    SW_CUDA_TRY(cudaMemcpy(dst, src, n, kind));
    *best_s = 0;
    for (int r = 0; r < MEASURE_RUNS; r++) {
        float ms = 0;
        SW_CUDA_TRY(cudaEventRecord(e0, 0));
        SW_CUDA_TRY(cudaMemcpy(dst, src, n, kind));
        SW_CUDA_TRY(cudaEventRecord(e1, 0));
        SW_CUDA_TRY(cudaEventSynchronize(e1));
        SW_CUDA_TRY(cudaEventElapsedTime(&ms, e0, e1));
        double s = ms * 1e-3;
        if (s > 0 && (*best_s == 0 || s < *best_s))
            *best_s = s;
    }
    return SW_OK;
}

/* The test size: bytes capped at a quarter of free device memory (two
 * buffers, and room left for whatever else runs), whole MiB. */
static sw_status test_size(int device, uint64_t bytes, size_t *n) {
    size_t free_b = 0, total_b = 0;
    SW_CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
    uint64_t cap = (uint64_t)free_b / 4;
    uint64_t want = bytes < cap ? bytes : cap;
    want -= want % (1u << 20);
    if (want == 0)
        return sw_errorf(SW_ERR_OOM_DEVICE, "cuda:%d: the bandwidth test needs 2 x 1 MiB of "
                         "device memory (at most a quarter of what is free), but only %.1f MiB "
                         "of %.1f MiB is free", device, (double)free_b / MIB,
                         (double)total_b / MIB);
    *n = (size_t)want;
    return SW_OK;
}

/* Rate for n bytes in s seconds; 0 when the timer saw nothing. */
static double rate(double n, double s) { return s > 0 ? n / s : 0; }

extern "C" sw_status cuda_measure_h2d(int device, uint64_t bytes, double *pinned_Bps,
                                      double *pageable_Bps, double *device_mem_Bps) {
    if (pinned_Bps == NULL || pageable_Bps == NULL || device_mem_Bps == NULL || bytes == 0)
        return sw_errorf(SW_ERR_ARG, "cuda_measure_h2d: bad arguments");
    *pinned_Bps = *pageable_Bps = *device_mem_Bps = 0;
    int prev = -1;
    void *d_a = NULL, *d_b = NULL, *h_pinned = NULL, *h_pageable = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    size_t n = 0;
    double s_pinned = 0, s_pageable = 0, s_d2d = 0;
    sw_status st = sw_cuda_select(device, &prev);
    if (st != SW_OK || (st = test_size(device, bytes, &n)) != SW_OK)
        goto fail;
    if ((st = SW_CUDA_CHECK(cudaMalloc(&d_a, n))) != SW_OK ||
        (st = SW_CUDA_CHECK(cudaMalloc(&d_b, n))) != SW_OK ||
        (st = SW_CUDA_CHECK(cudaMallocHost(&h_pinned, n))) != SW_OK ||
        (st = SW_CUDA_CHECK(cudaEventCreate(&e0))) != SW_OK ||
        (st = SW_CUDA_CHECK(cudaEventCreate(&e1))) != SW_OK)
        goto fail;
    if ((h_pageable = malloc(n)) == NULL) {
        st = sw_errorf(SW_ERR_OOM_HOST, "cuda:%d bandwidth test: cannot allocate %.0f MiB of "
                       "host memory", device, (double)n / MIB);
        goto fail;
    }
    /* Touch every page first, so the timings do not include page faults. */
    memset(h_pinned, 0x5a, n);
    memset(h_pageable, 0x5a, n);
    st = time_copy(d_a, h_pinned, n, cudaMemcpyHostToDevice, e0, e1, &s_pinned);
    if (st == SW_OK)
        st = time_copy(d_a, h_pageable, n, cudaMemcpyHostToDevice, e0, e1, &s_pageable);
    if (st == SW_OK)
        st = time_copy(d_b, d_a, n, cudaMemcpyDeviceToDevice, e0, e1, &s_d2d);
    if (st != SW_OK)
        goto fail;
    *pinned_Bps = rate((double)n, s_pinned);
    *pageable_Bps = rate((double)n, s_pageable);
    *device_mem_Bps = rate(2.0 * (double)n, s_d2d);
fail:
    /* Cleanup errors are ignored: the first failure is the one to report. */
    if (e0 != NULL)
        cudaEventDestroy(e0);
    if (e1 != NULL)
        cudaEventDestroy(e1);
    free(h_pageable);
    cudaFreeHost(h_pinned);
    cudaFree(d_b);
    cudaFree(d_a);
    if (prev >= 0)
        cudaSetDevice(prev);
    (void)cudaGetLastError();
    return st;
}
