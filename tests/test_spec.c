/*
 * test_spec.c — speculative decoding (issue 36) held exact:
 *   - spec_ngram_draft: the longest suffix wins, its latest occurrence,
 *     at most k drafts, none without a match, n_min honoured;
 *   - spec_verify greedy on synthetic rows: the argmax kept while it is
 *     the draft, the correction, the bonus token when all k agree;
 *   - spec_verify sampled on synthetic rows (no model, 200,000 trials):
 *     the first output token is distributed as p, and the second, after a
 *     kept draft, as the next row's p, for n-gram drafts (q NULL) and
 *     drafts sampled from another distribution (spec_sample_draft);
 *   - through the scheduler (public API) on the tiny Gemma 3, drafting
 *     with n-grams and with the tiny Gemma 2 (same vocabulary): for three
 *     sampling settings, the tokens at positions 2-4 of 2,000 seeds are
 *     distributed as without drafts (two-sample chi-square), a token
 *     is the n-gram drafter's first draft as often as without drafts,
 *     and the stats say drafts were made, verified and kept; every
 *     request ends well (one seed's sequence after another's on a lane);
 *   - the same on the tiny Gemma 4 (gemma4-kv) drafted by its assistant
 *     (tools/golden/make_tiny_assistant.py), for two settings.
 * Bounds are six standard deviations: a correct implementation passes
 * them reliably. Checked when written, on a scratch copy of verify.c:
 * keeping every draft fails the synthetic and the scheduler checks (the
 * n-gram count by 11 deviations); drawing a rejection's token from p
 * instead of max(0, p - q), or accepting with p(d) alone, fails the
 * synthetic ones.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "engine/sampler.h"
#include "sched/spec.h"
#include "spillway.h"

static double chi_square_bound(uint32_t dof) { return dof + 6.0 * sqrt(2.0 * dof) + 6.0; }

/* ---- n-gram drafts --------------------------------------------------------- */

static void test_ngram(void) {
    int32_t out[16];
    /* "1 2 3 9 | 5 2 3 7 | 1 2 3": the 3-gram "1 2 3" (at 0) beats the
     * later 2-gram "2 3" (at 5), so the drafts are 9 5 2 ... */
    const int32_t a[] = {1, 2, 3, 9, 5, 2, 3, 7, 1, 2, 3};
    uint32_t n = spec_ngram_draft(a, 11, 2, 4, 3, out);
    SW_CHECK(n == 3 && out[0] == 9 && out[1] == 5 && out[2] == 2,
             "longest suffix: %u drafts, first %d (want 3, 9 5 2)", n, n ? out[0] : -1);
    /* n_max 2: only "2 3" is tried; its latest earlier occurrence (at 5) */
    n = spec_ngram_draft(a, 11, 2, 2, 3, out);
    SW_CHECK(n == 3 && out[0] == 7 && out[1] == 1 && out[2] == 2,
             "n_max 2, latest occurrence: %u drafts, first %d (want 3, 7 1 2)", n,
             n ? out[0] : -1);
    /* "4 5 6 | 4 5 8 | 4 5": the later "4 5" continues with 8 4 5; past
     * the sequence's end, drafts (if any) go on with its period of 3 */
    const int32_t b[] = {4, 5, 6, 4, 5, 8, 4, 5};
    n = spec_ngram_draft(b, 8, 2, 4, 16, out);
    SW_CHECK(n >= 3 && n <= 16 && out[0] == 8 && out[1] == 4 && out[2] == 5,
             "latest occurrence: %u drafts, first %d (want 8 4 5 ...)", n, n ? out[0] : -1);
    for (uint32_t i = 3; i < n && i < 16; i++)
        SW_CHECK(out[i] == out[i - 3], "draft %u past the end: %d, not the period's %d", i,
                 out[i], out[i - 3]);
    /* k caps the drafts */
    n = spec_ngram_draft(b, 8, 2, 4, 1, out);
    SW_CHECK(n == 1 && out[0] == 8, "k = 1: %u drafts (want 1, 8)", n);
    n = spec_ngram_draft(b, 8, 2, 4, 2, out);
    SW_CHECK(n == 2 && out[0] == 8 && out[1] == 4, "k = 2: %u drafts (want 2, 8 4)", n);
    const int32_t c[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2};
    n = spec_ngram_draft(c, 11, 2, 4, 4, out);
    SW_CHECK(n == 4 && out[0] == 3 && out[3] == 6, "k = 4 of 7 following: %u (want 4, 3..6)", n);
    /* "7 7 7": "7 7" at 0 overlaps the suffix; drafts are 7s */
    const int32_t d[] = {7, 7, 7};
    n = spec_ngram_draft(d, 3, 2, 4, 8, out);
    SW_CHECK(n >= 1 && n <= 8, "overlapping match: %u drafts (want 1 to 8)", n);
    for (uint32_t i = 0; i < n && i < 8; i++)
        SW_CHECK(out[i] == 7, "overlapping match: draft %u is %d (want 7)", i, out[i]);
    /* no match */
    const int32_t e[] = {1, 2, 3, 4, 5, 6};
    n = spec_ngram_draft(e, 6, 1, 4, 8, out);
    SW_CHECK(n == 0, "no match: %u drafts (want 0)", n);
    /* n_min: "9 4" never occurred before, "4" did (followed by 5) */
    const int32_t f[] = {1, 4, 5, 6, 9, 4};
    n = spec_ngram_draft(f, 6, 2, 4, 8, out);
    SW_CHECK(n == 0, "n_min 2, only a 1-gram matches: %u drafts (want 0)", n);
    n = spec_ngram_draft(f, 6, 1, 4, 2, out);
    SW_CHECK(n == 2 && out[0] == 5 && out[1] == 6, "n_min 1: %u drafts (want 2, 5 6)", n);
    /* too short a sequence for any n-gram with an earlier occurrence */
    n = spec_ngram_draft(f, 1, 1, 4, 8, out);
    SW_CHECK(n == 0, "one token: %u drafts (want 0)", n);
}

