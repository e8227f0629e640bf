/*
 * test_sampler.c — the token sampler (src/engine/sampler.c) through its
 * public API: argument checks, greedy argmax, the seeded splitmix64 stream,
 * the total order on candidates, the top-k / top-p / min-p filters and the
 * sampled distribution itself.
 *
 * Expected sets and probabilities are computed here from the definitions,
 * in double, never by calling the sampler's own helpers. Every statistical
 * check runs with a fixed seed, so the test is deterministic; its bounds are
 * loose enough that any correct sampler passes them with a wide margin and
 * tight enough that a wrong temperature or a biased generator fails them.
 */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "util/error.h"

#define N_DRAWS 200000 /* draws per distribution check */

static sw_sampler_options opts(float temp, int top_k, float top_p, float min_p, uint64_t seed) {
    return (sw_sampler_options){
        .temp = temp, .top_k = top_k, .top_p = top_p, .min_p = min_p, .seed = seed};
}

/* A sampler for these options, or NULL (a failed check) if creation fails. */
static sw_sampler *make(sw_sampler_options o, uint32_t n_vocab) {
    sw_sampler *s = NULL;
    SW_CHECK_OK(sw_sampler_create(&o, n_vocab, &s));
    return s;
}

/* ---- references, written from the definitions ------------------------------ */

/* Sebastiano Vigna's splitmix64, the published reference. */
static uint64_t ref_splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* The first id holding the largest logit. */
static int32_t ref_argmax(const float *logits, uint32_t n) {
    int32_t best = 0;
    for (uint32_t i = 0; i < n; i++)
        if (logits[i] > logits[best])
            best = (int32_t)i;
    return best;
}

static const float *g_sort_logits; /* logits that ref_order_cmp compares by */

static int ref_order_cmp(const void *pa, const void *pb) {
    int32_t a = *(const int32_t *)pa, b = *(const int32_t *)pb;
    float la = g_sort_logits[a], lb = g_sort_logits[b];
    if (la != lb)
        return la > lb ? -1 : 1;
    return (a > b) - (a < b);
}

/* order[0..n): ids by logit descending, then id ascending. */
static void ref_order(const float *logits, uint32_t n, int32_t *order) {
    for (uint32_t i = 0; i < n; i++)
        order[i] = (int32_t)i;
    g_sort_logits = logits;
    qsort(order, n, sizeof *order, ref_order_cmp);
}

/* What sampling with `o` (temp > 0) may return, by definition:
 *   1. the top_k best ids in the total order (all if top_k is 0);
 *   2. their softmax at temperature: p_i = exp(l_i / T) / sum;
 *   3. top-p: the shortest prefix of that sorted list whose mass is >= top_p;
 *   4. min-p: only ids with p_i >= min_p * p_best;
 * and each allowed id is drawn with its p_i renormalized over the allowed
 * set. Fills prob[id] (0 for excluded ids) and returns the allowed count.
 * *ambiguous is set when a prefix mass or a min-p ratio lies within 1e-9 of
 * its threshold, where rounding may legitimately decide either way.
 * *binding says which filter ended the set: 'k', 'p', 'm' or 0 (none). */
static uint32_t ref_allowed(const float *logits, uint32_t n, sw_sampler_options o, double *prob,
                            int *ambiguous, char *binding) {
    int32_t *order = malloc(n * sizeof *order);
    double *q = malloc(n * sizeof *q);
    uint32_t keep = 0;
    *ambiguous = 0;
    *binding = 0;
    if (order == NULL || q == NULL) {
        SW_CHECK(0, "out of memory in the test");
        goto done;
    }
    ref_order(logits, n, order);
    uint32_t k = (o.top_k > 0 && (uint32_t)o.top_k < n) ? (uint32_t)o.top_k : n;
    double z = 0.0;
    for (uint32_t i = 0; i < k; i++) {
        q[i] = exp(((double)logits[order[i]] - (double)logits[order[0]]) / (double)o.temp);
        z += q[i];
    }
    uint32_t m_top_p = k, m_min_p = k;
    double cum = 0.0;
    for (uint32_t i = 0; i < k; i++) {
        cum += q[i] / z;
        if (o.top_p < 1.0f && fabs(cum - (double)o.top_p) < 1e-9)
            *ambiguous = 1;
        if (cum >= (double)o.top_p && m_top_p == k)
            m_top_p = i + 1;
    }
    for (uint32_t i = 0; i < k; i++) {
        /* q_i = p_i / p_best, so the min-p rule is q_i >= min_p. */
        if (o.min_p > 0.0f && fabs(q[i] - (double)o.min_p) < 1e-9)
            *ambiguous = 1;
        if (q[i] < (double)o.min_p && m_min_p == k)
            m_min_p = i;
    }
    keep = m_top_p < m_min_p ? m_top_p : m_min_p;
    if (keep < n)
        *binding = keep == m_top_p && keep < k ? 'p' : keep == m_min_p && keep < k ? 'm' : 'k';
    double mass = 0.0;
    for (uint32_t i = 0; i < keep; i++)
        mass += q[i];
    for (uint32_t i = 0; i < n; i++)
        prob[i] = 0.0;
    for (uint32_t i = 0; i < keep; i++)
        prob[order[i]] = q[i] / mass;
done:
    free(order);
    free(q);
    return keep;
}

