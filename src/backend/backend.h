/*
 * backend.h — the one small interface every compute backend implements
 * (cpu, sim, cuda): accounted buffers, asynchronous host-to-device copies
 * with events, and the handful of ops Gemma needs.
 *
 * Backends know nothing of plans: the engine decides what goes where and
 * calls these entries; a backend only allocates what it is asked for,
 * within its capacity, and reports what it used.
 *
 * Pointers: `device` pointers come from alloc() and are only meaningful to
 * the backend's ops (for cpu and sim they are ordinary host memory; for
 * cuda, device memory). Weight tensors passed to ops are tensor_views whose
 * data is a device pointer of that backend (or, for cpu, any host memory
 * such as the file mapping).
 *
 * Errors are sw_status values with sw_errorf() messages; an allocation
 * beyond capacity is SW_ERR_OOM_DEVICE naming the request, the capacity
 * and the bytes in use. Nothing aborts.
 */
#ifndef SW_BACKEND_BACKEND_H
#define SW_BACKEND_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/cpu/threadpool.h"
#include "backend/tensor.h"
#include "spillway.h"

typedef struct backend backend;
typedef struct backend_event backend_event;

/* Arguments of attention (see cpu_ops.h cpu_attention for the contract). */
typedef struct attn_args {
    const float *q;           /* (n_tokens, n_head, hd), RoPE'd and scaled */
    const void *k, *v;        /* cache rows (n_rows, n_head_kv, hd) of kv_type */
    uint32_t kv_type;         /* SW_TYPE_F32 (0, the default), _F16 or _BF16 */
    float *out;               /* (n_tokens, n_head, hd) */
    const int32_t *q_pos;     /* (n_tokens) absolute positions */
    uint32_t n_tokens, n_head, n_head_kv, head_dim;
    uint32_t kv_ring;         /* 0: row = position; else row = position % kv_ring */
    uint32_t window;          /* 0: global */
    float softcap;            /* 0: none */
    float *scratch;           /* backend-owned scratch is used when NULL */
} attn_args;

typedef struct backend_stats {
    uint64_t capacity_bytes;   /* UINT64_MAX when unlimited (cpu) */
    uint64_t in_use_bytes;     /* accounted bytes currently allocated */
    uint64_t peak_bytes;       /* high-water mark of in_use_bytes */
    uint64_t n_allocs;         /* successful allocations so far */
    uint64_t bytes_to_device;  /* bytes copied host -> device */
    double copy_busy_s;        /* time the copy engine spent copying */
    double wait_stall_s;       /* time compute waited for copies */
} backend_stats;

typedef struct backend_vtable {
    const char *name;                                       /* "cpu", "sim", "cuda" */
    void (*destroy)(backend *b);

    /* Buffers: accounted against the capacity. alloc zero-fills nothing;
     * bytes == 0 gives *out = NULL and SW_OK. Thread-safe. */
    sw_status (*alloc)(backend *b, uint64_t bytes, const char *purpose, void **out);
    void (*free)(backend *b, void *ptr);                    /* NULL is a no-op */

    /* Copies host -> device, queued in order on the backend's copy engine;
     * `done` (optional) is signalled when this copy has landed. */
    sw_status (*copy_async)(backend *b, void *dst, const void *src, uint64_t bytes,
                            backend_event *done);
    sw_status (*event_create)(backend *b, backend_event **out);
    void (*event_destroy)(backend *b, backend_event *ev);
    /* Blocks until ev is signalled (time counted as stall). An event never
     * used by copy_async is already signalled. */
    sw_status (*event_wait)(backend *b, backend_event *ev);
    /* Copies device -> host synchronously (activations back to the host). */
    sw_status (*copy_to_host)(backend *b, void *dst, const void *src, uint64_t bytes);
    /* Copies host -> device synchronously, bypassing the copy queue: small
     * activation transfers that must not wait behind queued weight copies.
     * Counted in bytes_to_device; not throttled (latency-bound, tiny). */
    sw_status (*copy_to_device)(backend *b, void *dst, const void *src, uint64_t bytes);

    /* Ops: same contracts as the CPU kernels in cpu/cpu_ops.h. */
    sw_status (*matmul)(backend *b, const tensor_view *w, const float *x, float *y,
                        uint32_t n_tokens);
    sw_status (*get_rows)(backend *b, const tensor_view *w, const int32_t *ids, uint32_t n,
                          float *out);
    void (*rmsnorm)(backend *b, const float *x, const float *w, float *y, uint32_t n,
                    uint32_t n_rows, float eps);
    void (*rope)(backend *b, float *x, const int32_t *pos, uint32_t n_tokens,
                 uint32_t n_heads, uint32_t head_dim, float base, float freq_scale);
    void (*attention)(backend *b, const attn_args *a);
    void (*geglu)(backend *b, const float *gate, const float *up, float *out, uint64_t n);
    void (*softcap)(backend *b, float *x, uint64_t n, float cap);
    void (*add)(backend *b, float *x, const float *y, uint64_t n);
    void (*scale)(backend *b, float *x, uint64_t n, float s);

    /* Optional (NULL: the engine page-locks ordinary host memory itself):
     * host memory the device copies from at the full (pinned) link rate,
     * e.g. cudaHostAlloc. Not counted against the device's capacity. */
    sw_status (*host_alloc_pinned)(backend *b, uint64_t bytes, void **out);
    void (*host_free_pinned)(backend *b, void *ptr);

    void (*get_stats)(backend *b, backend_stats *out);
    /* Restarts the high-water mark at the bytes in use now (the engine
     * calls it before loading a plan, so a re-plan's peak is its own). */
    void (*reset_peak)(backend *b);
} backend_vtable;

struct backend {
    const backend_vtable *vt;
    void *impl;
};

/* ---- constructors ---------------------------------------------------- */

/* The host CPU: unlimited capacity (allocations are plain malloc, still
 * counted), copies are memcpy. `pool` is borrowed and must outlive it;
 * max_attn_keys sizes the attention scratch (most keys one query sees). */
sw_status backend_cpu_create(cpu_pool *pool, uint32_t max_attn_keys, backend **out);

typedef struct sim_options {
    uint64_t capacity_bytes;     /* hard device memory capacity (> 0) */
    double link_bytes_per_s;     /* copy bandwidth cap; 0 = memcpy speed */
    /* Fault injection for tests: the Nth allocation attempt (1-based;
     * zero-byte requests do not count) fails as if the device were full,
     * its message ending "(injected fault)"; later ones proceed; 0 = never. */
    uint64_t fail_alloc_at;
    uint32_t max_attn_keys;      /* scratch sizing: most keys one query sees */
} sim_options;

/* A simulated accelerator: CPU kernels on memory from a pool with a hard
 * capacity, copies performed by a copy thread throttled to the link
 * bandwidth so overlap and stalls are real. `pool` is borrowed.
 * Memory: first fit over one arena, so it fragments like a device; each
 * block starts 256-byte aligned and occupies its size rounded up to 256
 * (in_use_bytes counts that). Copies: copy_async blocks while 64 copies
 * are already queued; copy_async/copy_to_host must target live device
 * allocations and matmul/get_rows weights must be in device memory, else
 * SW_ERR_ARG. Destroy cancels copies not yet landed (no wait). */
sw_status backend_sim_create(const sim_options *opt, cpu_pool *pool, backend **out);

/* Destroys any backend. Accepts NULL. */
void backend_destroy(backend *b);

#endif
