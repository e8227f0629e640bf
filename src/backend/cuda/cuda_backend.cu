/*
 * cuda_backend.cu — an NVIDIA GPU behind the backend interface: device
 * memory, pinned host memory, the two queues as two CUDA streams, events,
 * and statistics; the ops and the block entry are cuda_ops.cu's.
 *
 * Memory is exactly what the engine asks for: one cudaMalloc per buffer
 * (never managed memory, never "all free memory"), counted against the
 * budget the plan was made with. A request past the budget, or one the
 * driver refuses (cudaErrorMemoryAllocation: another process took memory
 * since the plan measured it), is SW_ERR_OOM_DEVICE naming the buffer,
 * the bytes, the budget and what is in use, so runtime/launch.c re-plans
 * as it does for the simulated device. Besides its own accounting, the
 * backend reads cudaMemGetInfo after each allocation: the driver's view
 * of what the process took (allocation granularity included), reported
 * as driver_peak_bytes.
 *
 * Queues: BQ_COMPUTE and BQ_COPY are non-blocking streams; an event is a
 * cudaEvent_t without timing, so marks, waits and host syncs are the
 * runtime's own. Asynchronous kernel faults surface as SW_ERR_DEVICE at
 * the next sync or event sync, with CUDA's name for them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_common.h"
#include "backend/cuda/cuda_devices.h"
#include "backend/cuda/cuda_internal.h"

#define MIB (1024.0 * 1024.0)

char sw_cuda_lost[256];

static cuda_buf *cbuf(backend_buf *b) { return (cuda_buf *)(void *)b; }

sw_status cuda_resolve(const char *what, bmem m, uint64_t bytes, uint8_t **ptr) {
    cuda_buf *b = cbuf(m.buf);
    if (b == NULL || b->magic != CUDA_BUF_MAGIC)
        return sw_errorf(SW_ERR_ARG, "cuda: %s: memory that is not a live device allocation",
                         what);
    if (m.off > b->bytes || bytes > b->bytes - m.off)
        return sw_errorf(SW_ERR_ARG, "cuda: %s: %llu bytes at offset %llu overrun '%s' (%llu "
                         "bytes)", what, (unsigned long long)bytes, (unsigned long long)m.off,
                         b->purpose, (unsigned long long)b->bytes);
    *ptr = b->ptr + m.off;
    return SW_OK;
}

/* ---- memory ----------------------------------------------------------------- */

static sw_status oom(cuda_backend *c, uint64_t bytes, const char *purpose, const char *why) {
    return sw_errorf(SW_ERR_OOM_DEVICE, "%s out of memory: requested %llu bytes (%.1f MiB) for "
                     "'%s', budget %llu (%.1f MiB), in use %llu (%.1f MiB)%s", c->device_name,
                     (unsigned long long)bytes, (double)bytes / MIB, purpose,
                     (unsigned long long)c->capacity_bytes, (double)c->capacity_bytes / MIB,
                     (unsigned long long)c->in_use_bytes, (double)c->in_use_bytes / MIB, why);
}

/* Notes the driver's view of this process's device memory. */
static void note_driver_use(cuda_backend *c) {
    size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
        (void)cudaGetLastError();
        return;
    }
    uint64_t used = c->free_at_start > free_b ? (uint64_t)(c->free_at_start - free_b) : 0;
    if (used > c->driver_peak_bytes)
        c->driver_peak_bytes = used;
}

