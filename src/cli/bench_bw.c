#define _POSIX_C_SOURCE 200809L
/*
 * bench_bw.c — the decode bound of `spillway bench`: bytes one decoded
 * token reads (from the engine's plan) over the host's read bandwidth
 * (measured here). A decoder that streams every weight once per token
 * cannot beat bytes / bandwidth, so the bound says how far a kernel is
 * from the memory wall rather than from another engine.
 *
 * The sweep only loads and adds (no memcpy, whose stores would count
 * twice), eight independent sums per cache line so the adds never limit
 * it; the buffer is written first by the thread that later reads each
 * slice (first touch), so page faults and remote NUMA pages stay out. It
 * asks for each line BW_PREFETCH_WORDS ahead, as the CPU backend's decode
 * kernels do (idot_x86.h): on Zen 4 the hardware prefetcher alone left a
 * core at 31 GB/s where the kernels then read 42, a bound below the speed.
 */
#include <pthread.h>
#include <stdlib.h>

#include "cli/bench.h"
#include "cli/generate.h"
#include "format/json_util.h"
#include "util/clock.h"

#define BW_MAX_THREADS 256
#define BW_LINE_WORDS 8 /* uint64 words per 64-byte cache line */
#define BW_PREFETCH_WORDS 1152 /* 9 KiB: the kernels' distance */

typedef struct bw_job {
    uint64_t *words;
    uint64_t n_words;
    int n_threads;
    int fill;                  /* 1: write the pattern instead of reading */
    uint64_t sink[BW_MAX_THREADS];
} bw_job;

typedef struct bw_arg {
    bw_job *job;
    int ith;
} bw_arg;

static void bw_slice(bw_job *j, int ith) {
    uint64_t lines = j->n_words / BW_LINE_WORDS;
    uint64_t w0 = lines * (uint64_t)ith / (uint64_t)j->n_threads * BW_LINE_WORDS;
    uint64_t w1 = lines * (uint64_t)(ith + 1) / (uint64_t)j->n_threads * BW_LINE_WORDS;
    uint64_t *p = j->words;
    if (j->fill) {
        for (uint64_t i = w0; i < w1; i++)
            p[i] = i * 0x9e3779b97f4a7c15u;
        return;
    }
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
    for (uint64_t i = w0; i < w1; i += BW_LINE_WORDS) {
        __builtin_prefetch(p + i + BW_PREFETCH_WORDS); /* never faults */
        s0 += p[i];
        s1 += p[i + 1];
        s2 += p[i + 2];
        s3 += p[i + 3];
        s4 += p[i + 4];
        s5 += p[i + 5];
        s6 += p[i + 6];
        s7 += p[i + 7];
    }
    /* Stored so the compiler cannot drop the loads. */
    j->sink[ith] = s0 ^ s1 ^ s2 ^ s3 ^ s4 ^ s5 ^ s6 ^ s7;
}

static void *bw_worker(void *p) {
    bw_arg *a = p;
    bw_slice(a->job, a->ith);
    return NULL;
}

/* One sweep on n_threads threads (the caller is thread 0); returns its
 * seconds, or a negative value when a thread could not be started. The
 * clock includes starting the threads: tens of microseconds against a
 * sweep of tens of milliseconds, and no start barrier to get stuck in. */
static double bw_sweep(bw_job *j) {
    pthread_t tid[BW_MAX_THREADS];
    bw_arg args[BW_MAX_THREADS];
    int started = 1;
    double t0 = sw_clock_s();
    for (; started < j->n_threads; started++) {
        args[started] = (bw_arg){j, started};
        if (pthread_create(&tid[started], NULL, bw_worker, &args[started]) != 0)
            break;
    }
    bool all = started == j->n_threads;
    if (all)
        bw_slice(j, 0);
    for (int t = 1; t < started; t++)
        pthread_join(tid[t], NULL);
    return all ? sw_clock_s() - t0 : -1.0;
}

int bench_read_bandwidth(int n_threads, uint64_t bytes, int n_runs, double *Bps) {
    if (n_threads < 1 || n_threads > BW_MAX_THREADS || n_runs < 1 || bytes < 4096) {
        cli_error("bench: read bandwidth: bad arguments (%d threads, %d runs)", n_threads,
                  n_runs);
        return CLI_EXIT_USAGE;
    }
    bw_job *j = calloc(1, sizeof *j);
    uint64_t n_words = bytes / 64 * BW_LINE_WORDS;
    uint64_t *words = j ? aligned_alloc(64, (size_t)(n_words * sizeof *words)) : NULL;
    if (words == NULL) {
        free(j);
        cli_error("bench: out of memory for the %.0f MiB read-bandwidth buffer",
                  (double)bytes / 1048576.0);
        return CLI_EXIT_OOM_HOST;
    }
    *j = (bw_job){.words = words, .n_words = n_words, .n_threads = n_threads, .fill = 1};
    double best = 0.0;
    int rc = CLI_EXIT_OK;
    for (int run = -1; run < n_runs; run++) { /* run -1 writes the pages */
        double dt = bw_sweep(j);
        if (dt < 0.0) {
            cli_error("bench: could not start %d threads for the read-bandwidth sweep",
                      n_threads);
            rc = CLI_EXIT_FAILURE;
            break;
        }
        j->fill = 0;
        if (run >= 0 && dt > 0.0 && (double)(n_words * 8) / dt > best)
            best = (double)(n_words * 8) / dt;
    }
    free(words);
    free(j);
    *Bps = best;
    return rc;
}

/* Sums layers[].bytes and model.output_bytes of a plan printed as JSON. */
static sw_status plan_json_bytes(const json_object *root, uint64_t *bytes) {
    json_object *model = NULL, *layers = NULL;
    int64_t out_bytes = 0;
    sw_status st;
    if ((st = jsonu_get_obj(root, "model", "the plan", &model)) != SW_OK ||
        (st = jsonu_get_i64(model, "output_bytes", "the plan's model", &out_bytes)) != SW_OK ||
        (st = jsonu_get_arr(root, "layers", "the plan", &layers)) != SW_OK)
        return st;
    uint64_t sum = (uint64_t)out_bytes;
    size_t n = json_object_array_length(layers);
    for (size_t i = 0; i < n; i++) {
        int64_t b = 0;
        if ((st = jsonu_get_i64(json_object_array_get_idx(layers, i), "bytes",
                                "the plan's layer", &b)) != SW_OK)
            return st;
        sum += (uint64_t)b;
    }
    *bytes = sum;
    return SW_OK;
}

int bench_bytes_per_token(const sw_engine *e, uint64_t *bytes) {
    char *text = NULL;
    size_t len = 0;
    json_object *root = NULL;
    FILE *f = open_memstream(&text, &len);
    if (f == NULL) {
        cli_error("bench: out of memory reading the plan");
        return CLI_EXIT_OOM_HOST;
    }
    sw_status st = sw_engine_print_plan(e, f, 1);
    if (fclose(f) != 0 && st == SW_OK) {
        free(text);
        cli_error("bench: out of memory reading the plan");
        return CLI_EXIT_OOM_HOST;
    }
    if (st == SW_OK)
        st = jsonu_parse(text, len, "the plan", &root);
    if (st == SW_OK)
        st = plan_json_bytes(root, bytes);
    json_object_put(root);
    free(text);
    if (st != SW_OK) {
        const char *msg = sw_last_error();
        cli_error("bench: the plan has no weight sizes%s%s", msg[0] ? ": " : "", msg);
        return cli_exit_code(st);
    }
    return CLI_EXIT_OK;
}