/* ---- spec_verify on synthetic rows ----------------------------------------- */

enum { NV = 8 };

static sw_sampler *sampler(float temp, int top_k, float top_p, float min_p, uint64_t seed) {
    sw_sampler_options o = {.temp = temp, .top_k = top_k, .top_p = top_p, .min_p = min_p,
                            .seed = seed};
    sw_sampler *s = NULL;
    SW_CHECK_OK(sw_sampler_create(&o, NV, &s));
    return s;
}

/* rows (k+1, NV) whose argmaxes are best[0..k] */
static void argmax_rows(float *rows, const int32_t *best, uint32_t k) {
    for (uint32_t i = 0; i <= k; i++)
        for (int32_t t = 0; t < NV; t++)
            rows[i * NV + t] = t == best[i] ? 2.0f : -0.1f * (float)t;
}

static void test_verify_greedy(void) {
    sw_sampler *s = sampler(0.0f, 0, 1.0f, 0.0f, 1);
    if (s == NULL)
        return;
    float rows[5 * NV];
    int32_t out[5];
    const int32_t best[5] = {3, 5, 1, 6, 2};
    argmax_rows(rows, best, 4);
    /* all four drafts agree: kept, plus the bonus token of row 4 */
    const int32_t all[4] = {3, 5, 1, 6};
    uint32_t n = spec_verify(s, rows, NV, all, 4, NULL, out);
    SW_CHECK(n == 5 && !memcmp(out, best, sizeof out), "all agree: %u tokens (want 5)", n);
    /* the third draft differs: two kept, then row 2's argmax */
    const int32_t third[4] = {3, 5, 4, 6};
    n = spec_verify(s, rows, NV, third, 4, NULL, out);
    SW_CHECK(n == 3 && out[0] == 3 && out[1] == 5 && out[2] == 1,
             "third differs: %u tokens, last %d (want 3, 1)", n, n ? out[n - 1] : -1);
    /* the first differs: only the correction */
    const int32_t first[4] = {0, 5, 1, 6};
    n = spec_verify(s, rows, NV, first, 4, NULL, out);
    SW_CHECK(n == 1 && out[0] == 3, "first differs: %u tokens, %d (want 1, 3)", n, out[0]);
    /* k = 1, agreeing: draft and bonus */
    n = spec_verify(s, rows, NV, all, 1, NULL, out);
    SW_CHECK(n == 2 && out[0] == 3 && out[1] == 5, "k = 1: %u tokens (want 2: 3 5)", n);
    /* a q given to a greedy target changes nothing */
    float q[4 * NV] = {0};
    n = spec_verify(s, rows, NV, third, 4, q, out);
    SW_CHECK(n == 3 && out[2] == 1, "greedy with q: %u tokens (want 3)", n);
    /* ties: the lowest id, as sw_sampler_sample */
    float tie[2 * NV] = {0};
    const int32_t d1[1] = {0};
    n = spec_verify(s, tie, NV, d1, 1, NULL, out);
    SW_CHECK(n == 2 && out[0] == 0 && out[1] == 0, "ties to the lowest id: %u tokens", n);
    sw_sampler_destroy(s);
}

