/*
 * test_alloc_faults.c — every host allocation Spillway makes on the way
 * from a model file to generated tokens may fail, and each failure ends
 * cleanly (SQLite's technique, through the counting shim of alloc_fault.h).
 *
 * One run opens a model, plans, creates the engine, tokenizes a prompt,
 * and generates N_PREDICT tokens on a scheduler (sampled, with a stop
 * string), then frees everything, all through include/spillway.h. Per
 * configuration (a tiny GGUF file and Hugging Face folders, sharded or
 * not; the cpu backend, and the sim with resident, streamed and host
 * layers), a counted run gives the number of allocations A, then the run
 * is repeated with the Nth allocation failing for every N = 1, 2, ...
 * until a run no longer reaches its Nth (N = A + 1). Each run with a
 * failed allocation must end in SW_ERR_OOM_HOST whose message names host
 * memory (contains "host memory"), crash nothing and, under ASan, leak
 * nothing (LeakSanitizer is asked after each run, until the first leak).
 * No fallback is intended anywhere: a run that completes although one of
 * its allocations failed fails the test. Each failure names the caller of
 * the allocation (addr2line -e EXE ADDR).
 * Allocations inside shared libraries (json-c, libc) are not counted.
 */
#define _GNU_SOURCE /* dladdr */

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc_fault.h"
#include "check.h"

#if defined(__SANITIZE_ADDRESS__)
#define HAVE_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HAVE_LSAN 1
#endif
#endif
#ifdef HAVE_LSAN
#include <sanitizer/lsan_interface.h>
#define LEAK_CHECKS 1
#else
#define LEAK_CHECKS 0
#endif

#define N_PREDICT 3
#define PROMPT "<start_of_turn>user\nThe quick brown fox<end_of_turn>\n" /* control tokens */

typedef struct config {
    const char *name;
    const char *model;    /* under tests/data */
    const char *backend;  /* NULL: the library's choice (in builds without CUDA) */
    const char *place;    /* --place, NULL: the planner's */
    const char *weights;  /* --weights: converted at load; NULL: as stored */
    int n_threads;        /* 0: one */
} config;

#define MIXED "0=resident,1=streamed,2-=host,lm_head=host"

static const config configs[] = {
    {"gguf cpu", "tiny/gemma3.gguf", "cpu", NULL, NULL, 0},
    {"gguf sim", "tiny/gemma3.gguf", "sim", MIXED, NULL, 0},
    {"hf sharded cpu", "tiny/gemma2-hf-sharded", "cpu", NULL, NULL, 0},
    {"hf sim", "tiny/gemma3-hf", "sim", MIXED, NULL, 0},
    /* more of the readers, the planner and the engine: other architectures,
     * weights converted at load, worker threads, the backend chosen */
    {"gemma1 cpu q8_0", "tiny/gemma1.gguf", "cpu", NULL, "q8_0", 2},
    {"gemma1 hf sim", "tiny/gemma1-hf", "sim", MIXED, "bf16", 0},
    {"gemma2 auto", "tiny/gemma2.gguf", NULL, NULL, NULL, 0},
    {"gemma3 mm hf cpu", "tiny/gemma3-mm-hf", "cpu", NULL, NULL, 0},
    {"gemma4 ple sim", "tiny/gemma4-ple.gguf", "sim", "0=resident,1-=streamed,lm_head=host",
     NULL, 2}, /* KV-shared layers compute beside their caches' owners */
    {"gemma4 ple hf cpu", "tiny/gemma4-ple-hf", "cpu", NULL, "f16", 0},
    {"gemma4 kv hf sim", "tiny/gemma4-kv-hf", "sim", MIXED, NULL, 0},
    {"gemma4 moe sim", "tiny/gemma4-moe.gguf", "sim", "0-1=streamed,2-=host,experts:0=host",
     NULL, 0},
    {"gemma4 moe hf cpu", "tiny/gemma4-moe-hf", "cpu", NULL, NULL, 0},
};

/* What one run did: its first failure, or its tokens and text. */
typedef struct run {
    sw_status st;
    const char *stage;       /* where it failed */
    char msg[512];
    int32_t out[N_PREDICT];
    size_t n_out;
    char text[256];
    size_t text_len;
} run;

