/*
 * cpu_backend.c — the host CPU behind the backend interface: the kernels
 * of cpu_ops.h on the borrowed thread pool, memory from the C heap.
 *
 * Capacity is unlimited (UINT64_MAX) but every allocation is still counted
 * (in use, peak, count), so the engine's accounting can be checked on any
 * machine. "Device" memory is host memory: copy_async is a memcpy whose
 * event is signalled before it returns, and event_wait never stalls.
 * Attention scratch (n_threads * max_attn_keys floats) is made once here,
 * never per call. Thread-safe except for the ops, which share the pool.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <assert.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "backend/cpu/cpu_ops.h"
#include "util/error.h"

/* Each allocation is preceded by a header holding its size, padded to a
 * cache line so the caller's memory stays 64-byte aligned. */
enum { CPU_ALLOC_ALIGN = 64 };

typedef struct cpu_alloc_header {
    uint64_t bytes;
} cpu_alloc_header;

typedef struct cpu_event {
    int unused; /* copies finish before copy_async returns: nothing to track */
} cpu_event;

typedef struct cpu_backend {
    backend base;          /* what callers hold; impl points back here */
    cpu_pool *pool;        /* borrowed */
    float *attn_scratch;   /* (n_threads, max_attn_keys) */
    uint64_t scratch_floats;
    pthread_mutex_t mu;    /* guards the counters below */
    uint64_t in_use_bytes, peak_bytes, n_allocs, bytes_to_device;
    double copy_busy_s;
} cpu_backend;

static cpu_backend *cpu_of(backend *b) { return b->impl; }

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- buffers and copies ----------------------------------------------- */

static sw_status cpu_be_alloc(backend *b, uint64_t bytes, const char *purpose, void **out) {
    cpu_backend *c = cpu_of(b);
    *out = NULL;
    if (bytes == 0)
        return SW_OK;
    uint64_t total = bytes + CPU_ALLOC_ALIGN + CPU_ALLOC_ALIGN - 1;
    uint8_t *p = NULL;
    if (total > bytes && total <= SIZE_MAX)
        p = aligned_alloc(CPU_ALLOC_ALIGN, (size_t)(total / CPU_ALLOC_ALIGN * CPU_ALLOC_ALIGN));
    pthread_mutex_lock(&c->mu);
    sw_status st = SW_OK;
    if (p == NULL) {
        st = sw_errorf(SW_ERR_OOM_HOST, "host out of memory: requested %llu bytes for '%s', "
                       "in use %llu by this backend", (unsigned long long)bytes,
                       purpose ? purpose : "?", (unsigned long long)c->in_use_bytes);
    } else {
        ((cpu_alloc_header *)p)->bytes = bytes;
        c->in_use_bytes += bytes;
        if (c->in_use_bytes > c->peak_bytes)
            c->peak_bytes = c->in_use_bytes;
        c->n_allocs++;
        *out = p + CPU_ALLOC_ALIGN;
    }
    pthread_mutex_unlock(&c->mu);
    return st;
}

static void cpu_be_free(backend *b, void *ptr) {
    cpu_backend *c = cpu_of(b);
    if (ptr == NULL)
        return;
    uint8_t *p = (uint8_t *)ptr - CPU_ALLOC_ALIGN;
    pthread_mutex_lock(&c->mu);
    assert(((cpu_alloc_header *)p)->bytes <= c->in_use_bytes);
    c->in_use_bytes -= ((cpu_alloc_header *)p)->bytes;
    pthread_mutex_unlock(&c->mu);
    free(p);
}

static sw_status cpu_be_copy_async(backend *b, void *dst, const void *src, uint64_t bytes,
                                   backend_event *done) {
    cpu_backend *c = cpu_of(b);
    (void)done; /* already signalled: every cpu event is */
    if (bytes > 0 && (dst == NULL || src == NULL))
        return sw_errorf(SW_ERR_ARG, "cpu backend: copy of %llu bytes with a NULL pointer",
                         (unsigned long long)bytes);
    const double t0 = now_s();
    if (bytes > 0)
        memcpy(dst, src, (size_t)bytes);
    const double t1 = now_s();
    pthread_mutex_lock(&c->mu);
    c->bytes_to_device += bytes;
    c->copy_busy_s += t1 - t0;
    pthread_mutex_unlock(&c->mu);
    return SW_OK;
}

