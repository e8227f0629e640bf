/*
 * bench_matmul.c — throughput of cpu_matmul per weight type.
 *
 * Decode is memory-bound: one token streams the whole weight matrix, so the
 * figure of merit is weight bytes per second. The default shape is Gemma 3
 * 270M's LM head (n_embd 640 x n_vocab 262144; 167 MB in Q8_0), far larger
 * than most caches. A plain read of an equally large buffer is timed first
 * as the machine's ceiling, then with the kernels' software prefetch; each
 * type's line ends with its own weight bytes read that way just before
 * (one thread: the rate a decode kernel is measured against, the caches
 * in the same state). Weights are random with sane scales. "cpu"
 * GB/s divides by thread 0's CPU time times the thread count: the speed
 * while scheduled, which is what to read on a loaded machine.
 *
 *   bench_matmul [-r rows] [-c cols] [-n reps] [-k tokens] [-t max_threads] [--fine]
 *                [TYPE...]
 *   e.g. bench_matmul -t 2 Q8_0 Q4_K Q6_K Q5_0
 * --fine times cpu_matmul_fine (the down projection's: K types over
 * activations with a scale per 32) instead of cpu_matmul.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/cpu/cpu_ops.h"
#include "quant/half.h"
#include "quant/types.h"

typedef struct bench_opts {
    uint64_t rows, cols;
    int reps, max_threads;
    uint32_t tokens;
    int fine;
} bench_opts;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t rng_next(void) {
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545f4914f6cdd1dull;
}

/* Offsets of f16 scale fields in a block, so random bytes stay finite. */
static void fix_scales(uint32_t type, uint8_t *b) {
    static const struct { uint32_t type; int off[2]; } tab[] = {
        {SW_TYPE_Q4_0, {0, -1}}, {SW_TYPE_Q4_1, {0, 2}},   {SW_TYPE_Q5_0, {0, -1}},
        {SW_TYPE_Q5_1, {0, 2}},  {SW_TYPE_Q8_0, {0, -1}},  {SW_TYPE_Q2_K, {80, 82}},
        {SW_TYPE_Q3_K, {108, -1}}, {SW_TYPE_Q4_K, {0, 2}}, {SW_TYPE_Q5_K, {0, 2}},
        {SW_TYPE_Q6_K, {208, -1}},
    };
    uint16_t h = half_f32_to_f16(0.01f);
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        for (int k = 0; k < 2 && tab[i].type == type; k++)
            if (tab[i].off[k] >= 0)
                memcpy(b + tab[i].off[k], &h, 2);
    if (type == SW_TYPE_Q8_K) {
        float d = 0.01f;
        memcpy(b, &d, 4);
    }
}

static uint8_t *make_weights(uint32_t type, uint64_t n_elems, uint64_t n_bytes) {
    const type_traits *t = type_get_traits(type);
    uint8_t *w = malloc(n_bytes);
    if (w == NULL)
        return NULL;
    for (uint64_t i = 0; i + 8 <= n_bytes; i += 8) {
        uint64_t r = rng_next();
        memcpy(w + i, &r, 8);
    }
    if (type == SW_TYPE_F32 || type == SW_TYPE_F16 || type == SW_TYPE_BF16) {
        for (uint64_t i = 0; i < n_elems; i++) { /* finite values */
            float v = (float)(rng_next() >> 40) / 16777216.0f - 0.5f;
            if (type == SW_TYPE_F32)
                memcpy(w + 4 * i, &v, 4);
            else {
                uint16_t h = type == SW_TYPE_F16 ? half_f32_to_f16(v) : half_f32_to_bf16(v);
                memcpy(w + 2 * i, &h, 2);
            }
        }
        return w;
    }
    for (uint64_t b = 0; b < n_elems / t->block_elems; b++)
        fix_scales(type, w + b * t->block_bytes);
    return w;
}

static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The best wall time of `reps` calls of cpu_matmul, and the best CPU time
 * of the calling thread (thread 0, which does 1/nth of the rows): on a
 * shared machine the second shows the speed while actually scheduled. */