/* The target's distribution of one row under sampler s (dense, NV). */
static void dist_of(sw_sampler *s, const float *row, double *p) {
    memset(p, 0, NV * sizeof *p);
    const uint32_t n = sampler_dist(s, row);
    for (uint32_t i = 0; i < n; i++)
        p[sampler_dist_id(s, i)] = sampler_dist_p(s, i);
}

/* Pearson's chi-square of counts against total * p; a count where p is 0
 * is a failure of its own. */
static void goodness(const char *what, const uint32_t *counts, const double *p, uint32_t total) {
    double x = 0.0;
    uint32_t bins = 0, impossible = 0;
    for (int t = 0; t < NV; t++) {
        if (p[t] <= 0.0) {
            impossible += counts[t];
            continue;
        }
        const double e = total * p[t];
        x += (counts[t] - e) * (counts[t] - e) / e;
        bins++;
    }
    const double bound = chi_square_bound(bins > 1 ? bins - 1 : 1);
    SW_CHECK(impossible == 0, "%s: %u tokens outside the target's support", what, impossible);
    SW_CHECK(x < bound, "%s: chi-square %.1f over %u tokens exceeds %.1f", what, x, bins, bound);
    printf("  %-44s %7u draws, chi-square %6.2f (bound %.1f)\n", what, total, x, bound);
}

enum { TRIALS = 200000 };

/* Two drafts behind each verify: from a fixed n-gram continuation (q NULL)
 * or sampled from the draft's rows (dq: a draft sampler). The first output
 * must follow p(row 0); after draft 0 is kept, the second p(row 1). */
static void verify_sampled(const char *what, float temp, int top_k, float top_p, float min_p,
                           bool model_drafts) {
    sw_sampler *s = sampler(temp, top_k, top_p, min_p, 11);
    sw_sampler *dq = sampler(temp, top_k, top_p, min_p, 12);
    if (s == NULL || dq == NULL)
        goto done;
    float rows[3 * NV], drows[2 * NV], q[2 * NV];
    uint64_t rng = 0x5eedull;
    for (int i = 0; i < 3 * NV; i++)
        rows[i] = sw_test_rng_float(&rng, -1.5f, 1.5f);
    for (int i = 0; i < 2 * NV; i++) /* a draft that is near, not equal */
        drows[i] = rows[i] + sw_test_rng_float(&rng, -1.0f, 1.0f);
    double p0[NV], p1[NV];
    dist_of(s, rows, p0);
    dist_of(s, rows + NV, p1);
    /* an n-gram draft of a likely token, then one of an unlikely one */
    int32_t ngram[2] = {0, 0};
    for (int32_t t = 0; t < NV; t++) {
        if (p0[t] > p0[ngram[0]])
            ngram[0] = t;
        if (p1[t] > 0.0 && (p1[ngram[1]] == 0.0 || p1[t] < p1[ngram[1]]))
            ngram[1] = t;
    }
    uint32_t c0[NV] = {0}, c1[NV] = {0}, n1 = 0, kept0 = 0;
    for (uint32_t trial = 0; trial < TRIALS; trial++) {
        int32_t drafts[2], out[3];
        const float *qp = NULL;
        if (model_drafts) {
            drafts[0] = spec_sample_draft(dq, drows, NV, q);
            drafts[1] = spec_sample_draft(dq, drows + NV, NV, q + NV);
            qp = q;
        } else {
            drafts[0] = ngram[0];
            drafts[1] = ngram[1];
        }
        const uint32_t n = spec_verify(s, rows, NV, drafts, 2, qp, out);
        c0[out[0]]++;
        if (n >= 2) {
            kept0 += out[0] == drafts[0];
            c1[out[1]]++;
            n1++;
        }
    }
    char name[96];
    snprintf(name, sizeof name, "%s, first token", what);
    goodness(name, c0, p0, TRIALS);
    snprintf(name, sizeof name, "%s, second after a kept draft", what);
    goodness(name, c1, p1, n1);
    SW_CHECK(kept0 > TRIALS / 20 && kept0 < TRIALS, "%s: draft 0 kept %u times of %u", what,
             kept0, TRIALS);
done:
    sw_sampler_destroy(s);
    sw_sampler_destroy(dq);
}