static sw_status cpu_be_event_create(backend *b, backend_event **out) {
    (void)b;
    cpu_event *ev = calloc(1, sizeof *ev);
    *out = (backend_event *)ev;
    if (ev == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "cpu backend: out of host memory for an event");
    return SW_OK;
}

static void cpu_be_event_destroy(backend *b, backend_event *ev) {
    (void)b;
    free((cpu_event *)ev);
}

static sw_status cpu_be_event_wait(backend *b, backend_event *ev) {
    (void)b;
    (void)ev;
    return SW_OK;
}

static sw_status cpu_be_copy_to_host(backend *b, void *dst, const void *src, uint64_t bytes) {
    (void)b;
    if (bytes > 0 && (dst == NULL || src == NULL))
        return sw_errorf(SW_ERR_ARG, "cpu backend: copy of %llu bytes with a NULL pointer",
                         (unsigned long long)bytes);
    if (bytes > 0)
        memcpy(dst, src, (size_t)bytes);
    return SW_OK;
}

/* ---- ops --------------------------------------------------------------- */

static sw_status cpu_be_matmul(backend *b, const tensor_view *w, const float *x, float *y,
                               uint32_t n_tokens) {
    return cpu_matmul(cpu_of(b)->pool, w, x, y, n_tokens);
}

static sw_status cpu_be_get_rows(backend *b, const tensor_view *w, const int32_t *ids,
                                 uint32_t n, float *out) {
    (void)b;
    return cpu_get_rows(w, ids, n, out);
}

static void cpu_be_rmsnorm(backend *b, const float *x, const float *w, float *y, uint32_t n,
                           uint32_t n_rows, float eps) {
    (void)b;
    cpu_rmsnorm(x, w, y, n, n_rows, eps);
}

static void cpu_be_rope(backend *b, float *x, const int32_t *pos, uint32_t n_tokens,
                        uint32_t n_heads, uint32_t head_dim, float base, float freq_scale) {
    (void)b;
    cpu_rope(x, pos, n_tokens, n_heads, head_dim, base, freq_scale);
}

/* Most keys any query of this call sees: what cpu_attention needs per
 * thread (the same clamps as its attn_range). */
static uint64_t attn_keys_needed(const attn_args *a) {
    uint64_t most = 0;
    for (uint32_t t = 0; t < a->n_tokens; t++) {
        if (a->q_pos[t] < 0)
            continue;
        uint64_t n = (uint64_t)a->q_pos[t] + 1;
        if (a->window > 0 && n > a->window)
            n = a->window;
        if (a->kv_ring > 0 && n > a->kv_ring)
            n = a->kv_ring;
        most = n > most ? n : most;
    }
    return most;
}

/* With the backend's scratch, a call seeing more keys than one thread's
 * share runs on one thread (cpu_attention gives the same bits for any
 * thread count); more keys than the whole scratch is a sizing bug. */
static void cpu_be_attention(backend *b, const attn_args *a) {
    cpu_backend *c = cpu_of(b);
    cpu_pool *pool = c->pool;
    cpu_attn_args ca = {
        .q = a->q, .k = a->k, .v = a->v, .kv_type = a->kv_type, .out = a->out,
        .q_pos = a->q_pos,
        .n_tokens = a->n_tokens, .n_head = a->n_head, .n_head_kv = a->n_head_kv,
        .head_dim = a->head_dim, .kv_ring = a->kv_ring, .window = a->window,
        .softcap = a->softcap, .scratch = a->scratch,
    };
    if (ca.scratch == NULL) {
        const uint64_t keys = attn_keys_needed(a);
        assert(keys <= c->scratch_floats && "max_attn_keys smaller than the keys visible");
        if (keys > c->scratch_floats) {
            memset(a->out, 0, (size_t)a->n_tokens * a->n_head * a->head_dim * sizeof(float));
            return;
        }
        if (keys * (uint64_t)cpu_pool_size(pool) > c->scratch_floats)
            pool = NULL;
        ca.scratch = c->attn_scratch;
    }
    cpu_attention(pool, &ca);
}

