/*
 * perplexity.c — sw_perplexity (spillway.h): llama-perplexity's procedure
 * on any engine. Each chunk of n_ctx tokens is evaluated from an empty
 * cache with BOS in place of its first token: the first half without
 * logits, the second half with them; position j of the second half (but
 * the last) is scored on token j + 1. A base's records are read (or this
 * run's written) chunk by chunk, so memory stays one chunk of logits,
 * whatever the text's length. The figures and their uncertainties are
 * llama.cpp's definitions.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval/kld_file.h"
#include "eval/logprob.h"
#include "util/error.h"

#define DEFAULT_CTX 512

sw_perplexity_options sw_perplexity_options_default(void) {
    sw_perplexity_options o;
    memset(&o, 0, sizeof o);
    return o;
}

/* What one run holds: the tokens and chunking, buffers, and the sums. */
typedef struct ppl_run {
    const int32_t *tokens;
    uint32_t n_ctx, n_chunk, n_vocab, first, scored;
    int32_t bos;
    kld_file *base, *save;
    int32_t *chunk;      /* (n_ctx) */
    float *logits;       /* (n_ctx - first, n_vocab) */
    uint16_t *records;   /* (scored, lp_record_u16(n_vocab)) */
    float *klds, *dps;   /* (n_chunk * scored) */
    double nll, nll2;
    lp_sums sums;
} ppl_run;

static sw_status setup(ppl_run *r, sw_engine *e, const sw_model *m, const int32_t *tokens,
                       size_t n_tokens, const sw_perplexity_options *o) {
    sw_special_tokens sp;
    SW_TRY(sw_model_special_tokens(m, &sp));
    r->bos = sp.add_bos && sp.bos >= 0 ? sp.bos : -1;
    r->n_vocab = sw_engine_n_vocab(e);
    if (o->kld_base != NULL && o->save_base != NULL)
        return sw_errorf(SW_ERR_ARG, "saving a base and comparing with one are two runs: "
                         "save with the reference engine, compare with the other");
    if (o->kld_base != NULL) {
        SW_TRY(kld_file_open(o->kld_base, &r->base));
        if (kld_file_n_vocab(r->base) != r->n_vocab)
            return sw_errorf(SW_ERR_ARG, "the base %s was made with a vocabulary of %u tokens, "
                             "this model has %u: compare runs of the same model", o->kld_base,
                             kld_file_n_vocab(r->base), r->n_vocab);
        r->tokens = kld_file_tokens(r->base);
        r->n_ctx = kld_file_n_ctx(r->base);
        r->n_chunk = kld_file_n_chunk(r->base);
        if (o->n_chunks > 0 && o->n_chunks < r->n_chunk)
            r->n_chunk = o->n_chunks;
    } else {
        uint32_t ctx = sw_engine_n_ctx(e);
        r->tokens = tokens;
        r->n_ctx = o->n_ctx ? o->n_ctx : ctx < DEFAULT_CTX ? ctx : DEFAULT_CTX;
        if (tokens == NULL || r->n_ctx < 4 || n_tokens < 2 * (size_t)r->n_ctx)
            return sw_errorf(SW_ERR_ARG, "the text makes %zu tokens; perplexity over chunks of "
                             "%u needs at least %u: give a longer text or a smaller -c",
                             n_tokens, r->n_ctx, 2 * r->n_ctx);
        r->n_chunk = (uint32_t)(n_tokens / r->n_ctx);
        if (o->n_chunks > 0 && o->n_chunks < r->n_chunk)
            r->n_chunk = o->n_chunks;
    }
    if (r->n_ctx > sw_engine_n_ctx(e))
        return sw_errorf(SW_ERR_ARG, "chunks of %u tokens need a context of at least %u, the "
                         "engine has %u: raise -c", r->n_ctx, r->n_ctx, sw_engine_n_ctx(e));
    r->first = r->n_ctx / 2;
    r->scored = kld_scored(r->n_ctx);
    r->chunk = malloc(r->n_ctx * sizeof *r->chunk);
    r->logits = malloc((size_t)(r->n_ctx - r->first) * r->n_vocab * sizeof *r->logits);
    r->records = malloc((size_t)r->scored * lp_record_u16(r->n_vocab) * sizeof *r->records);
    r->klds = malloc((size_t)r->n_chunk * r->scored * sizeof *r->klds);
    r->dps = malloc((size_t)r->n_chunk * r->scored * sizeof *r->dps);
    if (!r->chunk || !r->logits || !r->records || !r->klds || !r->dps)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for a chunk of %u positions of "
                         "%u logits", r->n_ctx - r->first, r->n_vocab);
    if (o->save_base != NULL)
        SW_TRY(kld_file_create(o->save_base, r->n_ctx, r->n_vocab, r->n_chunk, r->tokens,
                               &r->save));
    return SW_OK;
}