static int time_matmul(cpu_pool *pool, cpu_mm_scratch *ws, const tensor_view *v, const float *x,
                       float *y, const bench_opts *o, double *wall, double *cpu) {
    *wall = *cpu = 1e30;
    for (int r = 0; r < o->reps; r++) {
        double t0 = now_s(), c0 = cpu_s();
        if ((o->fine ? cpu_matmul_fine : cpu_matmul)(pool, ws, v, x, y, o->tokens) != SW_OK) {
            fprintf(stderr, "bench_matmul: %s\n", sw_last_error());
            return -1;
        }
        double dt = now_s() - t0, dc = cpu_s() - c0;
        *wall = dt < *wall ? dt : *wall;
        *cpu = dc < *cpu ? dc : *cpu;
    }
    return 0;
}

/* Keeps the read loop's sum alive (external linkage: not removable). */
uint64_t bench_read_sink;

/* Sums the n_bytes / 8 64-bit words at buf; with `ahead` (bytes, 0: none)
 * each cache line is also prefetched that far ahead, as the decode kernels
 * ask for their rows (backend/cpu/idot_x86.h): the best time of `reps`
 * passes. */
static double read_pass(const uint8_t *buf, uint64_t n_bytes, uint64_t ahead, int reps) {
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = now_s();
        uint64_t s[4] = {0, 0, 0, 0};
        for (uint64_t i = 0; i + 64 <= n_bytes; i += 64) {
#if defined(__GNUC__) || defined(__clang__)
            if (ahead != 0 && i + ahead < n_bytes)
                __builtin_prefetch(buf + i + ahead, 0, 3);
#endif
            for (int k = 0; k < 8; k++) {
                uint64_t v;
                memcpy(&v, buf + i + 8 * (uint64_t)k, sizeof v);
                s[k % 4] += v;
            }
        }
        bench_read_sink += s[0] + s[1] + s[2] + s[3];
        double dt = now_s() - t0;
        best = dt < best ? dt : best;
    }
    return best;
}

/* The kernels' prefetch distance (backend/cpu/idot_x86.h) */
enum { BENCH_PREFETCH_BYTES = 9216 };

/* A plain read of n_bytes (sum of 64-bit words): the bandwidth ceiling;
 * then the same with the kernels' software prefetch. */
static void bench_read(uint64_t n_bytes, int reps) {
    uint64_t n = n_bytes / 8, *buf = malloc(n * 8);
    if (buf == NULL)
        return;
    for (uint64_t i = 0; i < n; i++)
        buf[i] = i;
    const double plain = read_pass((const uint8_t *)buf, n * 8, 0, reps);
    const double pf = read_pass((const uint8_t *)buf, n * 8, BENCH_PREFETCH_BYTES, reps);
    printf("%-6s %5s      %8.1f MB | read ceiling, 1 thread: %6.2f GB/s, prefetched %6.2f GB/s\n",
           "read", "", (double)n_bytes / 1e6, (double)n_bytes / plain / 1e9,
           (double)n_bytes / pf / 1e9);
    free(buf);
}

/* Times one type. Row lengths round up to whole blocks (640 -> 768 for the
 * 256-element K-quants, which is why Gemma 3 270M cannot use them for its
 * 640-wide matrices). */
