#define _POSIX_C_SOURCE 200809L
/*
 * bench.c — `spillway bench [-m MODEL] [-p 128,512] [-n 128] [-t 1,2] [-r R]
 * [--json]`: llama-bench's figures, in its units, for the cpu backend, so
 * the two can be run side by side (bench/peer.sh).
 *
 * As llama-bench: "ppN" is one evaluation of N prompt tokens from an empty
 * context (only the last token's logits), "tgN" is N tokens evaluated one
 * at a time from an empty context; tokens are fixed pseudo-random ids
 * (BOS first when the model adds it), the same for every repetition and
 * thread count; t/s = tokens / seconds per repetition, reported as mean ±
 * sample stddev over -r repetitions after one uncounted warm-up. One engine
 * per thread count, a fresh session per run (its creation is not timed).
 * Next to tg figures: the decode bound, weight bytes per token over the
 * measured read bandwidth at the same thread count (bench_bw.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/bench.h"
#include "cli/generate.h"
#include "cli/model_arg.h"
#include "util/clock.h"

#define BENCH_MAX_VALUES 16
#define BENCH_MAX_TOKENS 1048576L
#define BENCH_MAX_UBATCH 512u          /* llama-bench's -ub default */
#define BENCH_BW_BYTES ((uint64_t)1 << 30)
#define BENCH_BW_RUNS 3

typedef struct bench_list {
    long v[BENCH_MAX_VALUES];
    size_t n;
} bench_list;

typedef struct bench_opts {
    const char *model;               /* -m; NULL = the default model */
    bench_list n_prompt, n_gen, threads;
    long reps;                       /* -r */
    const char *kv_type, *cpu_dots;  /* --kv-type, --cpu-dots; NULL = defaults */
    bool json;
} bench_opts;

static void usage(FILE *out) {
    fputs("usage: spillway bench [-m MODEL] [-p N,...] [-n N,...] [-t N,...] [-r R]\n"
          "                      [--kv-type T] [--cpu-dots D] [--json]\n"
          "  -m MODEL   model file or folder (default: the fetched Gemma 3 270M)\n"
          "  -p N,...   prompt processing tests: one pass over N tokens (default 512;\n"
          "             0 skips)\n"
          "  -n N,...   generation tests: N tokens one at a time (default 128; 0 skips)\n"
          "  -t N,...   CPU threads, one engine each (default: all cores)\n"
          "  -r R       repetitions per test, after one warm-up (default 5)\n"
          "  --kv-type T    KV cache type: f16 (default, as llama-bench's), bf16, f32\n"
          "  --cpu-dots D   q8 (default), bf16 or f32 (see spillway run --help)\n"
          "  --json     one JSON array, one object per test, tg objects with the\n"
          "             decode bound (bytes_per_token, read_bandwidth_Bps)\n"
          "figures as llama-bench prints them: tokens/s, mean ± stddev; cpu backend\n"
          "       spillway bench --expert-trace FILE --cache-slots N,...  replays a routing\n"
          "             trace against expert caches (see spillway bench --expert-trace x -h)\n",
          out);
}

/* Parses "128,512" into l (each value in lo..hi). Returns 0 or -1 (printed). */
static int parse_list(const char *flag, const char *s, long lo, long hi, bench_list *l) {
    char buf[256];
    if (strlen(s) >= sizeof buf) {
        cli_error("%s: list too long: '%s'", flag, s);
        return -1;
    }
    size_t len = strlen(s);
    if (len == 0 || s[0] == ',' || s[len - 1] == ',' || strstr(s, ",,")) {
        cli_error("%s expects comma-separated integers in %ld..%ld, got '%s'", flag, lo, hi, s);
        return -1;
    }
    strcpy(buf, s);
    l->n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (l->n == BENCH_MAX_VALUES) {
            cli_error("%s takes at most %d values, got '%s'", flag, BENCH_MAX_VALUES, s);
            return -1;
        }
        if (cli_parse_long(flag, tok, lo, hi, &l->v[l->n++]) != 0)
            return -1;
    }
    return 0;
}

/* --kv-type or --cpu-dots, checked here so that a typo stops before any
 * table is printed. Returns 0 or -1 (printed). */
static int parse_precision(bench_opts *o, const char *flag, const char *v) {
    const bool kv = !strcmp(flag, "--kv-type");
    if (kv ? strcmp(v, "f16") && strcmp(v, "bf16") && strcmp(v, "f32")
           : strcmp(v, "q8") && strcmp(v, "bf16") && strcmp(v, "f32")) {
        cli_error("%s expects one of %s, got '%s'", flag, kv ? "f16, bf16, f32" : "q8, bf16, f32",
                  v);
        return -1;
    }
    *(kv ? &o->kv_type : &o->cpu_dots) = v;
    return 0;
}