static void on_token(void *user, sw_request *request, int32_t id, const char *piece,
                     size_t len) {
    run *r = user;
    (void)request;
    (void)piece;
    (void)len;
    if (r->n_out < N_PREDICT)
        r->out[r->n_out] = id;
    r->n_out++;
}

static sw_plan_options plan_options(const config *c) {
    sw_plan_options o = sw_plan_options_default();
    o.backend = c->backend;
    o.place = c->place;
    o.weights = c->weights;
    o.n_ctx = 64;
    o.n_threads = c->n_threads ? c->n_threads : 1;
    o.default_rates = 1;
    o.device_mem_bytes = c->backend && !strcmp(c->backend, "sim") ? 64ull << 20 : 0;
    return o;
}

#define STAGE(name, expr)                                                      \
    do {                                                                       \
        r->stage = (name);                                                     \
        if ((r->st = (expr)) != SW_OK)                                         \
            goto done;                                                         \
    } while (0)

/* One run, from the model file to N_PREDICT tokens, everything freed. */
static void run_once(const config *c, const char *path, run *r) {
    sw_model *m = NULL;
    sw_plan *p = NULL;
    sw_engine *e = NULL;
    sw_scheduler *q = NULL;
    sw_request *req = NULL;
    int32_t ids[SW_TOKENIZE_MAX_IDS(sizeof PROMPT)];
    size_t n_ids = 0;
    const char *stop[] = {"\x01never"};
    memset(r, 0, sizeof *r);

    STAGE("open", sw_model_open(path, &m));
    sw_plan_options po = plan_options(c);
    STAGE("plan", sw_plan_create(m, NULL, &po, &p));
    sw_alloc_failure af;
    STAGE("engine", sw_engine_create(m, p, NULL, &e, &af));
    STAGE("tokenize", sw_tokenize(m, PROMPT, strlen(PROMPT),
                                  SW_TOK_ADD_BOS | SW_TOK_PARSE_SPECIAL, ids,
                                  sizeof ids / sizeof ids[0], &n_ids));
    STAGE("scheduler", sw_scheduler_create(e, m, &q));
    sw_request_options ro = sw_request_options_default();
    ro.sampling.temp = 0.8f;
    ro.sampling.top_k = 40;
    ro.sampling.seed = 7;
    ro.n_predict = N_PREDICT;
    ro.stop = stop;
    ro.n_stop = 1;
    ro.on_token = on_token;
    ro.user = r;
    STAGE("submit", sw_scheduler_submit(q, ids, n_ids, &ro, &req));
    for (uint32_t n = 1; n > 0;)
        STAGE("step", sw_scheduler_step(q, &n));
    sw_request_info info;
    sw_request_get_info(q, req, &info);
    r->stage = "finish";
    if (info.finish != SW_FINISH_LIMIT) {
        const char *why = NULL;
        r->st = sw_request_error(q, req, &why);
        snprintf(r->msg, sizeof r->msg, "the request ended '%s': %s",
                 sw_finish_name(info.finish), why);
        if (r->st == SW_OK)
            r->st = SW_ERR_ARG; /* not a failure: the wrong end */
    }
    r->text_len = sw_request_text(q, req, 0, r->text, sizeof r->text);
done:
    if (r->st != SW_OK && r->msg[0] == '\0')
        snprintf(r->msg, sizeof r->msg, "%s", sw_last_error());
    sw_request_release(q, req);
    sw_scheduler_destroy(q);
    sw_engine_destroy(e);
    sw_plan_destroy(p);
    sw_model_close(m);
}

static bool same_output(const run *a, const run *b) {
    return a->n_out == b->n_out && !memcmp(a->out, b->out, sizeof a->out) &&
           a->text_len == b->text_len && !memcmp(a->text, b->text, sizeof a->text);
}

/* Where the failed allocation was called from, for addr2line. */
static void print_site(const char *what, const config *c, uint64_t n) {
    void *site = alloc_fault_site();
    Dl_info dl;
    if (site != NULL && dladdr(site, &dl) && dl.dli_fname != NULL)
        fprintf(stderr, "  %s: %s, allocation %llu failed at %s+%#lx\n", what, c->name,
                (unsigned long long)n, dl.dli_fname,
                (unsigned long)((char *)site - (char *)dl.dli_fbase));
    else
        fprintf(stderr, "  %s: %s, allocation %llu failed at %p\n", what, c->name,
                (unsigned long long)n, site);
}

