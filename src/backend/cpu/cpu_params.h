/*
 * cpu_params.h — the sizes the cpu kernels are made for: the thread pool
 * they run on and the largest attention and matrix rows, from which the
 * cpu backend (and the sim, which computes with the same kernels) sizes
 * its scratch once.
 */
#ifndef SW_BACKEND_CPU_PARAMS_H
#define SW_BACKEND_CPU_PARAMS_H

#include <stdint.h>

#include "backend/cpu/threadpool.h"

typedef struct cpu_kernel_params {
    cpu_pool *pool;            /* borrowed: kernels run on it */
    uint32_t max_attn_keys;    /* most keys one query sees */
    uint32_t attn_group;       /* query heads per KV head, whose scores
                                * attention holds together; 0 = 1 */
    uint64_t max_row_elems;    /* longest matrix row */
} cpu_kernel_params;

#endif
