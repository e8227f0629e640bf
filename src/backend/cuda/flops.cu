/*
 * flops.cu — for doctor (see cuda_bandwidth.h): the rate the backend's own
 * prefill matmul reaches (what the planner's compute term divides by: a
 * datasheet peak would promise what no kernel here delivers), the rates
 * its decode matvec streams float and block-quantized weights at (the
 * kernels, not the copy engine, bound a layer's decode), and the least
 * time a device op costs (launch and dispatch).
 *
 * The matmul is ck_gemm (tensor cores, the default TF32x3 mode) over a
 * bf16 weight of GEMM_N x GEMM_N random values and GEMM_T tokens, timed
 * with events, best of a few after a warm-up.
 */
#include <stdlib.h>
#include <time.h>

#include "backend/cuda/cuda_bandwidth.h"
#include "backend/cuda/cuda_common.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/qblock.h"

extern "C" {
#include "quant/random.h"
#include "quant/types.h"
}

#define GEMM_N 4096
#define GEMM_T 512
#define GEMM_RUNS 3

/* Random bf16 weights and f32 activations in [-1, 1) (never zeros: they
 * run faster than real data). Host buffers, freed by the caller. */
static bool random_inputs(uint16_t **w, float **x) {
    const uint64_t wb = (uint64_t)GEMM_N * GEMM_N * 2, xb = (uint64_t)GEMM_T * GEMM_N * 4;
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    *w = (uint16_t *)malloc((size_t)wb);
    *x = (float *)malloc((size_t)xb);
    if (*w == NULL || *x == NULL)
        return false;
    quant_fill_random(QB_BF16, (uint8_t *)*w, wb, &seed);
    quant_fill_random(QB_F32, (uint8_t *)*x, xb, &seed);
    return true;
}

static sw_status time_gemm(const ck_weight *w, const float *x, float *y, cudaStream_t s,
                           cudaEvent_t e0, cudaEvent_t e1, double *best_s) {
    *best_s = 0;
    SW_TRY(ck_gemm(s, w, x, y, GEMM_T, true)); /* warm-up */
    for (int r = 0; r < GEMM_RUNS; r++) {
        float ms = 0;
        SW_CUDA_TRY(cudaEventRecord(e0, s));
        SW_TRY(ck_gemm(s, w, x, y, GEMM_T, true));
        SW_CUDA_TRY(cudaEventRecord(e1, s));
        SW_CUDA_TRY(cudaEventSynchronize(e1));
        SW_CUDA_TRY(cudaEventElapsedTime(&ms, e0, e1));
        if (ms > 0 && (*best_s == 0 || ms * 1e-3 < *best_s))
            *best_s = ms * 1e-3;
    }
    return SW_OK;
}

extern "C" sw_status cuda_measure_flops(int device, double *flops) {
    if (flops == NULL)
        return sw_errorf(SW_ERR_ARG, "cuda_measure_flops: flops is NULL");
    *flops = 0;
    int prev = -1;
    uint16_t *hw = NULL;
    float *hx = NULL, *dx = NULL, *dy = NULL;
    uint8_t *dw = NULL;
    cudaStream_t s = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    double best = 0;
    sw_status st = sw_cuda_select(device, &prev);
    const size_t wb = (size_t)GEMM_N * GEMM_N * 2, xb = (size_t)GEMM_T * GEMM_N * 4;
    if (st == SW_OK && !random_inputs(&hw, &hx))
        st = sw_errorf(SW_ERR_OOM_HOST, "cuda_measure_flops: out of host memory");
    if (st != SW_OK || (st = SW_CUDA_CHECK(cudaMalloc((void **)&dw, wb))) != SW_OK ||
        (st = SW_CUDA_CHECK(cudaMalloc((void **)&dx, xb))) != SW_OK ||
        (st = SW_CUDA_CHECK(cudaMalloc((void **)&dy, xb))) != SW_OK ||
        (st = SW_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking))) != SW_OK ||
        (st = SW_CUDA_CHECK(cudaEventCreate(&e0))) != SW_OK ||
        (st = SW_CUDA_CHECK(cudaEventCreate(&e1))) != SW_OK ||
        (st = SW_CUDA_CHECK(cudaMemcpy(dw, hw, wb, cudaMemcpyHostToDevice))) != SW_OK ||
        (st = SW_CUDA_CHECK(cudaMemcpy(dx, hx, xb, cudaMemcpyHostToDevice))) != SW_OK ||
        (st = ck_gemm_init()) != SW_OK)
        goto fail;
    {
        const ck_weight w = {.data = dw, .type = QB_BF16, .ne0 = GEMM_N, .ne1 = GEMM_N,
                             .row_bytes = (uint64_t)GEMM_N * 2};
        if ((st = time_gemm(&w, dx, dy, s, e0, e1, &best)) == SW_OK && best > 0)
            *flops = 2.0 * GEMM_N * (double)GEMM_N * GEMM_T / best;
    }
fail:
    if (e0 != NULL)
        cudaEventDestroy(e0);
    if (e1 != NULL)
        cudaEventDestroy(e1);
    if (s != NULL)
        cudaStreamDestroy(s);
    cudaFree(dy);
    cudaFree(dx);
    cudaFree(dw);
    free(hw);
    free(hx);
    if (prev >= 0)
        cudaSetDevice(prev);
    (void)cudaGetLastError();
    return st;
}

__global__ void empty_kernel(void) {}

#define LAUNCH_N 2000

/* Seconds for LAUNCH_N launches on `s`, submission to completion. */
static sw_status time_launches(cudaStream_t s, double *sec) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < LAUNCH_N; i++)
        empty_kernel<<<1, 32, 0, s>>>();
    SW_CUDA_TRY(cudaGetLastError());
    SW_CUDA_TRY(cudaStreamSynchronize(s));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    *sec = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    return SW_OK;
}