/* Chunk c: evaluated from an empty cache, then its positions scored. */
static sw_status run_chunk(ppl_run *r, sw_session *s, uint32_t c) {
    const int32_t *t = r->tokens + (size_t)c * r->n_ctx;
    const size_t rec = lp_record_u16(r->n_vocab);
    memcpy(r->chunk, t, r->n_ctx * sizeof *t);
    if (r->bos >= 0)
        r->chunk[0] = r->bos;
    SW_TRY(sw_session_truncate(s, 0));
    SW_TRY(sw_session_eval(s, r->chunk, r->first, NULL, 0));
    SW_TRY(sw_session_eval(s, r->chunk + r->first, r->n_ctx - r->first, r->logits, 1));
    if (r->base != NULL)
        SW_TRY(kld_file_read_chunk(r->base, r->records));
    for (uint32_t j = 0; j < r->scored; j++) {
        const float *row = r->logits + (size_t)j * r->n_vocab;
        const int32_t next = t[r->first + j + 1];
        const size_t at = (size_t)c * r->scored + j;
        double nll;
        if (r->base != NULL) {
            lp_compare(row, r->n_vocab, r->records + j * rec, next, &r->sums, &r->klds[at],
                       &r->dps[at]);
            nll = lp_nll(row, r->n_vocab, next);
        } else if (r->save != NULL) {
            nll = lp_record_write(row, r->n_vocab, next, r->records + j * rec);
        } else {
            nll = lp_nll(row, r->n_vocab, next);
        }
        r->nll += nll;
        r->nll2 += nll * nll;
    }
    return r->save != NULL ? kld_file_write_chunk(r->save, r->records) : SW_OK;
}

/* Mean and its standard error (llama.cpp's: 0 below 11 values). */
static void mean_unc(double sum, double sum2, uint64_t n, double *mean, double *unc) {
    *mean = n ? sum / (double)n : 0;
    double var = n ? sum2 / (double)n - *mean * *mean : 0;
    *unc = var > 0 && n > 10 ? sqrt(var / (double)(n - 1)) : 0;
}

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static double percentile(const float *sorted, uint64_t n, double q) {
    double p = q * (double)(n - 1);
    uint64_t i = (uint64_t)p;
    double f = p - (double)i;
    return i + 1 < n ? (1 - f) * sorted[i] + f * sorted[i + 1] : sorted[n - 1];
}

static void finish(ppl_run *r, sw_perplexity_result *out) {
    const uint64_t n = (uint64_t)r->n_chunk * r->scored;
    double m, u;
    mean_unc(r->nll, r->nll2, n, &m, &u);
    out->n_ctx = r->n_ctx, out->n_chunks = r->n_chunk, out->n_scored = n;
    out->ppl = exp(m);
    out->ppl_unc = out->ppl * u;
    if (r->base == NULL || n == 0)
        return;
    const lp_sums *s = &r->sums;
    double mb, ub, cov = 0;
    mean_unc(s->nll_base, s->nll_base2, n, &mb, &ub);
    if (n >= 10)
        cov = (s->nll_nll_base / n - (s->nll / n) * (s->nll_base / n)) / (double)(n - 1);
    out->has_base = 1;
    out->ppl_base = exp(mb);
    mean_unc(s->nll, s->nll2, n, &m, &u);
    out->ln_ratio = m - mb;
    out->ln_ratio_unc = sqrt(fmax(u * u + ub * ub - 2 * cov, 0));
    mean_unc(s->kld, s->kld2, n, &out->kld_mean, &out->kld_unc);
    double mse, mse_unc;
    mean_unc(s->p_diff2, s->p_diff4, n, &mse, &mse_unc);
    out->dp_rms = sqrt(mse);
    out->dp_rms_unc = out->dp_rms > 0 ? 0.5 / out->dp_rms * mse_unc : 0;
    out->same_top = (double)s->same_top / (double)n;
    out->same_top_unc = n > 1 ? sqrt(out->same_top * (1 - out->same_top) / (double)(n - 1)) : 0;
    qsort(r->klds, (size_t)n, sizeof *r->klds, cmp_float);
    out->kld_median = n % 2 ? r->klds[n / 2] : 0.5 * (r->klds[n / 2] + r->klds[n / 2 - 1]);
    out->kld_p99 = percentile(r->klds, n, 0.99);
    out->kld_max = r->klds[n - 1];
}

static void release(ppl_run *r) {
    kld_file_close(r->base);
    free(r->chunk);
    free(r->logits);
    free(r->records);
    free(r->klds);
    free(r->dps);
}

sw_status sw_perplexity(sw_engine *engine, const sw_model *model, const int32_t *tokens,
                        size_t n_tokens, const sw_perplexity_options *opt,
                        sw_perplexity_result *out) {
    ppl_run r;
    sw_session *s = NULL;
    if (engine == NULL || model == NULL || opt == NULL || out == NULL)
        return sw_errorf(SW_ERR_ARG, "sw_perplexity: NULL argument");
    memset(&r, 0, sizeof r);
    memset(out, 0, sizeof *out);
    sw_status st = setup(&r, engine, model, tokens, n_tokens, opt);
    if (st == SW_OK)
        st = sw_session_create(engine, &s);
    for (uint32_t c = 0; st == SW_OK && c < r.n_chunk; c++) {
        st = run_chunk(&r, s, c);
        if (st == SW_OK && opt->progress != NULL)
            opt->progress(opt->progress_user, c + 1, r.n_chunk);
    }
    if (st == SW_OK)
        finish(&r, out);
    sw_session_destroy(s);
    sw_status cst = kld_file_close(r.save);   /* removes a base left incomplete */
    release(&r);
    return st != SW_OK ? st : cst;
}
