/*
 * test_perplexity.c — sw_perplexity and its .kld base files on the tiny
 * Gemma 3 (vocabulary 512), chunks of 32 tokens:
 *
 *   - the perplexity equals one computed here from the engine's logits in
 *     double, chunk by chunk as llama-perplexity defines it (BOS in place
 *     of each chunk's first token, the second half scored);
 *   - a saved base has the size llama.cpp's layout gives, its records
 *     decode to the log-probabilities within half a quantization step, and
 *     a run compared with its own base has KLD ~ 0 and the same top token
 *     everywhere;
 *   - q8_0 weights against an f32 base: KL divergence, same-top share and
 *     RMS dp equal those computed here in double from both runs' logits;
 *   - a plan streaming every layer through the simulated device gives the
 *     very figures of the host run (the sim computes bit-identically);
 *   - untrusted bases and bad arguments fail with the documented codes,
 *     and an incomplete base is not left behind.
 */
#define _DEFAULT_SOURCE /* mkdtemp */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "eval/kld_file.h"
#include "eval/logprob.h"
#include "precision_util.h"

#define N_CTX 32       /* chunk */
#define N_CHUNK 3
#define ENGINE_CTX 64
#define N_VOCAB 512
#define SCORED (N_CTX - 1 - N_CTX / 2)

static char dir[] = "/tmp/sw_ppl_XXXXXX";
static int32_t tokens[N_CHUNK * N_CTX + 5]; /* a partial chunk at the end */
static int32_t bos;

static const char *tmp_path(const char *name) {
    static char buf[4][256];
    static int next;
    char *p = buf[next++ % 4];
    snprintf(p, sizeof buf[0], "%s/%s", dir, name);
    return p;
}