/* Pearson's chi-square of counts against n_draws * prob, over ids with
 * prob > 0; an id drawn with prob 0 makes it infinite. */
static double chi_square(const uint32_t *counts, const double *prob, uint32_t n, uint32_t n_draws) {
    double x = 0.0;
    for (uint32_t i = 0; i < n; i++) {
        double e = (double)n_draws * prob[i];
        if (prob[i] == 0.0) {
            if (counts[i] != 0)
                return INFINITY;
            continue;
        }
        x += ((double)counts[i] - e) * ((double)counts[i] - e) / e;
    }
    return x;
}

/* A bound a correct sampler exceeds with probability below about 1e-5:
 * chi-square's mean plus six of its standard deviations, plus six. For
 * 4 degrees of freedom it is 27 (P(X > 27) = 2e-5). */
static double chi_square_bound(uint32_t dof) { return dof + 6.0 * sqrt(2.0 * dof) + 6.0; }

/* Counts of n_draws samples into counts[0..n) (which it zeroes). */
static void draw(sw_sampler *s, const float *logits, uint32_t n, uint32_t n_draws,
                 uint32_t *counts) {
    memset(counts, 0, n * sizeof *counts);
    for (uint32_t d = 0; d < n_draws; d++) {
        int32_t t = sw_sampler_sample(s, logits);
        if (t < 0 || (uint32_t)t >= n) {
            SW_CHECK(0, "sample %d outside [0, %u)", t, n);
            return;
        }
        counts[t]++;
    }
}

/* ---- argument checks -------------------------------------------------------- */

/* Creation with `o` must fail with SW_ERR_ARG and leave a message; for a bad
 * option (`what` given) the message names it and *out is left NULL. ASan's
 * leak check covers "no leak". */
static void expect_bad(sw_sampler_options o, uint32_t n_vocab, const char *what) {
    static char sentinel;
    sw_sampler *s = (sw_sampler *)(void *)&sentinel; /* creation must clear it */
    sw_error_clear();
    sw_status st = sw_sampler_create(&o, n_vocab, &s);
    const char *msg = sw_last_error();
    SW_CHECK(st == SW_ERR_ARG, "%s: got %s, want SW_ERR_ARG", what ? what : "n_vocab 0",
             sw_status_name(st));
    SW_CHECK(what == NULL || s == NULL, "%s: *out not NULL after failure", what);
    SW_CHECK(msg[0] != '\0' && (what == NULL || strstr(msg, what) != NULL),
             "%s: message '%s' does not name it", what ? what : "n_vocab 0", msg);
    if (st == SW_OK)
        sw_sampler_destroy(s);
}

