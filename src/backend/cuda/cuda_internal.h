/*
 * cuda_internal.h — the CUDA backend's state, shared by its .cu files:
 *   cuda_backend.cu  creation, memory (cudaMalloc of exactly what is asked,
 *                    against the budget), pinned host memory, copies,
 *                    events, statistics
 *   cuda_timing.cu   the copy queue's busy time and the compute queue's
 *                    waits, measured with timing events
 *   cuda_ops.cu      submit: operand checks and the kernel of each op; the
 *                    block entry: one layer with fused steps
 *   cuda_q8.cu       which decode matmuls take the integer path
 * C++ with CUDA types; never included from C.
 */
#ifndef SW_BACKEND_CUDA_INTERNAL_H
#define SW_BACKEND_CUDA_INTERNAL_H

#include <pthread.h>

#include <cuda_runtime.h>

extern "C" {
#include "backend/backend.h"
#include "backend/backend_params.h"
#include "backend/block.h"
}
#include "backend/cuda/cuda_kernels.h"

/* What a backend_buf is here: one cudaMalloc. */
#define CUDA_BUF_MAGIC 0x4355444142554601ull
typedef struct cuda_buf {
    uint64_t magic;          /* CUDA_BUF_MAGIC: other backends' buffers are refused */
    uint8_t *ptr;            /* device memory */
    uint64_t bytes;
    char purpose[48];
} cuda_buf;

/* Timing events around copies (busy) and waits (stall), read back once
 * they have passed (cuda_timing.cu). */
#define CUDA_TIMING_PAIRS 256
typedef struct cuda_timing {
    cudaEvent_t start[CUDA_TIMING_PAIRS], end[CUDA_TIMING_PAIRS];
    bool is_stall[CUDA_TIMING_PAIRS];
    uint32_t head, count;    /* pending pairs: a FIFO over the arrays */
    double busy_s, stall_s;
} cuda_timing;

typedef struct cuda_backend {
    backend base;                  /* what callers hold; impl points back here */
    int device;
    char device_name[128];
    cudaStream_t stream[BQ_COUNT];
    ck_gemm_mode gemm_mode;
    ck_q8 q8;                      /* the integer decode path; scratch NULL: off */
    backend_buf *q8_buf;           /* its scratch, counted against the budget */
    ck_attn_split attn;            /* flash-decoding's parts (attention.cu) */
    backend_buf *attn_buf;         /* their scratch, counted against the budget */
    pthread_mutex_t mu;            /* guards everything below */
    uint64_t capacity_bytes;       /* the plan's budget */
    uint64_t in_use_bytes, peak_bytes, n_allocs;
    uint64_t bytes_to_device;
    uint64_t peer_bytes;           /* copied in from another GPU (a split's hops) */
    uint64_t peer_checked;         /* bit d: peer access from device d was tried */
    size_t free_at_start;          /* cudaMemGetInfo before the first buffer */
    uint64_t driver_peak_bytes;    /* largest free_at_start - free seen after an alloc */
    cuda_timing timing;
} cuda_backend;

/* The backend behind b, with its device made the calling thread's current
 * one: a split over several GPUs drives one backend per device from one
 * thread, and every entry point starts here. */
static inline cuda_backend *cuda_of(backend *b) {
    cuda_backend *c = (cuda_backend *)b->impl;
    int cur = -1;
    if (cudaGetDevice(&cur) != cudaSuccess || cur != c->device)
        (void)cudaSetDevice(c->device);
    return c;
}

/* The live buffer behind m, with [off, off + bytes) inside it; *ptr gets
 * the device address. Errors: SW_ERR_ARG naming `what`. */
sw_status cuda_resolve(const char *what, bmem m, uint64_t bytes, uint8_t **ptr);

/* cuda_q8.cu: the integer path's scratch (at creation, unless exact dots
 * or SPILLWAY_CUDA_DOTS=f32), and the matmuls through it where it reads
 * the weight, else through the f32 kernels. */
sw_status cuda_q8_init(cuda_backend *c, const backend_params *p);
sw_status cuda_mm(cuda_backend *c, const ck_weight *w, const float *x, float *y, uint32_t n,
                  bool fine);
sw_status cuda_mm_multi(cuda_backend *c, const ck_mv_multi *mm, const float *x, uint32_t n);
sw_status cuda_mm_geglu(cuda_backend *c, const ck_weight *wg, const ck_weight *wu,
                        const float *x, float *gate, uint32_t n);

/* cuda_ops.cu */
sw_status cuda_submit(backend *b, const bop *op);
sw_status cuda_block(backend *b, const block_args *a);

/* cuda_timing.cu (callers hold c->mu). Errors: the CUDA call's. */
sw_status cuda_timing_init(cuda_timing *t);
void cuda_timing_destroy(cuda_timing *t);
/* Records a start event on `s` and returns its pair index in *pair
 * (harvesting, or waiting for, the oldest pair when all are in use). */
sw_status cuda_timing_begin(cuda_timing *t, cudaStream_t s, bool is_stall, uint32_t *pair);
sw_status cuda_timing_end(cuda_timing *t, cudaStream_t s, uint32_t pair);
/* Adds up every pair that has passed (wait: every pair, blocking). */
void cuda_timing_harvest(cuda_timing *t, bool wait);

#endif