static sw_status cuda_alloc(backend *b, uint64_t bytes, const char *purpose, backend_buf **out) {
    cuda_backend *c = cuda_of(b);
    const char *p = purpose ? purpose : "?";
    *out = NULL;
    if (bytes == 0)
        return SW_OK;
    SW_TRY(sw_cuda_alive());
    cuda_buf *buf = (cuda_buf *)calloc(1, sizeof *buf);
    if (buf == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "cuda: out of host memory for a buffer record");
    pthread_mutex_lock(&c->mu);
    sw_status st = SW_OK;
    if (bytes > c->capacity_bytes - c->in_use_bytes || c->in_use_bytes > c->capacity_bytes) {
        st = oom(c, bytes, p, "");
    } else {
        cudaError_t err = cudaMalloc((void **)&buf->ptr, (size_t)bytes);
        if (err == cudaErrorMemoryAllocation) {
            (void)cudaGetLastError();
            size_t free_b = 0, total_b = 0;
            cudaMemGetInfo(&free_b, &total_b);
            char why[160];
            snprintf(why, sizeof why, "; the driver refused it (%.1f MiB free of %.1f MiB: "
                     "another process may hold the device)", (double)free_b / MIB,
                     (double)total_b / MIB);
            st = oom(c, bytes, p, why);
        } else if (err != cudaSuccess) {
            st = sw_cuda_check(err, "cudaMalloc", __FILE__, __LINE__);
        }
    }
    if (st == SW_OK) {
        c->in_use_bytes += bytes;
        c->peak_bytes = c->in_use_bytes > c->peak_bytes ? c->in_use_bytes : c->peak_bytes;
        c->n_allocs++;
        note_driver_use(c);
    }
    pthread_mutex_unlock(&c->mu);
    if (st != SW_OK) {
        free(buf);
        return st;
    }
    buf->magic = CUDA_BUF_MAGIC;
    buf->bytes = bytes;
    snprintf(buf->purpose, sizeof buf->purpose, "%s", p);
    *out = (backend_buf *)(void *)buf;
    return SW_OK;
}

static void cuda_free(backend *b, backend_buf *handle) {
    cuda_backend *c = cuda_of(b);
    cuda_buf *buf = cbuf(handle);
    if (buf == NULL)
        return;
    pthread_mutex_lock(&c->mu);
    c->in_use_bytes -= buf->bytes <= c->in_use_bytes ? buf->bytes : c->in_use_bytes;
    pthread_mutex_unlock(&c->mu);
    cudaFree(buf->ptr);
    (void)cudaGetLastError();
    buf->magic = 0;
    free(buf);
}

static sw_status cuda_host_alloc_pinned(backend *b, uint64_t bytes, void **out) {
    (void)b;
    *out = NULL;
    cudaError_t err = cudaHostAlloc(out, (size_t)bytes, cudaHostAllocDefault);
    if (err == cudaSuccess)
        return SW_OK;
    (void)cudaGetLastError();
    *out = NULL;
    return sw_errorf(SW_ERR_OOM_HOST, "cudaHostAlloc refused %.1f MiB of pinned host memory for "
                     "the streamed layers (%s); lower --host-mem so the plan streams from the "
                     "file mapping", (double)bytes / MIB, cudaGetErrorString(err));
}

static void cuda_host_free_pinned(backend *b, void *ptr) {
    (void)b;
    if (ptr != NULL)
        cudaFreeHost(ptr);
    (void)cudaGetLastError();
}

/* The expert cache's copies read the file mapping in place: read-only
 * registration where the card supports it (a PROT_READ mapping cannot be
 * registered writable). */
static sw_status cuda_host_register(backend *b, void *ptr, uint64_t bytes) {
    cuda_backend *c = cuda_of(b);
    int read_only = 0;
    if (cudaDeviceGetAttribute(&read_only, cudaDevAttrHostRegisterReadOnlySupported,
                               c->device) != cudaSuccess)
        read_only = 0;
    cudaError_t err = cudaHostRegister(ptr, (size_t)bytes, read_only ? cudaHostRegisterReadOnly
                                                                     : cudaHostRegisterDefault);
    if (err == cudaSuccess)
        return SW_OK;
    (void)cudaGetLastError();
    return sw_errorf(SW_ERR_UNSUPPORTED, "cudaHostRegister refused %.1f MiB of the mapping (%s)",
                     (double)bytes / MIB, cudaGetErrorString(err));
}

static void cuda_host_unregister(backend *b, void *ptr) {
    (void)b;
    if (ptr != NULL)
        cudaHostUnregister(ptr);
    (void)cudaGetLastError();
}

/* ---- copies -------------------------------------------------------------------- */

static sw_status check_queue(backend_queue q) {
    return q == BQ_COMPUTE || q == BQ_COPY ? SW_OK
                                           : sw_errorf(SW_ERR_ARG, "cuda: no queue %d", (int)q);
}