static long file_size(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

static sw_engine *make_engine(const sw_model *m, const char *kind, const char *weights,
                              const char *place, uint32_t n_ctx) {
    sw_plan_options o = prec_options(kind, kind && !strcmp(kind, "sim") ? 64ull << 20 : 0,
                                     n_ctx, 16, NULL, weights);
    o.place = place;
    sw_engine *e = NULL;
    SW_CHECK_OK(sw_engine_launch(m, &o, NULL, &e));
    return e;
}

/* Every scored row's logits, as llama-perplexity takes them: each chunk
 * evaluated whole from an empty cache, BOS first. (SCORED x N_CHUNK rows.) */
static float *scored_logits(sw_engine *e, uint32_t n_chunk) {
    float *all = malloc((size_t)N_CTX * N_VOCAB * sizeof *all);
    float *out = malloc((size_t)n_chunk * SCORED * N_VOCAB * sizeof *out);
    sw_session *s = NULL;
    SW_CHECK_OK(sw_session_create(e, &s));
    for (uint32_t c = 0; s && c < n_chunk; c++) {
        int32_t chunk[N_CTX];
        memcpy(chunk, tokens + c * N_CTX, sizeof chunk);
        chunk[0] = bos;
        SW_CHECK_OK(sw_session_truncate(s, 0));
        SW_CHECK_OK(sw_session_eval(s, chunk, N_CTX, all, 1));
        memcpy(out + (size_t)c * SCORED * N_VOCAB, all + (size_t)(N_CTX / 2) * N_VOCAB,
               (size_t)SCORED * N_VOCAB * sizeof *out);
    }
    sw_session_destroy(s);
    free(all);
    return out;
}

static int32_t next_token(uint32_t c, uint32_t j) { return tokens[c * N_CTX + N_CTX / 2 + j + 1]; }

/* log-softmax of a row in double. */
static void log_softmax(const float *x, double *lp) {
    double mx = x[0], sum = 0;
    for (int i = 1; i < N_VOCAB; i++)
        mx = x[i] > mx ? x[i] : mx;
    for (int i = 0; i < N_VOCAB; i++)
        sum += exp(x[i] - mx);
    for (int i = 0; i < N_VOCAB; i++)
        lp[i] = x[i] - mx - log(sum);
}

static int argmax(const double *x) {
    int a = 0;
    for (int i = 1; i < N_VOCAB; i++)
        a = x[i] > x[a] ? i : a;
    return a;
}

static void count_progress(void *user, size_t done, size_t total) {
    int *calls = user;
    SW_CHECK(done == (size_t)*calls + 1 && total == N_CHUNK, "progress %zu/%zu after %d calls",
             done, total, *calls);
    (*calls)++;
}

/* The base's records decode to the log-probabilities (above the kept
 * minimum) within half a step. */
static void check_records(const char *base, const float *logits) {
    kld_file *f = NULL;
    SW_CHECK_OK(kld_file_open(base, &f));
    if (f == NULL)
        return;
    SW_CHECK(kld_file_n_ctx(f) == N_CTX && kld_file_n_vocab(f) == N_VOCAB &&
             kld_file_n_chunk(f) == N_CHUNK, "base header %u %u %u", kld_file_n_ctx(f),
             kld_file_n_vocab(f), kld_file_n_chunk(f));
    SW_CHECK(!memcmp(kld_file_tokens(f), tokens, sizeof(int32_t) * N_CHUNK * N_CTX),
             "the base keeps the text's tokens");
    const size_t rw = lp_record_u16(N_VOCAB);
    uint16_t *rec = malloc(SCORED * rw * sizeof *rec);
    double lp[N_VOCAB], worst = 0, worst_step = 0;
    for (uint32_t c = 0; c < N_CHUNK; c++) {
        SW_CHECK_OK(kld_file_read_chunk(f, rec));
        for (uint32_t j = 0; j < SCORED; j++) {
            float head[2];
            memcpy(head, rec + j * rw, sizeof head);
            log_softmax(logits + ((size_t)c * SCORED + j) * N_VOCAB, lp);
            for (int i = 0; i < N_VOCAB; i++) {
                double dec = head[0] * rec[j * rw + 4 + i] + head[1];
                if (lp[i] > head[1] + head[0] && fabs(dec - lp[i]) > worst) {
                    worst = fabs(dec - lp[i]);
                    worst_step = head[0];
                }
            }
        }
    }
    SW_CHECK(worst <= 0.5 * worst_step + 2e-5, "records decode within %g of the log-probs, "
             "step %g", worst, worst_step);
    SW_CHECK(kld_file_read_chunk(f, rec) == SW_ERR_ARG, "reading past the last chunk");
    free(rec);
    SW_CHECK_OK(kld_file_close(f));
}

/* ppl of logits (SCORED x n_chunk rows) in double. */
static double reference_ppl(const float *logits, uint32_t n_chunk) {
    double lp[N_VOCAB], nll = 0;
    for (uint32_t c = 0; c < n_chunk; c++)
        for (uint32_t j = 0; j < SCORED; j++) {
            log_softmax(logits + ((size_t)c * SCORED + j) * N_VOCAB, lp);
            nll -= lp[next_token(c, j)];
        }
    return exp(nll / (n_chunk * SCORED));
}

/* KLD(base || run), same top, RMS dp in double from the logits. */
static void reference_compare(const float *base, const float *run, double *kld, double *top,
                              double *dp_rms) {
    double lb[N_VOCAB], lr[N_VOCAB];
    *kld = *top = *dp_rms = 0;
    for (uint32_t r = 0; r < N_CHUNK * SCORED; r++) {
        log_softmax(base + (size_t)r * N_VOCAB, lb);
        log_softmax(run + (size_t)r * N_VOCAB, lr);
        for (int i = 0; i < N_VOCAB; i++)
            *kld += exp(lb[i]) * (lb[i] - lr[i]);
        *top += argmax(lb) == argmax(lr);
        int32_t t = next_token(r / SCORED, r % SCORED);
        double dp = exp(lr[t]) - exp(lb[t]);
        *dp_rms += dp * dp;
    }
    *kld /= N_CHUNK * SCORED;
    *top /= N_CHUNK * SCORED;
    *dp_rms = sqrt(*dp_rms / (N_CHUNK * SCORED));
}

static sw_perplexity_result run(sw_engine *e, const sw_model *m, const char *save,
                                const char *base, sw_status want) {
    sw_perplexity_options po = sw_perplexity_options_default();
    po.n_ctx = N_CTX;
    po.save_base = save;
    po.kld_base = base;
    sw_perplexity_result r;
    sw_status st = sw_perplexity(e, m, base ? NULL : tokens, base ? 0 : sizeof tokens / 4, &po,
                                 &r);
    SW_CHECK(st == want, "sw_perplexity(save %s, base %s) -> %s, want %s: %s",
             save ? save : "-", base ? base : "-", sw_status_name(st), sw_status_name(want),
             sw_last_error());
    return r;
}

static void test_base_and_compare(const sw_model *m) {
    sw_engine *f32 = make_engine(m, "cpu", NULL, NULL, ENGINE_CTX);
    if (f32 == NULL)
        return;
    const char *base = tmp_path("f32.kld");
    int calls = 0;
    sw_perplexity_options po = sw_perplexity_options_default();
    po.n_ctx = N_CTX;
    po.save_base = base;
    po.progress = count_progress;
    po.progress_user = &calls;
    sw_perplexity_result r;
    SW_CHECK_OK(sw_perplexity(f32, m, tokens, sizeof tokens / 4, &po, &r));
    SW_CHECK(calls == N_CHUNK, "%d progress calls", calls);
    SW_CHECK(r.n_ctx == N_CTX && r.n_chunks == N_CHUNK && r.n_scored == N_CHUNK * SCORED &&
             !r.has_base, "chunks %u x %u, %llu scored", r.n_chunks, r.n_ctx,
             (unsigned long long)r.n_scored);
    const long want = 20 + 4L * N_CHUNK * N_CTX + 2L * N_CHUNK * SCORED * lp_record_u16(N_VOCAB);
    SW_CHECK(file_size(base) == want, "base of %ld bytes, llama.cpp's layout gives %ld",
             file_size(base), want);

    float *base_logits = scored_logits(f32, N_CHUNK);
    const double ref = reference_ppl(base_logits, N_CHUNK);
    SW_CHECK(fabs(r.ppl / ref - 1) < 1e-6 && r.ppl_unc > 0, "ppl %.9g, in double %.9g (+- %g)",
             r.ppl, ref, r.ppl_unc);
    check_records(base, base_logits);

    /* Against its own base. */
    sw_perplexity_result self = run(f32, m, NULL, base, SW_OK);
    SW_CHECK(self.has_base && self.kld_mean < 1e-4 && self.kld_max < 5e-4 &&
             self.same_top == 1 && self.dp_rms < 1e-4 && fabs(self.ln_ratio) < 1e-4 &&
             self.ppl == r.ppl, "own base: KLD %g (max %g), same top %g, RMS dp %g, ln ratio "
             "%g, ppl %.9g vs %.9g", self.kld_mean, self.kld_max, self.same_top, self.dp_rms,
             self.ln_ratio, self.ppl, r.ppl);

    /* q8_0 weights against the f32 base. */
    sw_engine *q8 = make_engine(m, "cpu", "q8_0", NULL, ENGINE_CTX);
    if (q8 != NULL) {
        sw_perplexity_result q = run(q8, m, NULL, base, SW_OK);
        float *q_logits = scored_logits(q8, N_CHUNK);
        double kld, top, dp;
        reference_compare(base_logits, q_logits, &kld, &top, &dp);
        /* The base's records round log-probabilities to 16 / 65535: the
         * figures move by ~1e-4 of themselves (measured 6e-5). */
        SW_CHECK(kld > 1e-4 && fabs(q.kld_mean - kld) < 2e-3 * kld,
                 "q8_0 KLD %.6g, in double %.6g", q.kld_mean, kld);
        SW_CHECK(fabs(q.same_top - top) <= 1.0 / (N_CHUNK * SCORED) + 1e-12,
                 "q8_0 same top %.4f, in double %.4f", q.same_top, top);
        SW_CHECK(dp > 0 && fabs(q.dp_rms - dp) < 2e-3 * dp, "q8_0 RMS dp %.6g, in double %.6g",
                 q.dp_rms, dp);
        SW_CHECK(fabs(q.ppl / reference_ppl(q_logits, N_CHUNK) - 1) < 1e-6 &&
                 fabs(q.ppl_base / r.ppl - 1) < 1e-3 && q.kld_median <= q.kld_p99 &&
                 q.kld_p99 <= q.kld_max && q.kld_unc > 0 && q.same_top_unc >= 0,
                 "q8_0 ppl %g, base %g (f32 run %g), KLD median %g p99 %g max %g", q.ppl,
                 q.ppl_base, r.ppl, q.kld_median, q.kld_p99, q.kld_max);
        free(q_logits);
        sw_engine_destroy(q8);
    }

    /* Every layer streamed through the sim: the host run's figures. */
    sw_engine *sim = make_engine(m, "sim", NULL, "all=streamed", ENGINE_CTX);
    if (sim != NULL) {
        sw_perplexity_result s = run(sim, m, NULL, base, SW_OK);
        SW_CHECK(s.ppl == self.ppl && s.kld_mean == self.kld_mean &&
                 s.same_top == self.same_top && s.dp_rms == self.dp_rms,
                 "streamed on the sim: ppl %.9g KLD %g, host %.9g %g", s.ppl, s.kld_mean,
                 self.ppl, self.kld_mean);
        sw_engine_destroy(sim);
    }

    /* --chunks: fewer chunks of the same base. */
    po = sw_perplexity_options_default();
    po.kld_base = base;
    po.n_chunks = 2;
    SW_CHECK_OK(sw_perplexity(f32, m, NULL, 0, &po, &r));
    SW_CHECK(r.n_chunks == 2 && r.n_scored == 2 * SCORED &&
             fabs(r.ppl / reference_ppl(base_logits, 2) - 1) < 1e-6,
             "2 chunks: %u, %llu scored, ppl %g", r.n_chunks, (unsigned long long)r.n_scored,
             r.ppl);
    free(base_logits);
    sw_engine_destroy(f32);
}

/* Writes `bytes` of the valid base at src, changed by `edit`, to dst. */
static void copy_edited(const char *src, const char *dst, long keep, long at, uint32_t value) {
    FILE *in = fopen(src, "rb"), *out = fopen(dst, "wb");
    long n = file_size(src);
    char *b = malloc((size_t)n);
    SW_CHECK(in && out && b && fread(b, 1, (size_t)n, in) == (size_t)n, "copy %s", src);
    if (at >= 0)
        memcpy(b + at, &value, 4); /* little-endian hosts only: the tests run on x86 */
    if (out && b)
        fwrite(b, 1, (size_t)(keep < n ? keep : n), out);
    free(b);
    if (in)
        fclose(in);
    if (out)
        fclose(out);
}

static void test_bad_input(const sw_model *m) {
    sw_engine *e = make_engine(m, "cpu", NULL, NULL, ENGINE_CTX);
    sw_engine *small = make_engine(m, "cpu", NULL, NULL, 16);
    if (e == NULL || small == NULL)
        goto out;
    const char *base = tmp_path("f32.kld"), *bad = tmp_path("bad.kld");
    const long size = file_size(base);

    run(e, m, NULL, tmp_path("missing.kld"), SW_ERR_IO);
    copy_edited(base, bad, size - 10, -1, 0);
    run(e, m, NULL, bad, SW_ERR_FORMAT);                  /* truncated */
    copy_edited(base, bad, size, 0, 0x6c6c6f67);
    run(e, m, NULL, bad, SW_ERR_FORMAT);                  /* magic */
    copy_edited(base, bad, size, 20 + 4 * 7, 9999);
    run(e, m, NULL, bad, SW_ERR_FORMAT);                  /* a token outside the vocabulary */
    copy_edited(base, bad, size, 8, 0x7fffffff);
    run(e, m, NULL, bad, SW_ERR_FORMAT);                  /* n_ctx absurd: nothing allocated */
    copy_edited(base, bad, size, 16, 0xffffffff);
    run(e, m, NULL, bad, SW_ERR_FORMAT);                  /* n_chunk absurd */
    copy_edited(base, bad, 20, -1, 0);
    run(e, m, NULL, bad, SW_ERR_FORMAT);                  /* a header alone */

    /* A base of another vocabulary (well formed), and of longer chunks
     * than the engine holds. */
    kld_file *f = NULL;
    uint16_t *zeros = calloc((size_t)SCORED * lp_record_u16(600), sizeof *zeros);
    SW_CHECK_OK(kld_file_create(bad, N_CTX, 600, 1, tokens, &f));
    if (f != NULL) {
        SW_CHECK_OK(kld_file_write_chunk(f, zeros));
        SW_CHECK(kld_file_write_chunk(f, zeros) == SW_ERR_ARG, "writing past the last chunk");
        SW_CHECK_OK(kld_file_close(f));
    }
    free(zeros);
    run(e, m, NULL, bad, SW_ERR_ARG);
    run(small, m, NULL, base, SW_ERR_ARG);

    /* An incomplete base is removed at close. */
    SW_CHECK_OK(kld_file_create(bad, N_CTX, N_VOCAB, 2, tokens, &f));
    SW_CHECK(file_size(bad) >= 0, "a base being written exists");
    SW_CHECK_OK(kld_file_close(f));
    SW_CHECK(file_size(bad) < 0, "an incomplete base is removed");

    /* Arguments. */
    sw_perplexity_options po = sw_perplexity_options_default();
    sw_perplexity_result r;
    po.n_ctx = N_CTX;
    SW_CHECK(sw_perplexity(e, m, tokens, 2 * N_CTX - 1, &po, &r) == SW_ERR_ARG,
             "too few tokens");
    SW_CHECK(sw_perplexity(e, m, NULL, 100, &po, &r) == SW_ERR_ARG, "no tokens");
    po.n_ctx = 2;
    SW_CHECK(sw_perplexity(e, m, tokens, sizeof tokens / 4, &po, &r) == SW_ERR_ARG,
             "chunks of 2");
    po.n_ctx = N_CTX;
    SW_CHECK(sw_perplexity(small, m, tokens, sizeof tokens / 4, &po, &r) == SW_ERR_ARG,
             "chunks longer than the context");
    po.save_base = tmp_path("no/such/dir.kld");
    SW_CHECK(sw_perplexity(e, m, tokens, sizeof tokens / 4, &po, &r) == SW_ERR_IO,
             "an unwritable base: %s", sw_last_error());
    po.kld_base = base;
    po.save_base = bad;
    SW_CHECK(sw_perplexity(e, m, NULL, 0, &po, &r) == SW_ERR_ARG, "save and compare at once");
    SW_CHECK(file_size(bad) < 0, "nothing written when the arguments are refused");
    SW_CHECK(sw_perplexity(NULL, m, tokens, 1, &po, &r) == SW_ERR_ARG, "NULL engine");
out:
    sw_engine_destroy(small);
    sw_engine_destroy(e);
}

int main(void) {
    if (mkdtemp(dir) == NULL) {
        SW_CHECK(0, "mkdtemp");
        return sw_check_finish("test_perplexity");
    }
    uint64_t rng = 0x5eed;
    for (size_t i = 0; i < sizeof tokens / sizeof tokens[0]; i++)
        tokens[i] = 3 + (int32_t)(sw_test_rng_next(&rng) % (N_VOCAB - 3));
    sw_model *m = NULL;
    SW_CHECK_OK(sw_model_open(sw_test_data("tiny/gemma3.gguf"), &m));
    sw_special_tokens sp;
    if (m != NULL && sw_model_special_tokens(m, &sp) == SW_OK) {
        SW_CHECK(sp.add_bos && sp.bos >= 0, "the tiny model starts with BOS");
        bos = sp.bos;
        test_base_and_compare(m);
        test_bad_input(m);
    }
    sw_model_close(m);
    remove(tmp_path("f32.kld"));
    remove(tmp_path("bad.kld"));
    rmdir(dir);
    return sw_check_finish("test_perplexity");
}
