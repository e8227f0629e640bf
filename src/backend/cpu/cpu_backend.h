/*
 * cpu_backend.h — the host as a backend (cpu_backend.c): its constructor,
 * which the registry calls, and the scratch its kernels take, which the
 * planner counts.
 */
#ifndef SW_BACKEND_CPU_BACKEND_H
#define SW_BACKEND_CPU_BACKEND_H

#include "backend/backend.h"
#include "backend/backend_params.h"

/* Host bytes the cpu backend allocates for its kernels' scratch with
 * n_threads threads, queries seeing up to max_attn_keys keys in groups of
 * attn_group heads per KV head, and matrix rows of up to max_row_elems
 * elements. */
uint64_t backend_cpu_scratch_bytes(uint32_t n_threads, uint32_t max_attn_keys,
                                   uint32_t attn_group, uint64_t max_row_elems);

/* Reads p->pool (borrowed for the backend's life), p->sizes, exact_dots
 * and bf16_dots; ignores the rest. */
sw_status backend_cpu_create(const backend_params *p, backend **out);

#endif