static void test_verify_sampled(void) {
    verify_sampled("n-gram, temp 1", 1.0f, 0, 1.0f, 0.0f, false);
    verify_sampled("n-gram, temp 0.7 top-k 5 min-p 0.05", 0.7f, 5, 1.0f, 0.05f, false);
    verify_sampled("model, temp 1", 1.0f, 0, 1.0f, 0.0f, true);
    verify_sampled("model, temp 0.8 top-k 6 top-p 0.9", 0.8f, 6, 0.9f, 0.0f, true);
}

/* ---- the scheduler: distributions with and without drafts ------------------ */

/* Under the sanitizers, which look for memory errors rather than at the
 * distribution, a quarter of the seeds: the same tests at their same
 * bounds, with less power (the release stage runs all 2,000). */
#if defined(__SANITIZE_ADDRESS__)
#define SPEC_SEEDS 500
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SPEC_SEEDS 500
#endif
#endif
#ifndef SPEC_SEEDS
#define SPEC_SEEDS 2000
#endif
enum { N_SEEDS = SPEC_SEEDS, N_GEN = 4, N_SEQ = 8, N_CTX = 64 };

typedef struct sample {
    int32_t ids[N_GEN];
    uint32_t n;
} sample;

static void on_token(void *user, sw_request *r, int32_t id, const char *piece, size_t len) {
    sample *s = user;
    (void)r;
    (void)piece;
    (void)len;
    if (s->n < N_GEN)
        s->ids[s->n] = id;
    s->n++;
}

static sw_engine *launch(const sw_model *m) {
    sw_plan_options o = sw_plan_options_default();
    o.backend = "cpu";
    o.n_threads = 1;
    o.n_ctx = N_CTX;
    o.n_seq = N_SEQ;
    sw_engine *e = NULL;
    SW_CHECK_OK(sw_engine_launch(m, &o, NULL, &e));
    return e;
}

/* N_SEEDS requests (seeds seed0, seed0 + 1, ...) of the prompt on a new
 * scheduler of e, drafting as d says (NULL: no drafter); their tokens go
 * to out, the scheduler's stats to *st. */