static sw_status cuda_copy_h2d(backend *b, backend_queue q, bmem dst, const void *src,
                               uint64_t bytes) {
    cuda_backend *c = cuda_of(b);
    uint8_t *d = NULL;
    if (bytes == 0)
        return SW_OK;
    SW_TRY(sw_cuda_alive());
    SW_TRY(check_queue(q));
    if (src == NULL)
        return sw_errorf(SW_ERR_ARG, "cuda: copy of %llu bytes from NULL",
                         (unsigned long long)bytes);
    SW_TRY(cuda_resolve("copy to device", dst, bytes, &d));
    pthread_mutex_lock(&c->mu);
    uint32_t pair = 0;
    const bool timed = q == BQ_COPY;
    sw_status st = timed ? cuda_timing_begin(&c->timing, c->stream[q], false, &pair) : SW_OK;
    if (st == SW_OK)
        st = SW_CUDA_CHECK(cudaMemcpyAsync(d, src, (size_t)bytes, cudaMemcpyHostToDevice,
                                           c->stream[q]));
    if (st == SW_OK && timed)
        st = cuda_timing_end(&c->timing, c->stream[q], pair);
    if (st == SW_OK)
        c->bytes_to_device += bytes;
    pthread_mutex_unlock(&c->mu);
    return st;
}

static sw_status cuda_copy_d2h(backend *b, backend_queue q, void *dst, bmem src,
                               uint64_t bytes) {
    cuda_backend *c = cuda_of(b);
    uint8_t *s = NULL;
    if (bytes == 0)
        return SW_OK;
    SW_TRY(sw_cuda_alive());
    SW_TRY(check_queue(q));
    if (dst == NULL)
        return sw_errorf(SW_ERR_ARG, "cuda: copy of %llu bytes to NULL",
                         (unsigned long long)bytes);
    SW_TRY(cuda_resolve("copy to host", src, bytes, &s));
    return SW_CUDA_CHECK(cudaMemcpyAsync(dst, s, (size_t)bytes, cudaMemcpyDeviceToHost,
                                         c->stream[q]));
}

/* ---- events -------------------------------------------------------------------- */

static cudaEvent_t cev(backend_event *e) { return (cudaEvent_t)(void *)e; }

static sw_status cuda_event_create(backend *b, backend_event **out) {
    (void)b;
    cudaEvent_t e = NULL;
    *out = NULL;
    SW_CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    *out = (backend_event *)(void *)e;
    return SW_OK;
}

static void cuda_event_destroy(backend *b, backend_event *ev) {
    (void)b;
    if (ev != NULL)
        cudaEventDestroy(cev(ev));
}

static sw_status cuda_event_record(backend *b, backend_event *ev, backend_queue q) {
    if (ev == NULL)
        return sw_errorf(SW_ERR_ARG, "cuda: event_record with a NULL event");
    SW_TRY(check_queue(q));
    return SW_CUDA_CHECK(cudaEventRecord(cev(ev), cuda_of(b)->stream[q]));
}

/* A compute-queue wait is timed: how long compute sat idle for a copy. */
static sw_status cuda_queue_wait(backend *b, backend_queue q, backend_event *ev) {
    cuda_backend *c = cuda_of(b);
    if (ev == NULL)
        return sw_errorf(SW_ERR_ARG, "cuda: queue_wait with a NULL event");
    SW_TRY(check_queue(q));
    pthread_mutex_lock(&c->mu);
    uint32_t pair = 0;
    const bool timed = q == BQ_COMPUTE;
    sw_status st = timed ? cuda_timing_begin(&c->timing, c->stream[q], true, &pair) : SW_OK;
    if (st == SW_OK)
        st = SW_CUDA_CHECK(cudaStreamWaitEvent(c->stream[q], cev(ev), 0));
    if (st == SW_OK && timed)
        st = cuda_timing_end(&c->timing, c->stream[q], pair);
    pthread_mutex_unlock(&c->mu);
    return st;
}

static sw_status cuda_event_sync(backend *b, backend_event *ev) {
    (void)b;
    if (ev == NULL)
        return sw_errorf(SW_ERR_ARG, "cuda: event_sync on a NULL event");
    SW_TRY(sw_cuda_alive());
    return SW_CUDA_CHECK(cudaEventSynchronize(cev(ev)));
}

static sw_status cuda_sync(backend *b) {
    cuda_backend *c = cuda_of(b);
    SW_TRY(sw_cuda_alive());
    for (int q = 0; q < BQ_COUNT; q++)
        SW_CUDA_TRY(cudaStreamSynchronize(c->stream[q]));
    return SW_CUDA_CHECK(cudaGetLastError());
}

/* ---- statistics and lifecycle ---------------------------------------------------- */