/* Returns CLI_EXIT_OK, CLI_EXIT_USAGE (printed), or -1 after --help. */
static int parse_args(int argc, char **argv, bench_opts *o) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return -1;
        }
        if (!strcmp(a, "--json")) {
            o->json = true;
            continue;
        }
        bool known = !strcmp(a, "-m") || !strcmp(a, "-p") || !strcmp(a, "-n") ||
                     !strcmp(a, "-t") || !strcmp(a, "-r") || !strcmp(a, "--kv-type") ||
                     !strcmp(a, "--cpu-dots");
        if (!known) {
            cli_error("bench: unknown option '%s' (see spillway bench --help)", a);
            return CLI_EXIT_USAGE;
        }
        if (++i >= argc) {
            cli_error("%s needs a value (see spillway bench --help)", a);
            return CLI_EXIT_USAGE;
        }
        const char *v = argv[i];
        int bad = 0;
        if (!strcmp(a, "--kv-type") || !strcmp(a, "--cpu-dots"))
            bad = parse_precision(o, a, v);
        else if (a[1] == 'm')
            o->model = v;
        else if (a[1] == 'p')
            bad = parse_list(a, v, 0, BENCH_MAX_TOKENS, &o->n_prompt);
        else if (a[1] == 'n')
            bad = parse_list(a, v, 0, BENCH_MAX_TOKENS, &o->n_gen);
        else if (a[1] == 't')
            bad = parse_list(a, v, 1, 256, &o->threads);
        else
            bad = cli_parse_long(a, v, 1, 1000, &o->reps);
        if (bad)
            return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

static long list_max(const bench_list *l) {
    long m = 0;
    for (size_t i = 0; i < l->n; i++)
        m = l->v[i] > m ? l->v[i] : m;
    return m;
}

/* Fixed pseudo-random ids (splitmix64, seeded by the test's sizes so every
 * repetition and thread count sees the same ones); BOS first when the
 * model adds it, as llama-bench does. */
static void make_tokens(int32_t *ids, long n, uint64_t seed, uint32_t n_vocab, int32_t bos) {
    uint64_t x = seed;
    for (long i = 0; i < n; i++) {
        uint64_t z = (x += 0x9e3779b97f4a7c15u);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
        ids[i] = (int32_t)((z ^ (z >> 31)) % n_vocab);
    }
    if (n > 0 && bos >= 0)
        ids[0] = bos;
}

/* One run on a fresh session; *seconds covers the evaluations only. */
static int run_once(sw_engine *e, const int32_t *ids, const bench_result *t, float *logits,
                    double *seconds) {
    sw_session *s = NULL;
    sw_status st = sw_session_create(e, &s);
    if (st != SW_OK)
        return cli_fail(st);
    double t0 = sw_clock_s();
    if (t->n_prompt > 0)
        st = sw_session_eval(s, ids, (size_t)t->n_prompt, logits, 0);
    for (long i = 0; st == SW_OK && i < t->n_gen; i++)
        st = sw_session_eval(s, ids + i, 1, logits, 0);
    *seconds = sw_clock_s() - t0;
    int rc = st == SW_OK ? CLI_EXIT_OK : cli_fail(st);
    sw_session_destroy(s);
    return rc;
}

/* Warm-up, then t->samples[0..reps) and their mean and sample stddev. */
static int run_test(sw_engine *e, int32_t *ids, float *logits, int32_t bos, long reps,
                    bench_result *t) {
    long n = t->n_prompt + t->n_gen;
    double secs = 0.0, sum = 0.0, sq = 0.0;
    make_tokens(ids, n, 0x5eed0000u + (uint64_t)t->n_prompt * 65537u + (uint64_t)t->n_gen,
                sw_engine_n_vocab(e), bos);
    int rc = run_once(e, ids, t, logits, &secs);
    for (long r = 0; rc == CLI_EXIT_OK && r < reps; r++) {
        rc = run_once(e, ids, t, logits, &secs);
        t->samples[r] = secs > 0.0 ? (double)n / secs : 0.0;
        sum += t->samples[r];
    }
    t->mean = sum / (double)reps;
    for (long r = 0; r < reps; r++)
        sq += (t->samples[r] - t->mean) * (t->samples[r] - t->mean);
    t->stddev = reps > 1 ? sqrt(sq / (double)(reps - 1)) : 0.0;
    return rc;
}

/* Plans and loads the cpu engine for th threads, sized for every test:
 * context for the longest prompt plus the longest generation, prefill
 * chunks of min(longest prompt, 512) so a pp test is one forward (or a
 * few, as llama-bench's -ub 512 makes them). */
static int bench_launch(const sw_model *m, const bench_opts *o, long th, sw_engine **e) {
    long max_p = list_max(&o->n_prompt), max_n = list_max(&o->n_gen);
    sw_plan_options po = sw_plan_options_default();
    po.backend = "cpu";
    po.n_threads = (int)th;
    po.n_ctx = (uint32_t)(max_p + max_n);
    po.n_batch = max_p > 0 && (unsigned long)max_p < BENCH_MAX_UBATCH ? (uint32_t)max_p
                                                                      : BENCH_MAX_UBATCH;
    po.kv_type = o->kv_type;     /* checked by the planner: its message names the choices */
    po.cpu_dots = o->cpu_dots;
    sw_status st = sw_engine_launch(m, &po, NULL, e);
    if (st != SW_OK)
        return cli_fail(st);
    if (sw_engine_notes(*e)[0])
        fprintf(stderr, "note: %s", sw_engine_notes(*e));
    return CLI_EXIT_OK;
}

