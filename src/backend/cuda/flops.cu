/*
 * flops.cu — the f32 compute peak of plain CUDA kernels, for doctor (see
 * cuda_bandwidth.h). Tensor cores are not measured: the planner needs what
 * the backend's own kernels can reach.
 *
 * Every thread runs FLOPS_CHAINS independent fmaf chains so the FMA units
 * never wait on a previous result. a and b come in as arguments so the
 * compiler cannot fold the loop; x -> b / (1 - a) keeps values bounded.
 */
#include "backend/cuda/cuda_bandwidth.h"
#include "backend/cuda/cuda_common.h"

#define FLOPS_CHAINS 8
#define FLOPS_ITERS (1 << 16)      /* ~2 ms on an H100-class device */
#define FLOPS_THREADS 256
#define FLOPS_BLOCKS_PER_SM 4
#define FLOPS_RUNS 3

__global__ void fma_peak_kernel(float *out, int n_iter, float a, float b) {
    float x[FLOPS_CHAINS];
#pragma unroll
    for (int k = 0; k < FLOPS_CHAINS; k++)
        x[k] = (float)threadIdx.x * 1e-3f + (float)k;
    for (int i = 0; i < n_iter; i++) {
#pragma unroll
        for (int k = 0; k < FLOPS_CHAINS; k++)
            x[k] = fmaf(x[k], a, b);
    }
    float s = 0;
#pragma unroll
    for (int k = 0; k < FLOPS_CHAINS; k++)
        s += x[k];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

/* Launches the kernel once and returns its time in seconds via events. */
static sw_status run_once(float *out, int n_blocks, cudaEvent_t e0, cudaEvent_t e1, double *s) {
    float ms = 0;
    SW_CUDA_TRY(cudaEventRecord(e0, 0));
    fma_peak_kernel<<<n_blocks, FLOPS_THREADS>>>(out, FLOPS_ITERS, 0.9999f, 1e-4f);
    SW_CUDA_TRY(cudaGetLastError());
    SW_CUDA_TRY(cudaEventRecord(e1, 0));
    SW_CUDA_TRY(cudaEventSynchronize(e1));
    SW_CUDA_TRY(cudaEventElapsedTime(&ms, e0, e1));
    *s = ms * 1e-3;
    return SW_OK;
}

extern "C" sw_status cuda_measure_flops(int device, double *flops) {
    if (flops == NULL)
        return sw_errorf(SW_ERR_ARG, "cuda_measure_flops: flops is NULL");
    *flops = 0;
    int count = 0, prev = -1, n_sm = 0;
    float *out = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    double best = 0, s = 0;
    SW_CUDA_TRY(cudaGetDeviceCount(&count));
    if (device < 0 || device >= count)
        return sw_errorf(SW_ERR_NO_DEVICE, "no CUDA device visible as cuda:%d (%d visible)",
                         device, count);
    SW_CUDA_TRY(cudaGetDevice(&prev));
    sw_status st = SW_CUDA_CHECK(cudaSetDevice(device));
    if (st != SW_OK ||
        (st = SW_CUDA_CHECK(cudaDeviceGetAttribute(&n_sm, cudaDevAttrMultiProcessorCount,
                                                   device))) != SW_OK)
        goto fail;
    {
        int n_blocks = (n_sm > 0 ? n_sm : 1) * FLOPS_BLOCKS_PER_SM;
        size_t out_bytes = (size_t)n_blocks * FLOPS_THREADS * sizeof(float);
        if ((st = SW_CUDA_CHECK(cudaMalloc((void **)&out, out_bytes))) != SW_OK ||
            (st = SW_CUDA_CHECK(cudaEventCreate(&e0))) != SW_OK ||
            (st = SW_CUDA_CHECK(cudaEventCreate(&e1))) != SW_OK ||
            (st = run_once(out, n_blocks, e0, e1, &s)) != SW_OK)   /* warm-up */
            goto fail;
        for (int r = 0; r < FLOPS_RUNS; r++) {
            if ((st = run_once(out, n_blocks, e0, e1, &s)) != SW_OK)
                goto fail;
            double work = 2.0 * FLOPS_CHAINS * (double)FLOPS_ITERS * n_blocks * FLOPS_THREADS;
            if (s > 0 && work / s > best)
                best = work / s;
        }
    }
    *flops = best;
fail:
    if (e0 != NULL)
        cudaEventDestroy(e0);
    if (e1 != NULL)
        cudaEventDestroy(e1);
    cudaFree(out);
    if (prev >= 0)
        cudaSetDevice(prev);
    (void)cudaGetLastError();
    return st;
}