static void generate(sw_engine *e, const sw_model *m, const sw_draft_options *d,
                     const sw_sampler_options *so, uint64_t seed0, const int32_t *prompt,
                     size_t n_prompt, sample *out, sw_scheduler_stats *st) {
    sw_scheduler *q = NULL;
    sw_request **r = calloc(N_SEEDS, sizeof *r);
    memset(out, 0, N_SEEDS * sizeof *out);
    memset(st, 0, sizeof *st);
    SW_CHECK_OK(sw_scheduler_create(e, m, &q));
    if (q == NULL || r == NULL)
        goto done;
    if (d != NULL)
        SW_CHECK_OK(sw_scheduler_set_draft(q, d));
    for (uint32_t i = 0; i < N_SEEDS; i++) {
        sw_request_options ro = sw_request_options_default();
        ro.sampling = *so;
        ro.sampling.seed = seed0 + i;
        ro.n_predict = N_GEN;
        ro.on_token = on_token;
        ro.user = &out[i];
        SW_CHECK_OK(sw_scheduler_submit(q, prompt, n_prompt, &ro, &r[i]));
    }
    uint32_t n = 1;
    for (long guard = 0; n != 0 && guard < 1000000; guard++) {
        sw_status s = sw_scheduler_step(q, &n);
        if (s != SW_OK) {
            SW_CHECK_OK(s);
            break;
        }
    }
    for (uint32_t i = 0; i < N_SEEDS && r[i] != NULL; i++) {
        sw_request_info in;
        sw_request_get_info(q, r[i], &in);
        const char *msg = "";
        const sw_status why = sw_request_error(q, r[i], &msg);
        SW_CHECK(in.state == SW_REQ_DONE && in.finish != SW_FINISH_ERROR,
                 "request %u (seed %llu): state %d, finish %s: %s: %s", i,
                 (unsigned long long)(seed0 + i), (int)in.state, sw_finish_name(in.finish),
                 sw_status_name(why), msg);
        SW_CHECK(in.n_generated == out[i].n, "request %u: %zu generated, %u on_token calls", i,
                 in.n_generated, out[i].n);
        sw_request_release(q, r[i]);
    }
    sw_scheduler_get_stats(q, st);
done:
    sw_scheduler_destroy(q);
    free(r);
}

/* Two-sample chi-square of the tokens at position pos: ids seen at least
 * 10 times in both samples together have a bin each, the rest share one. */
static double two_sample(const sample *a, const sample *b, uint32_t pos, uint32_t n_vocab,
                         uint32_t *dof, double *tv) {
    uint32_t *ca = calloc(n_vocab + 1, sizeof *ca), *cb = calloc(n_vocab + 1, sizeof *cb);
    double x = 0.0;
    *dof = 0;
    *tv = 0.0;
    if (ca == NULL || cb == NULL)
        goto done;
    uint32_t na = 0, nb = 0;
    for (uint32_t i = 0; i < N_SEEDS; i++) {
        if (a[i].n > pos) {
            ca[a[i].ids[pos]]++;
            na++;
        }
        if (b[i].n > pos) {
            cb[b[i].ids[pos]]++;
            nb++;
        }
    }
    for (uint32_t t = 0; t < n_vocab; t++) {
        *tv += fabs((double)ca[t] / (na ? na : 1) - (double)cb[t] / (nb ? nb : 1)) / 2.0;
        if (ca[t] + cb[t] < 10) {
            ca[n_vocab] += ca[t];
            cb[n_vocab] += cb[t];
            ca[t] = cb[t] = 0;
        }
    }
    /* unequal totals (end tokens): the general two-sample statistic */
    const double ka = sqrt((double)nb / (na ? na : 1)), kb = 1.0 / ka;
    uint32_t bins = 0;
    for (uint32_t t = 0; t <= n_vocab; t++) {
        if (ca[t] + cb[t] == 0)
            continue;
        const double d = ka * ca[t] - kb * cb[t];
        x += d * d / (ca[t] + cb[t]);
        bins++;
    }
    *dof = bins > 1 ? bins - 1 : 1;
done:
    free(ca);
    free(cb);
    return x;
}

static void compare(const char *what, const sample *plain, const sample *spec, uint32_t n_vocab) {
    for (uint32_t pos = 0; pos < N_GEN; pos++) {
        uint32_t dof = 0;
        double tv = 0.0;
        const double x = two_sample(plain, spec, pos, n_vocab, &dof, &tv);
        const double bound = chi_square_bound(dof);
        SW_CHECK(x < bound, "%s, token %u: chi-square %.1f (%u dof) exceeds %.1f, "
                 "total variation %.3f", what, pos + 1, x, dof, bound, tv);
        printf("  %-40s token %u: chi-square %7.1f, %3u dof (bound %5.1f), TV %.3f\n", what,
               pos + 1, x, dof, bound, tv);
    }
}

/* How often a token is what an n-gram drafter (d's lengths) would have
 * drafted first at its place: with drafts exactly as often as without
 * (a drafter that keeps too many drafts shows here first). */