static void test_bad_args(void) {
    const struct {
        sw_sampler_options o;
        const char *what;
    } bad[] = {
        {opts(-0.5f, 0, 1.0f, 0.0f, 1), "temperature"},
        {opts(-1e-30f, 0, 1.0f, 0.0f, 1), "temperature"},
        {opts(INFINITY, 0, 1.0f, 0.0f, 1), "temperature"},
        {opts(NAN, 0, 1.0f, 0.0f, 1), "temperature"},
        {opts(1.0f, 0, 0.0f, 0.0f, 1), "top-p"},
        {opts(1.0f, 0, -0.1f, 0.0f, 1), "top-p"},
        {opts(1.0f, 0, 1.0001f, 0.0f, 1), "top-p"},
        {opts(1.0f, 0, NAN, 0.0f, 1), "top-p"},
        {opts(1.0f, 0, 1.0f, 1.0f, 1), "min-p"},
        {opts(1.0f, 0, 1.0f, -0.01f, 1), "min-p"},
        {opts(1.0f, 0, 1.0f, NAN, 1), "min-p"},
        {opts(1.0f, -1, 1.0f, 0.0f, 1), "top-k"},
        {opts(1.0f, INT_MIN, 1.0f, 0.0f, 1), "top-k"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_bad(bad[i].o, 8, bad[i].what);
    sw_sampler_options ok = opts(1.0f, 0, 1.0f, 0.0f, 1);
    expect_bad(ok, 0, NULL);

    sw_sampler *s = NULL;
    sw_error_clear();
    SW_CHECK(sw_sampler_create(NULL, 8, &s) == SW_ERR_ARG, "NULL options accepted");
    SW_CHECK(s == NULL && sw_last_error()[0] != '\0', "NULL options: no message or *out set");
    sw_error_clear();
    SW_CHECK(sw_sampler_create(&ok, 8, NULL) == SW_ERR_ARG, "NULL out accepted");
    SW_CHECK(sw_last_error()[0] != '\0', "NULL out: no message");

    /* The edges of every range are accepted. */
    sw_sampler_options edges[] = {opts(0.0f, 0, 1.0f, 0.0f, 0),
                                  opts(1e-6f, INT_MAX, 1e-6f, 0.999f, 1),
                                  opts(100.0f, 1, 1.0f, 0.0f, UINT64_MAX)};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) {
        s = make(edges[i], 1);
        float one = 3.0f;
        if (s != NULL)
            SW_CHECK(sw_sampler_sample(s, &one) == 0, "a vocabulary of one must give token 0");
        sw_sampler_destroy(s);
    }
    sw_sampler_destroy(NULL); /* destroyers accept NULL */

    sw_sampler_options d = sw_sampler_options_default();
    s = make(d, 16);
    SW_CHECK(s != NULL && d.temp > 0.0f, "the defaults must be valid and sample (temp > 0)");
    sw_sampler_destroy(s);
}

/* ---- greedy ------------------------------------------------------------------ */

static void test_greedy(void) {
    enum { N = 97 };
    float logits[N];
    uint64_t rng = 11;
    for (int rep = 0; rep < 50; rep++) {
        for (int i = 0; i < N; i++)
            logits[i] = sw_test_rng_float(&rng, -20.0f, 5.0f);
        int32_t want = ref_argmax(logits, N);
        /* Greedy ignores the seed and every filter. */
        sw_sampler_options o[] = {opts(0.0f, 0, 1.0f, 0.0f, (uint64_t)rep),
                                  opts(0.0f, 3, 0.1f, 0.9f, ~(uint64_t)rep)};
        for (int j = 0; j < 2; j++) {
            sw_sampler *s = make(o[j], N);
            if (s == NULL)
                return;
            for (int t = 0; t < 5; t++) {
                int32_t got = sw_sampler_sample(s, logits);
                SW_CHECK(got == want, "greedy rep %d: got %d, want argmax %d", rep, got, want);
            }
            sw_sampler_destroy(s);
        }
    }

    /* Ties go to the lowest id; masked (-inf) and negative logits are fine. */
    sw_sampler *s = make(opts(0.0f, 0, 1.0f, 0.0f, 5), 8);
    if (s == NULL)
        return;
    float tie[8] = {0, 1, 0, 2.5f, 1, 2.5f, 2.5f, -3};
    SW_CHECK(sw_sampler_sample(s, tie) == 3, "tie: want the lowest id 3");
    float flat[8] = {0};
    SW_CHECK(sw_sampler_sample(s, flat) == 0, "all equal: want id 0");
    float neg[8] = {-9, -INFINITY, -8, -1e30f, -7.5f, -INFINITY, -7.5f, -8};
    SW_CHECK(sw_sampler_sample(s, neg) == 4, "negative logits: want id 4");
    float last[8];
    for (int i = 0; i < 8; i++)
        last[i] = i == 7 ? 1.0f : -INFINITY;
    SW_CHECK(sw_sampler_sample(s, last) == 7, "only the last id unmasked: want 7");
    sw_sampler_destroy(s);
}

/* ---- the generator and the total order ----------------------------------- */

/* With four equal logits every id has probability exactly 1/4 and the ids
 * sit in ascending order, so the inverse-CDF draw from u in [0, 1) is
 * floor(4u): the top two bits of each splitmix64 output. This pins the
 * generator (same seed, same tokens on every machine and every release). */
static void test_generator(void) {
    uint64_t v = 0;
    SW_CHECK(ref_splitmix64(&v) == 0xE220A8397B1DCDAFull, "the reference splitmix64 is wrong");
    float flat[4] = {0.25f, 0.25f, 0.25f, 0.25f};
    uint64_t seeds[] = {0, 1, 42, 0x123456789ABCDEFull, UINT64_MAX};
    for (size_t k = 0; k < sizeof seeds / sizeof seeds[0]; k++) {
        sw_sampler *s = make(opts(1.0f, 0, 1.0f, 0.0f, seeds[k]), 4);
        if (s == NULL)
            return;
        uint64_t state = seeds[k];
        int mismatches = 0;
        for (int i = 0; i < 256; i++) {
            int32_t want = (int32_t)(ref_splitmix64(&state) >> 62);
            int32_t got = sw_sampler_sample(s, flat);
            mismatches += got != want;
        }
        SW_CHECK(mismatches == 0, "seed %llu: %d of 256 draws differ from splitmix64's",
                 (unsigned long long)seeds[k], mismatches);
        sw_sampler_destroy(s);
    }
}

static void test_determinism(void) {
    enum { N = 50, DRAWS = 2000 };
    float logits[N], before[N];
    uint64_t rng = 3;
    for (int i = 0; i < N; i++)
        logits[i] = sw_test_rng_float(&rng, -3.0f, 3.0f);
    memcpy(before, logits, sizeof logits);
    sw_sampler_options o = opts(0.9f, 20, 0.95f, 0.02f, 1234);
    sw_sampler *a = make(o, N), *b = make(o, N);
    o.seed = 1235;
    sw_sampler *c = make(o, N), *a2 = NULL;
    o.seed = 1234;
    a2 = make(o, N);
    if (a == NULL || b == NULL || c == NULL || a2 == NULL)
        goto done;
    int same_ab = 1, differ_ac = 0, same_interleaved = 1;
    for (int i = 0; i < DRAWS; i++) {
        int32_t ta = sw_sampler_sample(a, logits);
        int32_t tb = sw_sampler_sample(b, logits);
        int32_t tc = sw_sampler_sample(c, logits);
        same_ab &= ta == tb;
        differ_ac |= ta != tc;
    }
    SW_CHECK(same_ab, "same seed and logits gave different sequences");
    SW_CHECK(differ_ac, "seeds 1234 and 1235 gave the same %d tokens", DRAWS);
    SW_CHECK(memcmp(before, logits, sizeof logits) == 0, "sampling modified the logits");

    /* Each sampler owns its generator: a fresh sampler with a's seed replays
     * a's sequence while others draw in between. */
    sw_sampler_destroy(a);
    a = make(opts(0.9f, 20, 0.95f, 0.02f, 1234), N);
    if (a == NULL)
        goto done;
    for (int i = 0; i < DRAWS; i++) {
        int32_t ta = sw_sampler_sample(a, logits);
        for (int j = 0; j < i % 3; j++)
            (void)sw_sampler_sample(c, logits);
        same_interleaved &= ta == sw_sampler_sample(a2, logits);
    }
    SW_CHECK(same_interleaved, "a sampler's sequence depends on other samplers' draws");
done:
    sw_sampler_destroy(a);
    sw_sampler_destroy(b);
    sw_sampler_destroy(c);
    sw_sampler_destroy(a2);
}

/* Candidates are ordered by value, not by position: permuting distinct
 * logits permutes the choices, draw for draw, at the same seed. */
static void test_permutation(void) {
    enum { N = 16, DRAWS = 1000 };
    float logits[N], permuted[N];
    int32_t perm[N];
    uint64_t rng = 77;
    for (int i = 0; i < N; i++) {
        logits[i] = (float)i * 0.37f - 2.0f; /* distinct */
        perm[i] = i;
    }
    for (int i = N - 1; i > 0; i--) {
        int j = (int)(sw_test_rng_next(&rng) % (uint64_t)(i + 1));
        int32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (int i = 0; i < N; i++)
        permuted[perm[i]] = logits[i];
    sw_sampler_options o[] = {opts(1.0f, 0, 1.0f, 0.0f, 9), opts(1.3f, 6, 0.9f, 0.05f, 10)};
    for (int k = 0; k < 2; k++) {
        sw_sampler *a = make(o[k], N), *b = make(o[k], N);
        int mismatches = 0;
        for (int d = 0; a != NULL && b != NULL && d < DRAWS; d++)
            mismatches += sw_sampler_sample(b, permuted) != perm[sw_sampler_sample(a, logits)];
        SW_CHECK(mismatches == 0, "options %d: %d draws changed when the logits were permuted", k,
                 mismatches);
        sw_sampler_destroy(a);
        sw_sampler_destroy(b);
    }
}

/* ---- filters ------------------------------------------------------------------ */

/* top_k = 1, or a top_p so small only the best survives, is greedy at any
 * temperature and seed, ties included (the total order puts the lowest id
 * first). */
static void test_filters_that_are_greedy(void) {
    enum { N = 40 };
    float logits[N];
    uint64_t rng = 5;
    const float temps[] = {0.05f, 0.7f, 1.0f, 4.0f, 50.0f};
    for (int rep = 0; rep < 20; rep++) {
        for (int i = 0; i < N; i++)
            logits[i] = (float)(int)sw_test_rng_float(&rng, -6.0f, 6.0f); /* many ties */
        int32_t want = ref_argmax(logits, N);
        for (size_t t = 0; t < sizeof temps / sizeof temps[0]; t++) {
            sw_sampler *k1 = make(opts(temps[t], 1, 1.0f, 0.0f, (uint64_t)rep), N);
            sw_sampler *p0 = make(opts(temps[t], 0, 1e-7f, 0.0f, (uint64_t)rep), N);
            int bad_k = 0, bad_p = 0;
            for (int d = 0; k1 != NULL && p0 != NULL && d < 50; d++) {
                bad_k += sw_sampler_sample(k1, logits) != want;
                bad_p += sw_sampler_sample(p0, logits) != want;
            }
            SW_CHECK(bad_k == 0, "top_k 1, temp %g: %d of 50 draws not argmax %d", temps[t], bad_k,
                     want);
            SW_CHECK(bad_p == 0, "top_p 1e-7, temp %g: %d of 50 draws not argmax %d", temps[t],
                     bad_p, want);
            sw_sampler_destroy(k1);
            sw_sampler_destroy(p0);
        }
    }
}

/* Mass that reaches top_p exactly still ends the prefix ("reaches" is >=):
 * four equal logits have probability exactly 1/4 each, ordered by id, so
 * top_p 0.25, 0.5 and 0.75 must allow exactly ids {0}, {0,1} and {0,1,2},
 * at a temperature that does not matter. */
static void test_top_p_exact_mass(void) {
    enum { N = 4, DRAWS = 400 };
    const float flat[N] = {-1.0f, -1.0f, -1.0f, -1.0f};
    uint32_t counts[N];
    for (int m = 1; m <= 3; m++) {
        sw_sampler *s = make(opts(0.6f, 0, 0.25f * (float)m, 0.0f, (uint64_t)m), N);
        if (s == NULL)
            return;
        draw(s, flat, N, DRAWS, counts);
        sw_sampler_destroy(s);
        for (int i = 0; i < N; i++)
            SW_CHECK((i < m) == (counts[i] > 0), "top_p %.2f: id %d drawn %u times", 0.25 * m, i,
                     counts[i]);
    }
}

/* Random logits and options: every draw lies in the allowed set computed by
 * ref_allowed, and every allowed id with probability >= 1% turns up in
 * 2000 draws (a miss has probability 0.99^2000 = 2e-9), so a filter that
 * keeps one id too many or one too few fails. */
static void test_filters_random(void) {
    enum { N = 32, DRAWS = 2000, CASES = 200 };
    const float temps[] = {0.3f, 0.7f, 1.0f, 1.5f, 3.0f};
    const int top_ks[] = {0, 0, 1, 2, 5, 10, 31, 100};
    const float top_ps[] = {1.0f, 1.0f, 0.95f, 0.9f, 0.7f, 0.5f, 0.2f};
    const float min_ps[] = {0.0f, 0.0f, 0.01f, 0.05f, 0.1f, 0.3f, 0.9f};
    float logits[N];
    double prob[N];
    uint32_t counts[N];
    uint64_t rng = 2024;
    int n_binding[128] = {0}, n_cases = 0;
    for (int attempt = 0; n_cases < CASES && attempt < 4 * CASES; attempt++) {
        for (int i = 0; i < N; i++) {
            float l = sw_test_rng_float(&rng, -4.0f, 4.0f);
            logits[i] = attempt % 3 == 0 ? roundf(l * 2.0f) / 2.0f : l; /* ties in a third */
        }
#define PICK(a) a[sw_test_rng_next(&rng) % (sizeof a / sizeof a[0])]
        sw_sampler_options o = opts(PICK(temps), PICK(top_ks), PICK(top_ps), PICK(min_ps),
                                    sw_test_rng_next(&rng));
#undef PICK
        int ambiguous;
        char binding;
        uint32_t n_allowed = ref_allowed(logits, N, o, prob, &ambiguous, &binding);
        if (ambiguous || n_allowed == 0)
            continue;
        n_cases++;
        n_binding[(unsigned char)binding]++;
        sw_sampler *s = make(o, N);
        if (s == NULL)
            return;
        draw(s, logits, N, DRAWS, counts);
        sw_sampler_destroy(s);
        for (int i = 0; i < N; i++) {
            SW_CHECK(prob[i] > 0.0 || counts[i] == 0,
                     "case %d (T %g k %d p %g min_p %g): id %d drawn %u times, outside the %u "
                     "allowed",
                     n_cases, o.temp, o.top_k, o.top_p, o.min_p, i, counts[i], n_allowed);
            SW_CHECK(prob[i] < 0.01 || counts[i] > 0,
                     "case %d (T %g k %d p %g min_p %g): allowed id %d (p %.3f) never drawn",
                     n_cases, o.temp, o.top_k, o.top_p, o.min_p, i, prob[i]);
        }
    }
    printf("  random filters: %d cases, decided by top-k %d, top-p %d, min-p %d, none %d\n",
           n_cases, n_binding['k'], n_binding['p'], n_binding['m'], n_binding[0]);
    SW_CHECK(n_cases == CASES, "only %d unambiguous cases", n_cases);
    /* Each filter must have decided some cases, or the test proves little. */
    SW_CHECK(n_binding['k'] >= 10 && n_binding['p'] >= 10 && n_binding['m'] >= 10 &&
                 n_binding[0] >= 5,
             "filter coverage: top-k %d, top-p %d, min-p %d, none %d", n_binding['k'],
             n_binding['p'], n_binding['m'], n_binding[0]);
}

/* A Gemma-sized vocabulary: top_k's partial selection must find exactly the
 * k best ids, including when every new logit beats the ones before. */
static void test_large_vocab(void) {
    enum { N = 262144, K = 40 };
    float *logits = malloc(N * sizeof *logits);
    double *prob = malloc(N * sizeof *prob);
    if (logits == NULL || prob == NULL) {
        SW_CHECK(0, "out of memory in the test");
        goto done;
    }
    for (int layout = 0; layout < 2; layout++) {
        uint64_t rng = 99;
        for (int i = 0; i < N; i++)
            logits[i] = layout == 0 ? sw_test_rng_float(&rng, -10.0f, 10.0f) : (float)i * 1e-4f;
        /* A high temperature makes the k best nearly equally likely. */
        sw_sampler_options o = opts(50.0f, K, 1.0f, 0.0f, 7);
        int ambiguous;
        char binding;
        uint32_t n_allowed = ref_allowed(logits, N, o, prob, &ambiguous, &binding);
        SW_CHECK(n_allowed == K && !ambiguous, "reference: %u allowed", n_allowed);
        sw_sampler *s = make(o, N);
        if (s == NULL)
            goto done;
        int outside = 0, draws = layout == 0 ? 400 : 8;
        for (int d = 0; d < draws; d++) {
            int32_t t = sw_sampler_sample(s, logits);
            outside += t < 0 || t >= N || prob[t] == 0.0;
        }
        SW_CHECK(outside == 0, "layout %d: %d of %d draws outside the %d best", layout, outside,
                 draws, K);
        sw_sampler_destroy(s);
        s = make(opts(0.0f, 0, 1.0f, 0.0f, 0), N);
        if (s != NULL)
            SW_CHECK(sw_sampler_sample(s, logits) == ref_argmax(logits, N), "layout %d: greedy",
                     layout);
        sw_sampler_destroy(s);
    }
done:
    free(logits);
    free(prob);
}

/* ---- the distribution ------------------------------------------------------------ */

/* N_DRAWS draws with `o` must match ref_allowed's probabilities within
 * chi_square_bound; returns the empirical entropy in nats. */
static double check_distribution(const char *what, const float *logits, uint32_t n,
                                 sw_sampler_options o) {
    double prob[16];
    uint32_t counts[16];
    int ambiguous;
    char binding;
    uint32_t n_allowed = ref_allowed(logits, n, o, prob, &ambiguous, &binding);
    SW_CHECK(!ambiguous && n_allowed >= 2, "%s: a bad case (%u allowed)", what, n_allowed);
    sw_sampler *s = make(o, n);
    if (s == NULL)
        return 0.0;
    draw(s, logits, n, N_DRAWS, counts);
    sw_sampler_destroy(s);
    double x = chi_square(counts, prob, n, N_DRAWS), bound = chi_square_bound(n_allowed - 1);
    SW_CHECK(x < bound, "%s: chi-square %.1f over %u allowed ids exceeds %.1f", what, x, n_allowed,
             bound);
    printf("  %-28s %u allowed, chi-square %6.2f (bound %.1f)\n", what, n_allowed, x, bound);
    double h = 0.0;
    for (uint32_t i = 0; i < n; i++)
        if (counts[i] > 0) {
            double f = (double)counts[i] / N_DRAWS;
            h -= f * log(f);
        }
    return h;
}

static void test_distribution(void) {
    /* Unsorted, so the sampler's ordering is exercised too. */
    const float five[5] = {1.0f, 2.0f, 0.5f, -1.0f, 1.5f};
    double h05 = check_distribution("T 0.5, no filters", five, 5, opts(0.5f, 0, 1.0f, 0.0f, 101));
    double h1 = check_distribution("T 1, no filters", five, 5, opts(1.0f, 0, 1.0f, 0.0f, 102));
    double h2 = check_distribution("T 2, no filters", five, 5, opts(2.0f, 0, 1.0f, 0.0f, 103));
    /* Exact entropies: 0.958, 1.324 and 1.510 nats. */
    SW_CHECK(h05 < h1 - 0.05 && h1 < h2 - 0.05,
             "entropy must rise with temperature: %.3f %.3f %.3f", h05, h1, h2);

    /* Each filter alone, renormalizing what it keeps. With these logits at
     * T 1 the sorted probabilities are .360 .219 .133 .098 .080 .066 .030
     * .015: top-k 3 keeps 3, top-p 0.8 keeps 4 (mass .810), min-p 0.2 keeps 5
     * (.080 / .360 = .22, .066 / .360 = .18). At T 0.8 with top-k 6, top-p
     * 0.87 keeps 4: their mass renormalized over the six is .881 (over all
     * eight it is .858, which would keep 5). */
    const float eight[8] = {0.3f, 2.0f, -0.5f, 1.5f, 0.5f, 1.0f, -1.2f, 0.7f};
    check_distribution("T 1, top-k 3", eight, 8, opts(1.0f, 3, 1.0f, 0.0f, 201));
    check_distribution("T 1, top-p 0.8", eight, 8, opts(1.0f, 0, 0.8f, 0.0f, 202));
    check_distribution("T 1, min-p 0.2", eight, 8, opts(1.0f, 0, 1.0f, 0.2f, 203));
    check_distribution("T 0.8, k 6, p 0.87, min-p 0.05", eight, 8,
                       opts(0.8f, 6, 0.87f, 0.05f, 204));
}

int main(void) {
    test_bad_args();
    test_greedy();
    test_generator();
    test_determinism();
    test_permutation();
    test_filters_that_are_greedy();
    test_top_p_exact_mass();
    test_filters_random();
    test_large_vocab();
    test_distribution();
    return sw_check_finish("test_sampler");
}