static void cuda_get_stats(backend *b, backend_stats *out) {
    cuda_backend *c = cuda_of(b);
    pthread_mutex_lock(&c->mu);
    cuda_timing_harvest(&c->timing, false);
    *out = (backend_stats){
        .capacity_bytes = c->capacity_bytes, .in_use_bytes = c->in_use_bytes,
        .peak_bytes = c->peak_bytes, .n_allocs = c->n_allocs,
        .bytes_to_device = c->bytes_to_device, .peer_bytes = c->peer_bytes,
        .copy_busy_s = c->timing.busy_s,
        .wait_stall_s = c->timing.stall_s, .driver_peak_bytes = c->driver_peak_bytes,
    };
    pthread_mutex_unlock(&c->mu);
}

static void cuda_reset_peak(backend *b) {
    cuda_backend *c = cuda_of(b);
    pthread_mutex_lock(&c->mu);
    c->peak_bytes = c->in_use_bytes;
    pthread_mutex_unlock(&c->mu);
}

/* Frees a backend in any state of construction. */
/* A split's hop from another GPU: once src's queued work has run, a peer
 * copy on this device's compute queue, waited for. Peer access is enabled
 * the first time where the two devices can reach each other (the copy then
 * goes over NVLink or PCIe directly); elsewhere the driver stages it
 * through host memory. */
static sw_status cuda_copy_peer(backend *b, bmem dst, backend *src_b, bmem src, uint64_t bytes) {
    if (src_b == NULL || src_b->vt->copy_peer != b->vt->copy_peer)
        return sw_errorf(SW_ERR_ARG, "cuda: a peer copy from another kind of device");
    cuda_backend *s = cuda_of(src_b); /* its device current */
    SW_CUDA_TRY(cudaStreamSynchronize(s->stream[BQ_COMPUTE]));
    cuda_backend *c = cuda_of(b);     /* this one's */
    uint8_t *dp = NULL, *sp = NULL;
    if (bytes == 0)
        return SW_OK;
    SW_TRY(cuda_resolve("peer copy to", dst, bytes, &dp));
    SW_TRY(cuda_resolve("peer copy from", src, bytes, &sp));
    const uint64_t bit = s->device < 64 ? 1ull << s->device : 0;
    if (bit && !(c->peer_checked & bit)) {
        int can = 0;
        c->peer_checked |= bit;
        if (cudaDeviceCanAccessPeer(&can, c->device, s->device) == cudaSuccess && can &&
            cudaDeviceEnablePeerAccess(s->device, 0) != cudaSuccess)
            (void)cudaGetLastError(); /* already enabled, or refused: the copy still works */
    }
    SW_CUDA_TRY(cudaMemcpyPeerAsync(dp, c->device, sp, s->device, (size_t)bytes,
                                    c->stream[BQ_COMPUTE]));
    SW_CUDA_TRY(cudaStreamSynchronize(c->stream[BQ_COMPUTE]));
    pthread_mutex_lock(&c->mu);
    c->peer_bytes += bytes;
    pthread_mutex_unlock(&c->mu);
    return SW_OK;
}

static void free_state(cuda_backend *c) {
    if (c->q8_buf != NULL)
        cuda_free(&c->base, c->q8_buf);
    if (c->attn_buf != NULL)
        cuda_free(&c->base, c->attn_buf);
    for (int q = 0; q < BQ_COUNT; q++)
        if (c->stream[q] != NULL) {
            cudaStreamSynchronize(c->stream[q]);
            cudaStreamDestroy(c->stream[q]);
        }
    cuda_timing_destroy(&c->timing);
    (void)cudaGetLastError();
    pthread_mutex_destroy(&c->mu);
    free(c);
}

static void cuda_destroy(backend *b) { free_state(cuda_of(b)); }

/* C++ takes designated initializers in declaration order only. */
#define CUDA_VTABLE(block_entry)                                                          \
    {.name = "cuda", .destroy = cuda_destroy, .alloc = cuda_alloc, .free = cuda_free,    \
     .host_memory = NULL, .host_alloc_pinned = cuda_host_alloc_pinned,                   \
     .host_free_pinned = cuda_host_free_pinned, .host_register = cuda_host_register,     \
     .host_unregister = cuda_host_unregister, .copy_h2d = cuda_copy_h2d,                 \
     .copy_d2h = cuda_copy_d2h, .submit = cuda_submit, .block = (block_entry),           \
     .event_create = cuda_event_create, .event_destroy = cuda_event_destroy,             \
     .event_record = cuda_event_record, .queue_wait = cuda_queue_wait,                   \
     .event_sync = cuda_event_sync, .sync = cuda_sync, .get_stats = cuda_get_stats,      \
     .reset_peak = cuda_reset_peak, .copy_peer = cuda_copy_peer}

