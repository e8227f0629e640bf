/*
 * bench.h — `spillway bench` (bench.c), its table and JSON (bench_print.c)
 * and the decode bound it reports next to generation figures (bench_bw.c):
 * the weight bytes one decoded token reads, and the host's measured read
 * bandwidth.
 */
#ifndef SW_CLI_BENCH_H
#define SW_CLI_BENCH_H

#include <stdint.h>

#include "cli/cli.h"

int cmd_bench(int argc, char **argv);

/* `spillway bench --expert-trace FILE --cache-slots N,...` (bench_experts.c):
 * a routing trace replayed against expert caches, no model. */
int bench_expert_replay(int argc, char **argv);

/* The model as llama-bench names it in its rows. */
typedef struct bench_model {
    const char *file;                /* file name part of the path */
    uint64_t size_bytes;             /* sum of tensor sizes */
    uint64_t n_params;
} bench_model;

/* One test: a pp (n_gen == 0) or a tg (n_prompt == 0) at one thread count. */
typedef struct bench_result {
    long n_prompt, n_gen, threads;
    uint32_t n_batch;                /* the engine's prefill chunk */
    double mean, stddev;             /* tokens/s; stddev over samples (n - 1) */
    double *samples;                 /* (reps) tokens/s, borrowed */
    uint64_t bytes_per_token;        /* tg only: bench_bytes_per_token */
    double read_Bps;                 /* tg only: bench_read_bandwidth */
} bench_result;

/* llama-bench's markdown table: the header, then one row per test as it
 * finishes (flushed, so long runs show progress). */
void bench_print_header(void);
void bench_print_row(const bench_model *bm, const bench_result *t);

/* After the table: one line per tg test with its decode bound. */
void bench_print_bounds(const bench_result *res, size_t n);

/* --json: one array, one object per test (see spillway bench --help). */
void bench_print_json(const bench_model *bm, const bench_result *res, size_t n, long reps);

/* Read bandwidth of this host in bytes/s: n_threads threads summing
 * disjoint slices of one `bytes` buffer (make it larger than the last-level
 * cache), best of n_runs timed sweeps after an untimed one that faults the
 * pages in. No memcpy: only loads, so it is what a matrix-vector product
 * streaming weights can hope for. Returns an exit status (error printed). */
int bench_read_bandwidth(int n_threads, uint64_t bytes, int n_runs, double *Bps);

/* Weight bytes one decoded token reads, as the engine holds them: every
 * layer's tensors plus the LM head (the embedding matrix when tied; the
 * lookup of one embedding row is left out), from the engine's plan (its
 * JSON: the sum of layers[].bytes and model.output_bytes, each tensor
 * padded as the engine lays it out). Returns an exit status. */
int bench_bytes_per_token(const sw_engine *e, uint64_t *bytes);

#endif