/* Whether memory leaked since the last check. A leaked block stays
 * leaked, so every later check would report it again: after the first
 * leak (named exactly, with its N) the checks stop. */
static bool leaked(void) {
#ifdef HAVE_LSAN
    static bool seen;
    if (seen)
        return false;
    seen = __lsan_do_recoverable_leak_check() != 0;
    return seen;
#else
    return false;
#endif
}

/* Checks the run whose allocation n failed. */
static void check_failed_run(const config *c, uint64_t n, const run *r, const run *clean) {
    if (r->st == SW_OK) {
        print_site("fallback", c, n);
        SW_CHECK(false, "%s: allocation %llu failed and the run went on (%s tokens or text "
                 "than without the failure)", c->name, (unsigned long long)n,
                 same_output(r, clean) ? "the same" : "other");
        return;
    }
    bool named = r->st == SW_ERR_OOM_HOST && strstr(r->msg, "host memory") != NULL;
    if (!named)
        print_site("message", c, n);
    SW_CHECK(named, "%s: allocation %llu failed: %s -> %s: %s", c->name, (unsigned long long)n,
             r->stage, sw_status_name(r->st), r->msg);
}

static void test_config(const config *c) {
    sw_device_report devices = {0};
    if (c->backend == NULL)
        sw_devices_query(&devices);
    if (devices.backend[0] != '\0') {
        /* it would pick a device, and static cudart's allocations count */
        printf("%-17s skipped: this build has CUDA\n", c->name);
        return;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s", sw_test_data(c->model));
    run clean, r;
    /* A first run outside the count: one-time initialisations (lazily
     * filled tables, thread-local state) happen once per process. */
    run_once(c, path, &clean);
    SW_CHECK(clean.st == SW_OK, "%s: the run without faults failed: %s -> %s: %s", c->name,
             clean.stage, sw_status_name(clean.st), clean.msg);
    if (clean.st != SW_OK)
        return;
    alloc_fault_arm(0);
    run_once(c, path, &clean);
    alloc_fault_disarm();
    const uint64_t n_alloc = alloc_fault_count();
    SW_CHECK(clean.st == SW_OK && clean.n_out == N_PREDICT, "%s: the counted run: %s",
             c->name, clean.msg);

    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    size_t n_runs = 0, n_leaks = 0;
    for (uint64_t n = 1;; n++) {
        alloc_fault_arm(n);
        run_once(c, path, &r);
        alloc_fault_disarm();
        n_runs++;
        if (!alloc_fault_hit()) {
            SW_CHECK(r.st == SW_OK && same_output(&r, &clean), "%s: the run past the last "
                     "allocation (%llu): %s", c->name, (unsigned long long)n, r.msg);
            SW_CHECK(n > n_alloc, "%s: only %llu allocations reached, %llu counted", c->name,
                     (unsigned long long)n - 1, (unsigned long long)n_alloc);
            break;
        }
        check_failed_run(c, n, &r, &clean);
        if (leaked()) {
            n_leaks++;
            print_site("leak", c, n);
            SW_CHECK(false, "%s: allocation %llu failed (%s: %s): memory leaked", c->name,
                     (unsigned long long)n, r.stage, r.msg);
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    const char *leaks = !LEAK_CHECKS ? "leaks not checked" : n_leaks ? "a leak" : "no leak";
    printf("%-17s %-26s %4llu host allocations, %4zu runs (N = 1..%zu failed), %s, "
           "%.1f s\n", c->name, c->model, (unsigned long long)n_alloc, n_runs, n_runs - 1,
           leaks,
           (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
}

int main(int argc, char **argv) {
    /* An argument picks configurations by name ("gguf cpu"). */
    for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++)
        if (argc < 2 || !strcmp(argv[1], configs[i].name))
            test_config(&configs[i]);
    printf("leak check after every run: %s\n", LEAK_CHECKS ? "on" : "off (no ASan in this build)");
    return sw_check_finish("test_alloc_faults");
}
