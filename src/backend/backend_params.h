/*
 * backend_params.h — what a backend is made with (registry.h's
 * backend_create): the device budget, the matmuls' numerics, the cpu
 * kernels' sizes (for the cpu and the sim, which compute with them), the
 * sim's link, and test hooks, which normal use leaves NULL. Each backend
 * reads its own part and ignores the rest.
 */
#ifndef SW_BACKEND_PARAMS_H
#define SW_BACKEND_PARAMS_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/cpu/cpu_params.h"

/* Faults and slowness the tests inject (the sim; per_op also pjrt and
 * cuda). */
typedef struct backend_test_hooks {
    uint64_t fail_alloc_at;    /* the Nth allocation attempt fails; 0 never */
    uint64_t fail_op_at;       /* the Nth op submission fails; 0 never */
    double op_delay_s;         /* each op sleeps this long while it reads */
    bool per_op;               /* hide the block entry: per-op dispatch */
} backend_test_hooks;

typedef struct backend_params {
    uint64_t capacity_bytes;   /* device memory budget (sim: required) */
    bool exact_dots;           /* f32 activations in every matmul */
    bool bf16_dots;            /* cpu kernels: bf16 activations for bf16 weights */
    cpu_kernel_params cpu;     /* cpu, sim */
    double sim_link_Bps;       /* sim: host-to-device rate; 0 = memcpy speed */
    const backend_test_hooks *test; /* NULL in normal use */
} backend_params;

#endif
