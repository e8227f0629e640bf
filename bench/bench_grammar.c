/*
 * bench_grammar.c — what structured output costs per token: the time to
 * mask a logits row (grammar.h: cached per-position classes plus exits)
 * beside the time of one decode step, on a real model's vocabulary.
 *
 *   cmake --build build --target bench_grammar
 *   build/bench/bench_grammar [-m MODEL] [-t THREADS] [-n TOKENS]
 *
 * For each schema: greedy decoding under the grammar, twice over the same
 * grammar: "cold" (its token cache empty: each new position is walked
 * over the whole vocabulary once) and "warm" (a second request: cached).
 * Prints the mean and worst mask time per token, the mean decode step and
 * the ratio; the first steps of each cold run are also checked against a
 * brute-force test of every token (the mask must equal it).
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "grammar/grammar.h"
#include "spillway_grammar.h"
#include "util/clock.h"

static const char *const SCHEMAS[][2] = {
    {"agent", "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},\"age\":"
              "{\"type\":\"integer\",\"minimum\":0,\"maximum\":150},\"email\":{\"type\":"
              "\"string\"},\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},"
              "\"maxItems\":4},\"role\":{\"enum\":[\"admin\",\"user\",\"guest\"]}},\"required\":"
              "[\"name\",\"age\",\"email\",\"tags\",\"role\"],\"additionalProperties\":false}"},
    {"tool-call", "{\"type\":\"object\",\"properties\":{\"function\":{\"enum\":[\"get_weather\","
                  "\"search\"]},\"arguments\":{\"type\":\"object\",\"properties\":{\"city\":"
                  "{\"type\":\"string\",\"maxLength\":40},\"days\":{\"type\":\"integer\"}},"
                  "\"required\":[\"city\"]}},\"required\":[\"function\",\"arguments\"]}"},
    {"json_object", NULL},
};

typedef struct run_stats {
    double mask_s, mask_max_s, step_s;
    double cpu_s, cpu_max_s;     /* the mask's thread CPU time: without preemption */
    int n;
    int mismatches;
} run_stats;

/* Tokens whose mask bit differs from a brute-force check. */
static int brute_mismatches(sw_grammar *g, const gvocab *v, gmatch *gm, gstate *tmp) {
    const uint64_t *bits = NULL;
    if (gmatch_mask_bits(gm, &bits) != SW_OK)
        return -1;
    const gstate *s = gmatch_state(gm);
    int bad = 0;
    for (uint32_t id = 0; id < v->n_vocab; id++) {
        bool want = false;
        const uint32_t len = v->off[id + 1] - v->off[id];
        bool end = false;
        for (uint32_t j = 0; j < v->n_end; j++)
            end = end || (uint32_t)v->end_ids[j] == id;
        if (end)
            want = s->accept;
        else if (len > 0)
            want = gstate_accepts(g, s, v->blob + v->off[id], len, tmp);
        bad += want != (bool)(bits[id >> 6] >> (id & 63) & 1);
    }
    return bad;
}

static double cpu_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int32_t argmax(const float *x, uint32_t n) {
    uint32_t best = 0;
    for (uint32_t i = 1; i < n; i++)
        best = x[i] > x[best] ? i : best;
    return (int32_t)best;
}