static uint32_t ngram_hits(const sample *a, const int32_t *prompt, size_t n_prompt,
                           const sw_draft_options *d) {
    int32_t toks[N_CTX + N_GEN];
    uint32_t hits = 0;
    memcpy(toks, prompt, n_prompt * sizeof *toks);
    for (uint32_t i = 0; i < N_SEEDS; i++) {
        for (uint32_t pos = 0; pos < a[i].n && pos < N_GEN; pos++) {
            int32_t first = -1;
            toks[n_prompt + pos] = a[i].ids[pos];
            if (pos > 0 && spec_ngram_draft(toks, n_prompt + pos, d->ngram_min, d->ngram_max, 1,
                                            &first) == 1)
                hits += a[i].ids[pos] == first;
        }
    }
    return hits;
}

/* Two counts of events out of the same number of trials (N_SEEDS times
 * N_GEN - 1) agree within six standard deviations of their difference. */
static void compare_hits(const char *what, uint32_t plain, uint32_t spec) {
    const double trials = (double)N_SEEDS * (N_GEN - 1);
    const double p = (plain + spec) / (2.0 * trials);
    const double sd = sqrt(2.0 * trials * p * (1.0 - p)) + 1.0;
    const double z = ((double)spec - plain) / sd;
    SW_CHECK(fabs(z) < 6.0, "%s: a token is the n-gram draft %u times with drafts, %u "
             "without (%.1f standard deviations)", what, spec, plain, z);
    printf("  %-40s the n-gram draft %u times, without drafts %u (z %.2f)\n", what, spec,
           plain, z);
}

static void check_stats(const char *what, const sw_scheduler_stats *st) {
    printf("  %-40s %llu verifies, %llu drafted, %llu kept, %llu output\n", what,
           (unsigned long long)st->verify_forwards, (unsigned long long)st->drafted_tokens,
           (unsigned long long)st->accepted_tokens, (unsigned long long)st->verify_tokens);
    SW_CHECK(st->verify_forwards > N_SEEDS / 10 && st->drafted_tokens >= st->verify_forwards,
             "%s: %llu verifies, %llu drafts: too few to test anything", what,
             (unsigned long long)st->verify_forwards, (unsigned long long)st->drafted_tokens);
    SW_CHECK(st->accepted_tokens > 0 && st->accepted_tokens < st->drafted_tokens,
             "%s: %llu of %llu drafts kept (want some, not all)", what,
             (unsigned long long)st->accepted_tokens, (unsigned long long)st->drafted_tokens);
    SW_CHECK(st->verify_tokens <= st->accepted_tokens + st->verify_forwards &&
                 st->verify_tokens >= st->verify_forwards,
             "%s: %llu tokens from %llu verifies keeping %llu drafts", what,
             (unsigned long long)st->verify_tokens, (unsigned long long)st->verify_forwards,
             (unsigned long long)st->accepted_tokens);
}

