/*
 * test_logprobs.c — a request's logprobs (sw_request_logprobs) are the
 * model's: on the tiny Gemma 3, greedy, each output token's log-probability
 * equals minus the NLL `spillway perplexity` computes for it (eval/
 * logprob.c's lp_nll on the logits of the same sequence evaluated in one
 * pass), the alternatives are the row's likeliest in order with the chosen
 * token first; the same values with n-gram drafts (verify rows are a
 * one-token forward's bits); none recorded unless asked; bad counts refused.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eval/logprob.h"
#include "spillway.h"

enum { N_GEN = 24, N_CTX = 128, TOP = 5 };

static sw_engine *launch(const sw_model *m) {
    sw_plan_options o = sw_plan_options_default();
    o.backend = "cpu";
    o.n_threads = 1;
    o.n_ctx = N_CTX;
    sw_engine *e = NULL;
    SW_CHECK_OK(sw_engine_launch(m, &o, NULL, &e));
    return e;
}

/* One greedy request of the prompt on a fresh scheduler (drafting with
 * n-grams when asked): its tokens' records into out, how many. */
static size_t generate(sw_engine *e, const sw_model *m, const int32_t *prompt, size_t n,
                       int logprobs, bool ngram, sw_token_logprob *out) {
    sw_scheduler *q = NULL;
    sw_request *r = NULL;
    size_t got = 0;
    SW_CHECK_OK(sw_scheduler_create(e, m, &q));
    if (q == NULL)
        return 0;
    if (ngram) {
        sw_draft_options d = sw_draft_options_default();
        d.ngram = 1;
        d.ngram_min = 1;
        d.draft_max = 4;
        SW_CHECK_OK(sw_scheduler_set_draft(q, &d));
    }
    sw_request_options ro = sw_request_options_default();
    ro.sampling.temp = 0.0f;
    ro.n_predict = N_GEN;
    ro.logprobs = logprobs;
    SW_CHECK_OK(sw_scheduler_submit(q, prompt, n, &ro, &r));
    uint32_t step = 1;
    for (int guard = 0; r != NULL && step != 0 && guard < 10000; guard++)
        SW_CHECK_OK(sw_scheduler_step(q, &step));
    if (r != NULL)
        got = sw_request_logprobs(q, r, 0, out, N_GEN + 1);
    sw_request_release(q, r);
    sw_scheduler_destroy(q);
    return got;
}

int main(void) {
    sw_model *m = NULL;
    sw_engine *e = NULL;
    sw_session *s = NULL;
    sw_token_logprob lp[N_GEN + 1], again[N_GEN + 1];
    int32_t seq[N_CTX];
    float *logits = NULL;
    SW_CHECK_OK(sw_model_open(sw_test_data("tiny/gemma3.gguf"), &m));
    if (m == NULL || (e = launch(m)) == NULL)
        goto done;
    const char *text = "one two three one two three one two";
    size_t n = 0;
    SW_CHECK_OK(sw_tokenize(m, text, strlen(text), SW_TOK_ADD_BOS, seq, N_CTX, &n));
    const size_t n_lp = generate(e, m, seq, n, TOP, false, lp);
    SW_CHECK(n_lp == N_GEN, "%zu records for %d tokens", n_lp, N_GEN);
    /* the same sequence in one pass, every row's logits */
    for (size_t i = 0; i < n_lp; i++)
        seq[n + i] = lp[i].id;
    const uint32_t V = sw_engine_n_vocab(e);
    logits = malloc((n + n_lp) * (size_t)V * sizeof *logits);
    SW_CHECK_OK(sw_session_create(e, &s));
    if (logits == NULL || s == NULL)
        goto done;
    SW_CHECK_OK(sw_session_eval(s, seq, n + n_lp, logits, 1));
    sw_session_destroy(s); /* a scheduler takes every sequence */
    s = NULL;
    double worst = 0.0;
    for (size_t i = 0; i < n_lp; i++) {
        const float *row = logits + (n - 1 + i) * (size_t)V;
        const double nll = lp_nll(row, V, lp[i].id);
        worst = fmax(worst, fabs(lp[i].logprob + nll));
        SW_CHECK(fabs(lp[i].logprob + nll) < 1e-5, "token %zu: logprob %.7f, perplexity's "
                 "%.7f", i, (double)lp[i].logprob, -nll);
        SW_CHECK(lp[i].n_top == TOP && lp[i].top_id[0] == lp[i].id &&
                     lp[i].top_logprob[0] == lp[i].logprob,
                 "token %zu: greedy token not the first alternative", i);
        for (uint32_t j = 1; j < lp[i].n_top; j++)
            SW_CHECK(lp[i].top_logprob[j] <= lp[i].top_logprob[j - 1] &&
                         fabs(lp[i].top_logprob[j] + lp_nll(row, V, lp[i].top_id[j])) < 1e-5,
                     "token %zu: alternative %u out of order or off", i, j);
        if (i > 0)
            SW_CHECK(lp[i].text_offset >= lp[i - 1].text_offset, "text offsets go back");
    }
    printf("logprobs: %zu tokens, max |logprob + perplexity's NLL| %.3g\n", n_lp, worst);
    const size_t n2 = generate(e, m, seq, n, TOP, true, again);
    SW_CHECK(n2 == n_lp && !memcmp(lp, again, n_lp * sizeof *lp),
             "with n-gram drafts the records differ");
    SW_CHECK(generate(e, m, seq, n, -1, false, again) == 0, "records made without logprobs");
    sw_scheduler *q = NULL;
    sw_request *r = NULL;
    SW_CHECK_OK(sw_scheduler_create(e, m, &q));
    sw_request_options ro = sw_request_options_default();
    ro.logprobs = SW_LOGPROBS_MAX + 1;
    SW_CHECK(q != NULL && sw_scheduler_submit(q, seq, n, &ro, &r) == SW_ERR_ARG && r == NULL,
             "logprobs %d accepted", SW_LOGPROBS_MAX + 1);
    sw_scheduler_destroy(q);
done:
    free(logits);
    sw_session_destroy(s);
    sw_engine_destroy(e);
    sw_model_close(m);
    return sw_check_finish("test_logprobs");
}