static void cpu_be_geglu(backend *b, const float *gate, const float *up, float *out,
                         uint64_t n) {
    (void)b;
    cpu_geglu(gate, up, out, n);
}

static void cpu_be_softcap(backend *b, float *x, uint64_t n, float cap) {
    (void)b;
    cpu_softcap(x, n, cap);
}

static void cpu_be_add(backend *b, float *x, const float *y, uint64_t n) {
    (void)b;
    cpu_add(x, y, n);
}

static void cpu_be_scale(backend *b, float *x, uint64_t n, float s) {
    (void)b;
    cpu_scale(x, n, s);
}

static void cpu_be_reset_peak(backend *b) {
    cpu_backend *c = cpu_of(b);
    pthread_mutex_lock(&c->mu);
    c->peak_bytes = c->in_use_bytes;
    pthread_mutex_unlock(&c->mu);
}

/* ---- lifecycle --------------------------------------------------------- */

static void cpu_be_get_stats(backend *b, backend_stats *out) {
    cpu_backend *c = cpu_of(b);
    pthread_mutex_lock(&c->mu);
    *out = (backend_stats){
        .capacity_bytes = UINT64_MAX, .in_use_bytes = c->in_use_bytes,
        .peak_bytes = c->peak_bytes, .n_allocs = c->n_allocs,
        .bytes_to_device = c->bytes_to_device, .copy_busy_s = c->copy_busy_s,
        .wait_stall_s = 0.0,
    };
    pthread_mutex_unlock(&c->mu);
}

static void cpu_be_destroy(backend *b) {
    cpu_backend *c = cpu_of(b);
    pthread_mutex_destroy(&c->mu);
    free(c->attn_scratch);
    free(c);
}

static const backend_vtable cpu_vtable = {
    .name = "cpu",
    .destroy = cpu_be_destroy,
    .alloc = cpu_be_alloc,
    .free = cpu_be_free,
    .copy_async = cpu_be_copy_async,
    .event_create = cpu_be_event_create,
    .event_destroy = cpu_be_event_destroy,
    .event_wait = cpu_be_event_wait,
    .copy_to_host = cpu_be_copy_to_host,
    .copy_to_device = cpu_be_copy_to_host, /* both sides are host memory */
    .reset_peak = cpu_be_reset_peak,
    .matmul = cpu_be_matmul,
    .get_rows = cpu_be_get_rows,
    .rmsnorm = cpu_be_rmsnorm,
    .rope = cpu_be_rope,
    .attention = cpu_be_attention,
    .geglu = cpu_be_geglu,
    .softcap = cpu_be_softcap,
    .add = cpu_be_add,
    .scale = cpu_be_scale,
    .get_stats = cpu_be_get_stats,
};

sw_status backend_cpu_create(cpu_pool *pool, uint32_t max_attn_keys, backend **out) {
    sw_status st;
    cpu_backend *c = NULL;
    if (out == NULL)
        return sw_errorf(SW_ERR_ARG, "backend_cpu_create: out is NULL");
    *out = NULL;
    c = calloc(1, sizeof *c);
    if (c == NULL) {
        st = sw_errorf(SW_ERR_OOM_HOST, "cpu backend: out of host memory");
        goto fail;
    }
    c->pool = pool;
    c->scratch_floats = (uint64_t)cpu_pool_size(pool) * max_attn_keys;
    if (c->scratch_floats > 0) {
        c->attn_scratch = malloc((size_t)c->scratch_floats * sizeof(float));
        if (c->attn_scratch == NULL) {
            st = sw_errorf(SW_ERR_OOM_HOST, "cpu backend: out of host memory for %llu floats "
                           "of attention scratch", (unsigned long long)c->scratch_floats);
            goto fail;
        }
    }
    if (pthread_mutex_init(&c->mu, NULL) != 0) {
        st = sw_errorf(SW_ERR_OOM_HOST, "cpu backend: cannot create a mutex");
        goto fail;
    }
    c->base.vt = &cpu_vtable;
    c->base.impl = c;
    *out = &c->base;
    return SW_OK;
fail:
    if (c != NULL)
        free(c->attn_scratch);
    free(c);
    return st;
}
