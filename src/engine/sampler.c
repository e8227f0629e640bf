/*
 * sampler.c — choosing the next token from logits: greedy, or temperature
 * with top-k, top-p (nucleus) and min-p filters, in that order.
 *
 * Reproducible: a private splitmix64 generator seeded by the caller, and a
 * total order on candidates (logit descending, then id ascending), so the
 * same seed and logits give the same token on every machine.
 */
#include <math.h>
#include <stdlib.h>

#include "engine/sampler.h"
#include "util/error.h"

typedef struct cand {
    float logit;
    int32_t id;
} cand;

struct sw_sampler {
    sw_sampler_options opt;
    uint32_t n_vocab;
    uint64_t rng;
    cand *c;       /* (n_vocab) candidates */
    double *p;     /* (n_vocab) their probabilities */
};

sw_sampler_options sw_sampler_options_default(void) {
    return (sw_sampler_options){.temp = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f,
                                .seed = 0};
}

static uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1) with 53 random bits. */
static double rng_uniform(uint64_t *state) {
    return (double)(splitmix64(state) >> 11) * (1.0 / 9007199254740992.0);
}

sw_status sw_sampler_create(const sw_sampler_options *opt, uint32_t n_vocab, sw_sampler **out) {
    if (out == NULL)
        return sw_errorf(SW_ERR_ARG, "sw_sampler_create: out is NULL");
    *out = NULL;
    if (opt == NULL || n_vocab == 0)
        return sw_errorf(SW_ERR_ARG, "sw_sampler_create: %s", opt == NULL ? "options are NULL"
                                                                          : "a vocabulary of 0 tokens");
    if (!(opt->temp >= 0.0f) || isinf(opt->temp))
        return sw_errorf(SW_ERR_ARG, "temperature %g must be >= 0", opt->temp);
    if (!(opt->top_p > 0.0f && opt->top_p <= 1.0f))
        return sw_errorf(SW_ERR_ARG, "top-p %g must be in (0, 1]", opt->top_p);
    if (!(opt->min_p >= 0.0f && opt->min_p < 1.0f))
        return sw_errorf(SW_ERR_ARG, "min-p %g must be in [0, 1)", opt->min_p);
    if (opt->top_k < 0)
        return sw_errorf(SW_ERR_ARG, "top-k %d must be >= 0", opt->top_k);
    sw_sampler *s = calloc(1, sizeof *s);
    if (s != NULL) {
        s->c = malloc((size_t)n_vocab * sizeof *s->c);
        s->p = malloc((size_t)n_vocab * sizeof *s->p);
    }
    if (s == NULL || s->c == NULL || s->p == NULL) {
        sw_sampler_destroy(s);
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for the sampler");
    }
    s->opt = *opt;
    s->n_vocab = n_vocab;
    s->rng = opt->seed;
    *out = s;
    return SW_OK;
}

void sw_sampler_destroy(sw_sampler *s) {
    if (s == NULL)
        return;
    free(s->c);
    free(s->p);
    free(s);
}

static int32_t argmax(const float *logits, uint32_t n) {
    int32_t best = 0;
    for (uint32_t i = 1; i < n; i++)
        if (logits[i] > logits[best])
            best = (int32_t)i;
    return best;
}

static int cand_cmp(const void *pa, const void *pb) {
    const cand *a = pa, *b = pb;
    if (a->logit != b->logit)
        return a->logit > b->logit ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

/* Keeps the k best candidates in c[0..k) sorted; returns k. Selection by
 * partial sort: a full sort of 262144 entries per token would dominate. */
static uint32_t keep_top(cand *c, uint32_t n, uint32_t k) {
    if (k >= n) {
        qsort(c, n, sizeof *c, cand_cmp);
        return n;
    }
    /* Threshold by a bounded insertion into the first k slots. */
    qsort(c, k, sizeof *c, cand_cmp);
    for (uint32_t i = k; i < n; i++) {
        if (cand_cmp(&c[i], &c[k - 1]) >= 0)
            continue;
        uint32_t j = k - 1;
        cand x = c[i];
        while (j > 0 && cand_cmp(&x, &c[j - 1]) < 0) {
            c[j] = c[j - 1];
            j--;
        }
        c[j] = x;
    }
    return k;
}

/* The candidates sampling draws from, best first, in s->c[0..keep) with
 * weights s->p[0..keep) summing to *total (not normalised: the order of
 * the arithmetic is the sampler's since its first version, so the same
 * seed keeps giving the same tokens). */
static uint32_t filter(sw_sampler *s, const float *logits, double *total_out) {
    uint32_t n = s->n_vocab;
    for (uint32_t i = 0; i < n; i++)
        s->c[i] = (cand){logits[i], (int32_t)i};
    uint32_t k = s->opt.top_k > 0 ? (uint32_t)s->opt.top_k : n;
    n = keep_top(s->c, n, k < n ? k : n);
    /* Probabilities at temperature over the kept candidates. */
    double sum = 0.0, probs_max = s->c[0].logit;
    double *p = s->p;
    for (uint32_t i = 0; i < n; i++) {
        p[i] = exp(((double)s->c[i].logit - probs_max) / s->opt.temp);
        sum += p[i];
    }
    uint32_t keep = n;
    double cum = 0.0;
    for (uint32_t i = 0; i < n; i++) {
        p[i] /= sum;
        if (i > 0 && p[i] < s->opt.min_p * p[0]) {
            keep = i;
            break;
        }
        cum += p[i];
        if (cum >= s->opt.top_p) {
            keep = i + 1;
            break;
        }
    }
    double total = 0.0;
    for (uint32_t i = 0; i < keep; i++)
        total += p[i];
    *total_out = total;
    return keep;
}

int32_t sw_sampler_sample(sw_sampler *s, const float *logits) {
    if (s->opt.temp == 0.0f)
        return argmax(logits, s->n_vocab);
    double total = 0.0;
    const uint32_t keep = filter(s, logits, &total);
    double r = rng_uniform(&s->rng) * total;
    for (uint32_t i = 0; i < keep; i++) {
        r -= s->p[i];
        if (r < 0.0)
            return s->c[i].id;
    }
    return s->c[keep - 1].id;
}

uint32_t sampler_dist(sw_sampler *s, const float *logits) {
    if (s->opt.temp == 0.0f) {
        s->c[0] = (cand){logits[0], argmax(logits, s->n_vocab)};
        s->p[0] = 1.0;
        return 1;
    }
    double total = 0.0;
    const uint32_t keep = filter(s, logits, &total);
    for (uint32_t i = 0; i < keep; i++)
        s->p[i] /= total;
    return keep;
}

int32_t sampler_dist_id(const sw_sampler *s, uint32_t i) { return s->c[i].id; }

double sampler_dist_p(const sw_sampler *s, uint32_t i) { return s->p[i]; }

double sampler_uniform(sw_sampler *s) { return rng_uniform(&s->rng); }

bool sampler_is_greedy(const sw_sampler *s) { return s->opt.temp == 0.0f; }