/* Greedy decoding of up to n_tok tokens under g from the prompt. */
static run_stats run(sw_engine *e, const sw_model *m, sw_grammar *g, const gvocab *v,
                     int n_tok, int n_brute) {
    run_stats rs = {0};
    sw_session *s = NULL;
    gmatch *gm = NULL;
    const uint32_t nv = sw_engine_n_vocab(e);
    float *logits = malloc((size_t)nv * sizeof *logits);
    gstate *tmp = malloc(2 * sizeof *tmp);
    int32_t ids[64];
    size_t n = 0;
    const char *prompt = "Reply with JSON describing a person:";
    if (!logits || !tmp || sw_session_create(e, &s) != SW_OK || gmatch_create(g, v, &gm) != SW_OK ||
        sw_tokenize(m, prompt, strlen(prompt), SW_TOK_ADD_BOS, ids, 64, &n) != SW_OK ||
        sw_session_eval(s, ids, n, logits, 0) != SW_OK) {
        fprintf(stderr, "bench_grammar: %s\n", sw_last_error());
        rs.n = -1;
        goto done;
    }
    for (int i = 0; i < n_tok && !gmatch_done(gm); i++) {
        const double c0 = cpu_s();
        double t0 = sw_clock_s();
        if (gmatch_mask_logits(gm, logits) != SW_OK)
            break;
        const double dt = sw_clock_s() - t0, dc = cpu_s() - c0;
        rs.cpu_s += dc;
        rs.cpu_max_s = dc > rs.cpu_max_s ? dc : rs.cpu_max_s;
        if (i < n_brute) /* after the timing: it reads the mask just made */
            rs.mismatches += brute_mismatches(g, v, gm, tmp);
        rs.mask_s += dt;
        rs.mask_max_s = dt > rs.mask_max_s ? dt : rs.mask_max_s;
        const int32_t id = argmax(logits, nv);
        rs.n++;
        if (!gmatch_accept(gm, id) || gmatch_done(gm))
            break;
        t0 = sw_clock_s();
        if (sw_session_eval(s, &id, 1, logits, 0) != SW_OK)
            break;
        rs.step_s += sw_clock_s() - t0;
    }
done:
    gmatch_destroy(gm);
    sw_session_destroy(s);
    free(logits);
    free(tmp);
    return rs;
}

static void report(const char *name, const char *phase, run_stats r) {
    const double mask_ms = r.n ? 1e3 * r.mask_s / r.n : 0, step_ms = r.n > 1 ? 1e3 * r.step_s /
                                                                             (r.n - 1) : 0;
    printf("| %-11s | %-4s | %3d | %7.3f | %7.2f | %7.3f | %7.2f | %7.2f | %5.1f%% | %d |\n",
           name, phase, r.n, mask_ms, 1e3 * r.mask_max_s, r.n ? 1e3 * r.cpu_s / r.n : 0,
           1e3 * r.cpu_max_s, step_ms, step_ms > 0 ? 100 * mask_ms / step_ms : 0,
           r.mismatches);
}

int main(int argc, char **argv) {
    char path[4096] = "";
    int threads = 2, n_tok = 48;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-m"))
            snprintf(path, sizeof path, "%s", argv[i + 1]);
        else if (!strcmp(argv[i], "-t"))
            threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-n"))
            n_tok = atoi(argv[i + 1]);
    }
    if (!path[0] && sw_default_model_path(path, sizeof path) != SW_OK)
        return 1;
    sw_model *m = NULL;
    sw_engine *e = NULL;
    gvocab *v = NULL;
    sw_plan_options po = sw_plan_options_default();
    po.backend = "cpu";
    po.n_threads = threads;
    po.n_ctx = 512;
    if (sw_model_open(path, &m) != SW_OK || sw_engine_launch(m, &po, NULL, &e) != SW_OK) {
        fprintf(stderr, "bench_grammar: %s\n", sw_last_error());
        return 1;
    }
    const double t0 = sw_clock_s();
    if (gvocab_create(m, sw_engine_n_vocab(e), &v) != SW_OK)
        return 1;
    printf("model %s, vocabulary %u tokens (%u with bytes), %d threads\n", path, v->n_vocab,
           v->n_sorted, threads);
    printf("vocabulary bytes + sort (once per scheduler): %.1f ms\n\n",
           1e3 * (sw_clock_s() - t0));
    printf("| schema      | run  | tok | mask ms | max ms  | mask cpu ms | cpu max ms | step ms "
           "| mask/step | mismatches |\n|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < sizeof SCHEMAS / sizeof SCHEMAS[0]; i++) {
        sw_grammar *g = NULL;
        const sw_status st = SCHEMAS[i][1] ? sw_grammar_from_json_schema(
                                                 SCHEMAS[i][1], strlen(SCHEMAS[i][1]), &g)
                                           : sw_grammar_json_object(&g);
        if (st != SW_OK) {
            fprintf(stderr, "bench_grammar: %s\n", sw_last_error());
            return 1;
        }
        report(SCHEMAS[i][0], "cold", run(e, m, g, v, n_tok, 4));
        report(SCHEMAS[i][0], "warm", run(e, m, g, v, n_tok, 0));
        sw_grammar_destroy(g);
    }
    gvocab_destroy(v);
    sw_engine_destroy(e);
    sw_model_close(m);
    return 0;
}