extern "C" sw_status cuda_measure_launch(int device, double *op_s) {
    if (op_s == NULL)
        return sw_errorf(SW_ERR_ARG, "cuda_measure_launch: op_s is NULL");
    *op_s = 0;
    int prev = -1;
    cudaStream_t s = NULL;
    double best = 0, sec = 0;
    sw_status st = sw_cuda_select(device, &prev);
    if (st == SW_OK)
        st = SW_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (int r = 0; st == SW_OK && r < 4; r++) { /* the first run is a warm-up */
        st = time_launches(s, &sec);
        if (st == SW_OK && r > 0 && (best == 0 || sec < best))
            best = sec;
    }
    if (st == SW_OK)
        *op_s = best / LAUNCH_N;
    if (s != NULL)
        cudaStreamDestroy(s);
    if (prev >= 0)
        cudaSetDevice(prev);
    (void)cudaGetLastError();
    return st;
}

/* ---- decode matvec rate ------------------------------------------------------ */

#define DECODE_COLS 8192
#define DECODE_RUNS 5

/* Weight bytes per second of ck_matvec over about `bytes` of `type`. */
static sw_status time_decode(uint32_t type, uint64_t bytes, cudaStream_t s, cudaEvent_t e0,
                             cudaEvent_t e1, double *Bps) {
    uint32_t elems, bb;
    qb_geometry(type, &elems, &bb);
    const uint64_t row_bytes = DECODE_COLS / elems * bb, rows = bytes / row_bytes + 1;
    const uint64_t n = rows * row_bytes;
    uint64_t seed = 0x2545f4914f6cdd1dull + type;
    uint8_t *hw = (uint8_t *)malloc((size_t)n), *dw = NULL;
    float *dx = NULL, *dy = NULL, *hx = (float *)malloc(DECODE_COLS * sizeof(float));
    sw_status st = hw && hx ? SW_OK : sw_errorf(SW_ERR_OOM_HOST, "doctor: out of host memory");
    *Bps = 0;
    if (st == SW_OK) {
        quant_fill_random(type, hw, n, &seed);
        quant_fill_random(QB_F32, (uint8_t *)hx, DECODE_COLS * sizeof(float), &seed);
    }
    if (st != SW_OK || (st = SW_CUDA_CHECK(cudaMalloc((void **)&dw, n))) != SW_OK ||
        (st = SW_CUDA_CHECK(cudaMalloc((void **)&dx, DECODE_COLS * sizeof(float)))) != SW_OK ||
        (st = SW_CUDA_CHECK(cudaMalloc((void **)&dy, rows * sizeof(float)))) != SW_OK ||
        (st = SW_CUDA_CHECK(cudaMemcpy(dw, hw, n, cudaMemcpyHostToDevice))) != SW_OK ||
        (st = SW_CUDA_CHECK(cudaMemcpy(dx, hx, DECODE_COLS * sizeof(float),
                                       cudaMemcpyHostToDevice))) != SW_OK)
        goto done;
    {
        const ck_weight w = {.data = dw, .type = type, .ne0 = DECODE_COLS, .ne1 = rows,
                             .row_bytes = row_bytes};
        for (int r = -1; st == SW_OK && r < DECODE_RUNS; r++) { /* r < 0: warm-up */
            float ms = 0;
            if ((st = SW_CUDA_CHECK(cudaEventRecord(e0, s))) != SW_OK ||
                (st = ck_matvec(s, &w, dx, dy, 1)) != SW_OK ||
                (st = SW_CUDA_CHECK(cudaEventRecord(e1, s))) != SW_OK ||
                (st = SW_CUDA_CHECK(cudaEventSynchronize(e1))) != SW_OK ||
                (st = SW_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1))) != SW_OK)
                break;
            if (r >= 0 && ms > 0 && (double)n / (ms * 1e-3) > *Bps)
                *Bps = (double)n / (ms * 1e-3);
        }
    }
done:
    cudaFree(dy);
    cudaFree(dx);
    cudaFree(dw);
    free(hw);
    free(hx);
    return st;
}

extern "C" sw_status cuda_measure_decode(int device, uint64_t bytes,
                                         double Bps[SW_DOCTOR_DECODE_TYPES]) {
    if (Bps == NULL || bytes == 0)
        return sw_errorf(SW_ERR_ARG, "cuda_measure_decode: bad arguments");
    for (int i = 0; i < SW_DOCTOR_DECODE_TYPES; i++)
        Bps[i] = 0;
    int prev = -1;
    size_t free_b = 0, total_b = 0;
    cudaStream_t s = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    sw_status st = sw_cuda_select(device, &prev);
    if (st == SW_OK && (st = SW_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b))) == SW_OK &&
        (st = SW_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking))) == SW_OK &&
        (st = SW_CUDA_CHECK(cudaEventCreate(&e0))) == SW_OK &&
        (st = SW_CUDA_CHECK(cudaEventCreate(&e1))) == SW_OK) {
        const uint64_t want = bytes < free_b / 4 ? bytes : free_b / 4;
        for (int i = 0; st == SW_OK && i < SW_DOCTOR_DECODE_TYPES; i++)
            st = time_decode(type_decode_type(i), want, s, e0, e1, &Bps[i]);
    }
    if (e0 != NULL)
        cudaEventDestroy(e0);
    if (e1 != NULL)
        cudaEventDestroy(e1);
    if (s != NULL)
        cudaStreamDestroy(s);
    if (prev >= 0)
        cudaSetDevice(prev);
    (void)cudaGetLastError();
    return st;
}