static const backend_vtable cuda_vtable = CUDA_VTABLE(cuda_block);
static const backend_vtable cuda_vtable_per_op = CUDA_VTABLE(NULL);

/* SPILLWAY_CUDA_GEMM=tf32x3|tf32|simt picks the prefill kernels (the
 * device check measures each); exact dots (--cpu-dots f32) mean simt. */
static sw_status gemm_mode(const backend_params *p, ck_gemm_mode *out) {
    const char *v = getenv("SPILLWAY_CUDA_GEMM");
    *out = p->exact_dots ? CK_GEMM_SIMT : CK_GEMM_TF32X3;
    if (v == NULL || v[0] == '\0' || p->exact_dots)
        return SW_OK;
    if (!strcmp(v, "tf32x3"))
        *out = CK_GEMM_TF32X3;
    else if (!strcmp(v, "tf32"))
        *out = CK_GEMM_TF32;
    else if (!strcmp(v, "simt"))
        *out = CK_GEMM_SIMT;
    else
        return sw_errorf(SW_ERR_ARG, "SPILLWAY_CUDA_GEMM=%s: expected tf32x3 (the default), "
                         "tf32 or simt", v);
    return SW_OK;
}

static sw_status open_device(cuda_backend *c, const backend_params *p) {
    size_t free_b = 0, total_b = 0;
    c->device = (int)p->device_index;
    SW_TRY(cuda_device_open(c->device, c->device_name, sizeof c->device_name));
    for (int q = 0; q < BQ_COUNT; q++)
        SW_CUDA_TRY(cudaStreamCreateWithFlags(&c->stream[q], cudaStreamNonBlocking));
    SW_TRY(cuda_timing_init(&c->timing));
    SW_TRY(ck_gemm_init());
    SW_CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
    c->free_at_start = free_b;
    c->capacity_bytes = p->capacity_bytes ? p->capacity_bytes : (uint64_t)free_b;
    return SW_OK;
}

/* Flash-decoding's scratch (CK_ATTN_SPLIT_BYTES, counted against the
 * budget like the integer path's); SPILLWAY_CUDA_ATTN_SPLIT=0 turns the
 * split off (the device check compares). */
static sw_status attn_split_init(cuda_backend *c) {
    const char *v = getenv("SPILLWAY_CUDA_ATTN_SPLIT");
    int n_sm = 0;
    if (v != NULL && strcmp(v, "0") == 0)
        return SW_OK;
    SW_CUDA_TRY(cudaDeviceGetAttribute(&n_sm, cudaDevAttrMultiProcessorCount, c->device));
    SW_TRY(cuda_alloc(&c->base, CK_ATTN_SPLIT_BYTES, "attention parts", &c->attn_buf));
    c->attn = (ck_attn_split){.scratch = (float *)(void *)cbuf(c->attn_buf)->ptr,
                              .bytes = CK_ATTN_SPLIT_BYTES, .n_sm = (uint32_t)n_sm};
    return SW_OK;
}

extern "C" sw_status backend_cuda_create(const backend_params *p, backend **out) {
    if (out == NULL || p == NULL)
        return sw_errorf(SW_ERR_ARG, "backend_cuda_create: NULL argument");
    *out = NULL;
    cuda_backend *c = (cuda_backend *)calloc(1, sizeof *c);
    if (c == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "cuda: out of host memory");
    if (pthread_mutex_init(&c->mu, NULL) != 0) {
        free(c);
        return sw_errorf(SW_ERR_OOM_HOST, "cuda: cannot create a mutex");
    }
    sw_status st = gemm_mode(p, &c->gemm_mode);
    if (st == SW_OK)
        st = open_device(c, p);
    if (st != SW_OK) {
        free_state(c);
        return st;
    }
    c->base.vt = p->test && p->test->per_op ? &cuda_vtable_per_op : &cuda_vtable;
    c->base.impl = c;
    st = cuda_q8_init(c, p);
    if (st == SW_OK)
        st = attn_split_init(c);
    if (st != SW_OK) {
        free_state(c);
        return st;
    }
    *out = &c->base;
    return SW_OK;
}
