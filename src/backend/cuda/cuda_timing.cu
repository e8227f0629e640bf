/*
 * cuda_timing.cu — what the report calls link busy time and compute stall
 * (backend_stats.copy_busy_s, wait_stall_s), measured on the device.
 *
 * A copy on the copy queue is bracketed by two timing events: the time
 * between them is the link at work (the start event passes once the
 * queue's earlier work, waits included, is done). A wait of the compute
 * queue for another queue's event is bracketed the same way on the compute
 * queue: the time between the event before the wait and the one after it
 * is how long compute sat idle for the copy. Pairs sit in a FIFO and are
 * added up once passed, without blocking, whenever new ones are made or
 * statistics are read; only a full FIFO makes the host wait for its
 * oldest pair.
 */
#include "backend/cuda/cuda_common.h"
#include "backend/cuda/cuda_internal.h"

sw_status cuda_timing_init(cuda_timing *t) {
    memset(t, 0, sizeof *t);
    for (uint32_t i = 0; i < CUDA_TIMING_PAIRS; i++) {
        SW_CUDA_TRY(cudaEventCreate(&t->start[i]));
        SW_CUDA_TRY(cudaEventCreate(&t->end[i]));
    }
    return SW_OK;
}

void cuda_timing_destroy(cuda_timing *t) {
    for (uint32_t i = 0; i < CUDA_TIMING_PAIRS; i++) {
        if (t->start[i] != NULL)
            cudaEventDestroy(t->start[i]);
        if (t->end[i] != NULL)
            cudaEventDestroy(t->end[i]);
    }
    memset(t, 0, sizeof *t);
}

/* Adds the oldest pair if it has passed (or, with wait, once it has). */
static bool take_oldest(cuda_timing *t, bool wait) {
    const uint32_t i = t->head;
    cudaError_t err = wait ? cudaEventSynchronize(t->end[i]) : cudaEventQuery(t->end[i]);
    if (err == cudaErrorNotReady)
        return false;
    float ms = 0;
    if (err == cudaSuccess && cudaEventElapsedTime(&ms, t->start[i], t->end[i]) == cudaSuccess) {
        if (t->is_stall[i])
            t->stall_s += ms * 1e-3;
        else
            t->busy_s += ms * 1e-3;
    }
    (void)cudaGetLastError(); /* a failed pair is dropped; the work's error surfaces at sync */
    t->head = (t->head + 1) % CUDA_TIMING_PAIRS;
    t->count--;
    return true;
}

void cuda_timing_harvest(cuda_timing *t, bool wait) {
    while (t->count > 0 && take_oldest(t, wait))
        ;
}

sw_status cuda_timing_begin(cuda_timing *t, cudaStream_t s, bool is_stall, uint32_t *pair) {
    cuda_timing_harvest(t, false);
    if (t->count == CUDA_TIMING_PAIRS)
        take_oldest(t, true);
    const uint32_t i = (t->head + t->count) % CUDA_TIMING_PAIRS;
    SW_CUDA_TRY(cudaEventRecord(t->start[i], s));
    t->is_stall[i] = is_stall;
    *pair = i;
    return SW_OK;
}

sw_status cuda_timing_end(cuda_timing *t, cudaStream_t s, uint32_t pair) {
    SW_CUDA_TRY(cudaEventRecord(t->end[pair], s));
    t->count++;
    return SW_OK;
}
