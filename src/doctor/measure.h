/*
 * measure.h — small benchmarks of the host the planner's rates come from:
 * memory read bandwidth, memcpy (the sim device's link), the CPU backend's
 * f32 matmul rate, and a file's sequential read speed.
 *
 * Each returns the best of a few timed runs (after a warm-up), because the
 * planner wants what the hardware can do, not a noisy average. Buffers are
 * allocated per call and freed before returning; nothing is kept.
 */
#ifndef SW_DOCTOR_MEASURE_H
#define SW_DOCTOR_MEASURE_H

#include <stdint.h>

#include "backend/cpu/threadpool.h"
#include "spillway.h"
#include "util/clock.h"

/* The decode matmul (cpu_matmul, one token, the pool's threads) over a
 * random weight of about `bytes` of `type`, in weight bytes per second,
 * best of n_runs after a warm-up: the rate the planner divides a host
 * layer's bytes of that type by. Errors: SW_ERR_ARG, SW_ERR_OOM_HOST. */
sw_status measure_host_decode(cpu_pool *pool, uint32_t type, uint64_t bytes, int n_runs,
                              double *Bps);

/* Read bandwidth over a `bytes` buffer (make it much larger than the
 * caches), all of pool's threads reading disjoint slices, best of n_runs.
 * Errors: SW_ERR_ARG, SW_ERR_OOM_HOST. */
sw_status measure_host_read(cpu_pool *pool, uint64_t bytes, int n_runs, double *Bps);

/* One thread's memcpy rate (bytes copied per second) between two `bytes`
 * buffers: what the sim device's copy thread achieves without a link cap.
 * Errors: SW_ERR_ARG, SW_ERR_OOM_HOST. */
sw_status measure_memcpy(uint64_t bytes, int n_runs, double *Bps);

/* cpu_matmul on an n x n F32 weight and n_tokens activation rows:
 * 2 * n * n * n_tokens flops per run, best of n_runs.
 * Errors: SW_ERR_ARG, SW_ERR_OOM_HOST. */
sw_status measure_host_flops(cpu_pool *pool, uint32_t n, uint32_t n_tokens, int n_runs,
                             double *flops);

typedef struct measure_file_result {
    uint64_t bytes;           /* bytes read */
    double Bps;
    double cached_fraction;   /* share of those bytes in the page cache at the
                               * start, after asking the kernel to drop them */
} measure_file_result;

/* Sequential read of the first min(file size, max_bytes) bytes of `path`.
 * Asks the kernel first to drop the file's clean cached pages
 * (posix_fadvise DONTNEED) so the disk, not the page cache, is measured;
 * pages it would not drop (mapped or dirty elsewhere) show in
 * cached_fraction. Errors: SW_ERR_ARG, SW_ERR_IO (message names the path). */
sw_status measure_file_read(const char *path, uint64_t max_bytes, measure_file_result *out);

/* Writes a `bytes` temp file in `dir`, syncs it to disk, measures it with
 * measure_file_read and removes it. For machines with no model file yet.
 * Errors: SW_ERR_ARG, SW_ERR_IO (message names the folder and reason). */
sw_status measure_temp_file_read(const char *dir, uint64_t bytes, measure_file_result *out);

#endif