/* All tests at one thread count on one engine; fills res[*n_done...]. */
static int bench_threads(const sw_model *m, const bench_opts *o, const bench_model *bm, long th,
                         int32_t *ids, bench_result *res, size_t *n_done) {
    sw_special_tokens sp;
    sw_engine *e = NULL;
    float *logits = NULL;
    uint64_t bytes_per_token = 0;
    double read_Bps = 0.0;
    sw_status st = sw_model_special_tokens(m, &sp);
    if (st != SW_OK)
        return cli_fail(st);
    int rc = bench_launch(m, o, th, &e);
    if (rc == CLI_EXIT_OK && list_max(&o->n_gen) > 0 &&
        (rc = bench_bytes_per_token(e, &bytes_per_token)) == CLI_EXIT_OK)
        rc = bench_read_bandwidth((int)th, BENCH_BW_BYTES, BENCH_BW_RUNS, &read_Bps);
    if (rc == CLI_EXIT_OK &&
        (logits = malloc((size_t)sw_engine_n_vocab(e) * sizeof *logits)) == NULL) {
        cli_error("bench: out of memory for the logits");
        rc = CLI_EXIT_OOM_HOST;
    }
    int32_t bos = sp.add_bos ? sp.bos : -1;
    size_t n_tests = o->n_prompt.n + o->n_gen.n;
    for (size_t i = 0; rc == CLI_EXIT_OK && i < n_tests; i++) {
        bool pp = i < o->n_prompt.n;
        long v = pp ? o->n_prompt.v[i] : o->n_gen.v[i - o->n_prompt.n];
        if (v == 0)
            continue;
        bench_result *t = &res[*n_done];
        t->n_prompt = pp ? v : 0;
        t->n_gen = pp ? 0 : v;
        t->threads = th;
        t->n_batch = sw_engine_n_batch(e);
        t->bytes_per_token = pp ? 0 : bytes_per_token;
        t->read_Bps = pp ? 0.0 : read_Bps;
        if ((rc = run_test(e, ids, logits, bos, o->reps, t)) == CLI_EXIT_OK) {
            (*n_done)++;
            if (!o->json)
                bench_print_row(bm, t);
        }
    }
    free(logits);
    sw_engine_destroy(e);
    return rc;
}

int cmd_bench(int argc, char **argv) {
    for (int i = 1; i < argc; i++) /* a trace to replay: no model */
        if (!strcmp(argv[i], "--expert-trace"))
            return bench_expert_replay(argc, argv);
    long n_cpus = sysconf(_SC_NPROCESSORS_ONLN);
    bench_opts o = {.n_prompt = {{512}, 1}, .n_gen = {{128}, 1},
                    .threads = {{n_cpus > 0 ? (n_cpus < 256 ? n_cpus : 256) : 1}, 1}, .reps = 5};
    int rc = parse_args(argc, argv, &o);
    if (rc != CLI_EXIT_OK)
        return rc < 0 ? CLI_EXIT_OK : rc;
    long max_p = list_max(&o.n_prompt), max_n = list_max(&o.n_gen);
    if (max_p == 0 && max_n == 0) {
        cli_error("bench: nothing to measure: every -p and -n value is 0");
        return CLI_EXIT_USAGE;
    }
    size_t n_res = o.threads.n * (o.n_prompt.n + o.n_gen.n);
    sw_model *m = NULL;
    sw_model_summary ms;
    bench_result *res = calloc(n_res, sizeof *res);
    double *samples = calloc(n_res * (size_t)o.reps, sizeof *samples);
    int32_t *ids = malloc((size_t)(max_p > max_n ? max_p : max_n) * sizeof *ids);
    size_t n_done = 0;
    if (res == NULL || samples == NULL || ids == NULL) {
        cli_error("bench: out of memory");
        rc = CLI_EXIT_OOM_HOST;
        goto done;
    }
    for (size_t i = 0; i < n_res; i++)
        res[i].samples = samples + i * (size_t)o.reps;
    if ((rc = cli_open_model(o.model, &m)) != CLI_EXIT_OK)
        goto done;
    sw_model_get_summary(m, &ms);
    const char *slash = strrchr(ms.path, '/');
    bench_model bm = {slash && slash[1] ? slash + 1 : ms.path, ms.tensor_bytes, ms.n_params};
    if (!o.json)
        bench_print_header();
    for (size_t i = 0; rc == CLI_EXIT_OK && i < o.threads.n; i++)
        rc = bench_threads(m, &o, &bm, o.threads.v[i], ids, res, &n_done);
    if (rc == CLI_EXIT_OK && o.json)
        bench_print_json(&bm, res, n_done, o.reps);
    else if (rc == CLI_EXIT_OK)
        bench_print_bounds(res, n_done);
done:
    free(ids);
    free(samples);
    free(res);
    sw_model_close(m);
    return rc;
}