static int bench_type(uint32_t type, const bench_opts *o, cpu_pool **pools) {
    const uint64_t be = type_get_traits(type)->block_elems;
    const uint64_t cols = (o->cols + be - 1) / be * be;
    uint64_t row_bytes;
    if (!type_row_bytes(type, cols, &row_bytes)) {
        fprintf(stderr, "bench_matmul: bad row of %llu %s\n", (unsigned long long)cols,
                type_name(type));
        return 1;
    }
    uint64_t n_bytes = row_bytes * o->rows;
    uint8_t *w = make_weights(type, cols * o->rows, n_bytes);
    /* Activations 64-byte aligned, as the engine's buffers are: a row
     * start inside a cache line makes vector loads straddle lines. */
    float *x = aligned_alloc(64, (cols * o->tokens * sizeof(float) + 63) / 64 * 64);
    float *y = malloc(o->rows * o->tokens * sizeof(float));
    cpu_mm_scratch *ws = NULL; /* one workspace serves every pool size */
    if (w == NULL || x == NULL || y == NULL ||
        cpu_mm_scratch_create(o->max_threads, cols, &ws) != SW_OK) {
        fprintf(stderr, "bench_matmul: out of memory for %s\n", type_name(type));
        free(w), free(x), free(y);
        return 1;
    }
    for (uint64_t i = 0; i < cols * o->tokens; i++)
        x[i] = (float)(rng_next() >> 40) / 16777216.0f - 0.5f;
    tensor_view v = {.name = "bench", .type = type, .n_dims = 2, .ne = {cols, o->rows, 1, 1},
                     .n_bytes = n_bytes, .data = w};
    printf("%-6s %5llu cols %8.1f MB", type_name(type), (unsigned long long)cols,
           (double)n_bytes / 1e6);
    /* the same bytes read with the kernels' prefetch, one thread, just
     * before: the yardstick of a kernel's GB/s (issue 40), with the
     * caches in the same state */
    const double pf = read_pass(w, n_bytes, BENCH_PREFETCH_BYTES, o->reps);
    for (int t = 0; t < o->max_threads; t++) {
        double dt, dc;
        if (time_matmul(pools[t], ws, &v, x, y, o, &dt, &dc) != 0)
            break;
        double gflops = 2.0 * (double)cols * (double)o->rows * o->tokens / dt / 1e9;
        printf(" | %dT %7.2f ms %6.2f GB/s (cpu %6.2f) %6.2f GFLOP/s", t + 1, dt * 1e3,
               (double)n_bytes / dt / 1e9, (double)n_bytes / (dc * (t + 1)) / 1e9, gflops);
    }
    printf(" | its bytes read, prefetched: %6.2f GB/s\n", (double)n_bytes / pf / 1e9);
    cpu_mm_scratch_destroy(ws);
    free(w), free(x), free(y);
    return 0;
}

static uint32_t parse_type(const char *name) {
    for (uint32_t t = 0; t < SW_TYPE_COUNT; t++) {
        const type_traits *tr = type_get_traits(t);
        if (tr != NULL && strcmp(tr->name, name) == 0)
            return t;
    }
    return UINT32_MAX;
}

int main(int argc, char **argv) {
    bench_opts o = {.rows = 262144, .cols = 640, .reps = 5, .max_threads = 2, .tokens = 1};
    uint32_t types[32];
    int n_types = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (val && strcmp(a, "-r") == 0) o.rows = strtoull(val, NULL, 10), i++;
        else if (val && strcmp(a, "-c") == 0) o.cols = strtoull(val, NULL, 10), i++;
        else if (val && strcmp(a, "-n") == 0) o.reps = atoi(val), i++;
        else if (val && strcmp(a, "-k") == 0) o.tokens = (uint32_t)atoi(val), i++;
        else if (val && strcmp(a, "-t") == 0) o.max_threads = atoi(val), i++;
        else if (strcmp(a, "--fine") == 0) o.fine = 1;
        else if (n_types < 32 && parse_type(a) != UINT32_MAX) types[n_types++] = parse_type(a);
        else {
            fprintf(stderr, "usage: bench_matmul [-r rows] [-c cols] [-n reps] [-k tokens] "
                            "[-t max_threads] [--fine] [TYPE...]\nunknown argument '%s'\n", a);
            return 2;
        }
    }
    if (o.max_threads < 1 || o.max_threads > 64 || o.reps < 1 || o.tokens < 1) {
        fprintf(stderr, "bench_matmul: bad -t, -n or -k\n");
        return 2;
    }
    if (n_types == 0) {
        const uint32_t def[4] = {SW_TYPE_Q8_0, SW_TYPE_Q4_K, SW_TYPE_Q6_K, SW_TYPE_Q5_0};
        memcpy(types, def, sizeof def);
        n_types = 4;
    }
    cpu_pool *pools[64] = {NULL};
    for (int t = 0; t < o.max_threads; t++)
        if (cpu_pool_create(t + 1, &pools[t]) != SW_OK) {
            fprintf(stderr, "bench_matmul: %s\n", sw_last_error());
            return 1;
        }
    printf("matmul%s %llu x %llu, %u token(s), best of %d\n", o.fine ? " (fine)" : "",
           (unsigned long long)o.rows, (unsigned long long)o.cols, o.tokens, o.reps);
    bench_read(o.rows * o.cols, o.reps);
    int rc = 0;
    for (int i = 0; i < n_types; i++)
        rc |= bench_type(types[i], &o, pools);
    for (int t = 0; t < o.max_threads; t++)
        cpu_pool_destroy(pools[t]);
    return rc;
}
