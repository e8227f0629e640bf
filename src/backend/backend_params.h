/*
 * backend_params.h — what a backend is made with (registry.h's
 * backend_create): the device budget, the matmuls' numerics, the largest
 * shapes its ops will see (host kernels size their scratch from them), the
 * host's worker threads, a simulated link's rate, and test hooks, which
 * normal use leaves NULL. Each backend reads its own part and ignores the
 * rest. Backend-neutral: it includes no backend's own header (the thread
 * pool is an opaque handle here).
 */
#ifndef SW_BACKEND_PARAMS_H
#define SW_BACKEND_PARAMS_H

#include <stdbool.h>
#include <stdint.h>

struct cpu_pool; /* backend/cpu/threadpool.h */

/* Faults and slowness the tests inject (the sim; per_op also pjrt and
 * cuda). */
typedef struct backend_test_hooks {
    uint64_t fail_alloc_at;    /* the Nth allocation attempt fails; 0 never */
    uint64_t fail_op_at;       /* the Nth op submission fails; 0 never */
    double op_delay_s;         /* each op sleeps this long while it reads */
    bool per_op;               /* hide the block entry: per-op dispatch */
} backend_test_hooks;

/* The largest shapes the model gives the ops: facts about the model, not
 * about any backend. A backend that keeps per-call scratch sizes it from
 * these once, at creation (no allocation per token). */
typedef struct backend_op_sizes {
    uint32_t max_attn_keys;    /* most keys one query sees */
    uint32_t attn_group;       /* query heads per KV head, whose scores
                                * attention holds together; 0 = 1 */
    uint64_t max_row_elems;    /* longest matrix row; 0: the backend's default */
} backend_op_sizes;

typedef struct backend_params {
    uint64_t capacity_bytes;   /* device memory budget (a simulated device: required) */
    bool exact_dots;           /* f32 activations in every matmul */
    bool bf16_dots;            /* host kernels: bf16 activations for bf16 weights */
    backend_op_sizes sizes;    /* for the backends that compute on the host */
    struct cpu_pool *pool;     /* borrowed: the host's worker threads, which host
                                * kernels run on; NULL = the calling thread */
    double link_Bps;           /* a simulated link's host-to-device rate; 0 = memcpy speed */
    uint32_t device_index;     /* which of the backend's devices (a split over several:
                                * cuda:N, the PJRT client's Nth); 0 = the first */
    const backend_test_hooks *test; /* NULL in normal use */
} backend_params;

#endif