static void test_scheduler(void) {
    sw_model *m = NULL, *dm = NULL;
    sw_engine *e = NULL, *de = NULL;
    sample *plain = calloc(N_SEEDS, sizeof *plain), *spec = calloc(N_SEEDS, sizeof *spec);
    SW_CHECK_OK(sw_model_open(sw_test_data("tiny/gemma3.gguf"), &m));
    SW_CHECK_OK(sw_model_open(sw_test_data("tiny/gemma2.gguf"), &dm));
    if (m == NULL || dm == NULL || plain == NULL || spec == NULL)
        goto done;
    if ((e = launch(m)) == NULL || (de = launch(dm)) == NULL)
        goto done;
    const uint32_t n_vocab = sw_engine_n_vocab(e);
    /* a repeated pattern: n-grams of one token match almost anything the
     * model samples, and what followed it before is the draft */
    const char *text = "a b c d e a b c d e a b c d e a b c d e a b c";
    int32_t prompt[N_CTX];
    size_t n_prompt = 0;
    SW_CHECK_OK(sw_tokenize(m, text, strlen(text), SW_TOK_ADD_BOS, prompt, N_CTX, &n_prompt));
    const sw_sampler_options settings[] = {
        {.temp = 1.0f, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f},
        {.temp = 1.0f, .top_k = 40, .top_p = 0.9f, .min_p = 0.0f},
        {.temp = 1.0f, .top_k = 0, .top_p = 1.0f, .min_p = 0.05f},
    };
    sw_draft_options ngram = sw_draft_options_default();
    ngram.ngram = 1;
    ngram.ngram_min = 1;
    ngram.draft_max = 3;
    sw_draft_options model = sw_draft_options_default();
    model.engine = de;
    model.model = dm;
    model.draft_max = 3;
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++) {
        const sw_sampler_options *so = &settings[i];
        char what[96];
        sw_scheduler_stats st;
        printf(" temp %.1f top-k %d top-p %.2f min-p %.2f\n", so->temp, so->top_k, so->top_p,
               so->min_p);
        generate(e, m, NULL, so, 1000000 * (i + 1), prompt, n_prompt, plain, &st);
        SW_CHECK(st.verify_forwards == 0 && st.drafted_tokens == 0,
                 "no drafter: %llu verifies", (unsigned long long)st.verify_forwards);
        const uint32_t plain_hits = ngram_hits(plain, prompt, n_prompt, &ngram);
        generate(e, m, &ngram, so, 1000000 * (i + 1) + N_SEEDS, prompt, n_prompt, spec, &st);
        snprintf(what, sizeof what, "n-gram drafts");
        check_stats(what, &st);
        compare(what, plain, spec, n_vocab);
        compare_hits(what, plain_hits, ngram_hits(spec, prompt, n_prompt, &ngram));
        generate(e, m, &model, so, 1000000 * (i + 1) + 2 * N_SEEDS, prompt, n_prompt, spec, &st);
        snprintf(what, sizeof what, "gemma2 drafts");
        check_stats(what, &st);
        compare(what, plain, spec, n_vocab);
    }
done:
    sw_engine_destroy(de);
    sw_engine_destroy(e);
    sw_model_close(dm);
    sw_model_close(m);
    free(plain);
    free(spec);
}

/* The tiny Gemma 4 (gemma4-kv) drafted by its assistant: sampled tokens
 * distributed as without drafts, for two settings. */
static void test_assistant_sampled(void) {
    sw_model *m = NULL, *am = NULL;
    sw_engine *e = NULL;
    sample *plain = calloc(N_SEEDS, sizeof *plain), *spec = calloc(N_SEEDS, sizeof *spec);
    SW_CHECK_OK(sw_model_open(sw_test_data("tiny/gemma4-kv-hf"), &m));
    SW_CHECK_OK(sw_model_open(sw_test_data("tiny/gemma4-kv-assistant-hf"), &am));
    if (m == NULL || am == NULL || plain == NULL || spec == NULL || (e = launch(m)) == NULL)
        goto done;
    const char *text = "the people of the water and the people of the";
    int32_t prompt[N_CTX];
    size_t n_prompt = 0;
    SW_CHECK_OK(sw_tokenize(m, text, strlen(text), SW_TOK_ADD_BOS, prompt, N_CTX, &n_prompt));
    const sw_sampler_options settings[] = {
        {.temp = 1.0f, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f},
        {.temp = 0.7f, .top_k = 40, .top_p = 0.9f, .min_p = 0.0f},
    };
    sw_draft_options d = sw_draft_options_default();
    d.assistant = am;
    d.draft_max = 3;
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++) {
        const sw_sampler_options *so = &settings[i];
        sw_scheduler_stats st;
        printf(" gemma4-kv, temp %.1f top-k %d top-p %.2f\n", so->temp, so->top_k, so->top_p);
        generate(e, m, NULL, so, 7000000 * (i + 1), prompt, n_prompt, plain, &st);
        generate(e, m, &d, so, 7000000 * (i + 1) + N_SEEDS, prompt, n_prompt, spec, &st);
        check_stats("its assistant's drafts", &st);
        compare("its assistant's drafts", plain, spec, sw_engine_n_vocab(e));
    }
done:
    sw_engine_destroy(e);
    sw_model_close(am);
    sw_model_close(m);
    free(plain);
    free(spec);
}

int main(void) {
    test_ngram();
    test_verify_greedy();
    test_verify_sampled();
    test_scheduler();
    test_assistant_sampled();
    return sw_check_finish("test_spec");
}
