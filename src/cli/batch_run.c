/*
 * batch_run.c — the scheduler of `spillway batch` (batch.h): lanes are the
 * engine's sequences; each forward takes one decode token per running
 * request, then prompt chunks (at most -b tokens per request, at most the
 * forward's capacity in all) of requests in prefill, oldest first. The
 * logits of a request's last prompt token and of its decode tokens are
 * sampled with its own sampler; the stop rule is run's (gen_after_sample).
 * Nothing per token is allocated: items, owners and logits are sized once
 * for the largest forward.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/batch.h"
#include "util/clock.h"

typedef struct lane {
    sw_session *session;
    batch_job *job;              /* NULL: free */
    size_t fed;                  /* prompt tokens queued in the forward being built */
} lane;

typedef struct sched {
    batch_ctx *b;
    lane *lanes;
    uint32_t n_lanes;
    size_t next_job;             /* first job not yet started */
    sw_batch_item *items;        /* (max tokens) */
    batch_job **owners;          /* (max tokens) */
    float *logits;               /* (max tokens, n_vocab) */
    uint32_t cap, n_vocab;
    size_t n_done;
} sched;

static int job_start(sched *q, lane *l, batch_job *j) {
    sw_status st = sw_sampler_create(&j->sampling, q->n_vocab, &j->sampler);
    if (st == SW_OK)
        st = sw_session_truncate(l->session, 0);
    if (st != SW_OK)
        return cli_fail(st);
    j->state = JOB_PREFILL;
    j->session = l->session;
    j->t_start = sw_clock_s();
    l->job = j;
    return CLI_EXIT_OK;
}

static void job_finish(sched *q, lane *l, batch_job *j, gen_stop stop) {
    j->state = JOB_DONE;
    j->stop = stop;
    j->t_end = sw_clock_s();
    sw_sampler_destroy(j->sampler);
    j->sampler = NULL;
    j->session = NULL;
    l->job = NULL;
    q->n_done++;
    q->b->totals.n_prompt += j->n_prompt;
    q->b->totals.n_generated += j->n_generated;
}

/* Free lanes take the next waiting jobs. */
static int admit(sched *q) {
    for (uint32_t i = 0; i < q->n_lanes; i++) {
        if (q->lanes[i].job != NULL)
            continue;
        while (q->next_job < q->b->n_jobs && q->b->jobs[q->next_job].state != JOB_WAITING)
            q->next_job++;
        if (q->next_job == q->b->n_jobs)
            return CLI_EXIT_OK;
        int rc = job_start(q, &q->lanes[i], &q->b->jobs[q->next_job++]);
        if (rc != CLI_EXIT_OK)
            return rc;
    }
    return CLI_EXIT_OK;
}

static void add_item(sched *q, uint32_t *n, batch_job *j, int32_t token, int logits) {
    q->items[*n] = (sw_batch_item){j->session, token, logits};
    q->owners[(*n)++] = j;
}

/* Decode tokens first, then prompt chunks; *all_decode when no prefill. */
static uint32_t build(sched *q, bool *all_decode) {
    uint32_t n = 0, per_seq = sw_engine_n_batch(q->b->engine);
    for (uint32_t i = 0; i < q->n_lanes; i++) {
        batch_job *j = q->lanes[i].job;
        q->lanes[i].fed = 0;
        if (j != NULL && j->state == JOB_DECODE && n < q->cap)
            add_item(q, &n, j, j->last, 1);
    }
    *all_decode = true;
    for (uint32_t i = 0; i < q->n_lanes; i++) {
        batch_job *j = q->lanes[i].job;
        if (j == NULL || j->state != JOB_PREFILL)
            continue;
        *all_decode = false;
        size_t k = j->n_prompt - j->n_fed;
        k = k < per_seq ? k : per_seq;
        k = k < q->cap - n ? k : q->cap - n;
        for (size_t t = 0; t < k; t++)
            add_item(q, &n, j, j->prompt[j->n_fed + t], j->n_fed + t + 1 == j->n_prompt);
        q->lanes[i].fed = k;
    }
    return n;
}

static int append_piece(const batch_ctx *b, batch_job *j, int32_t id) {
    char buf[256];
    size_t len = 0;
    if (sw_token_to_piece(b->model, id, buf, sizeof buf, &len) != SW_OK || len > sizeof buf)
        return CLI_EXIT_OK;
    if (j->text_len + len + 1 > j->text_cap) {
        size_t cap = j->text_cap ? j->text_cap * 2 : 256;
        while (cap < j->text_len + len + 1)
            cap *= 2;
        char *bigger = realloc(j->text, cap);
        if (bigger == NULL) {
            cli_error("out of memory for the output of line %zu", j->line);
            return CLI_EXIT_OOM_HOST;
        }
        j->text = bigger;
        j->text_cap = cap;
    }
    memcpy(j->text + j->text_len, buf, len);
    j->text_len += len;
    j->text[j->text_len] = '\0';
    return CLI_EXIT_OK;
}

/* Samples for one item that had logits. */
static int take_token(sched *q, lane *l, batch_job *j, const float *logits) {
    int32_t id = sw_sampler_sample(j->sampler, logits);
    bool print = false;
    if (j->state == JOB_PREFILL)
        j->t_first = sw_clock_s();
    gen_stop stop = gen_after_sample(&q->b->special, j->n_predict, &j->n_generated, id,
                                     sw_session_pos(j->session),
                                     sw_engine_n_ctx(q->b->engine), &print);
    int rc = print ? append_piece(q->b, j, id) : CLI_EXIT_OK;
    if (rc != CLI_EXIT_OK)
        return rc;
    j->state = JOB_DECODE;
    j->last = id;
    if (stop != GEN_GOING)
        job_finish(q, l, j, stop);
    return CLI_EXIT_OK;
}

/* After a forward: prompt progress, then sampling in item order. */
static int consume(sched *q, uint32_t n) {
    uint32_t row = 0;
    for (uint32_t i = 0; i < q->n_lanes; i++)
        if (q->lanes[i].job != NULL && q->lanes[i].job->state == JOB_PREFILL)
            q->lanes[i].job->n_fed += q->lanes[i].fed;
    for (uint32_t t = 0; t < n; t++) {
        if (!q->items[t].logits)
            continue;
        batch_job *j = q->owners[t];
        lane *l = &q->lanes[0];
        while (l->job != j)
            l++;
        int rc = take_token(q, l, j, q->logits + (size_t)row++ * q->n_vocab);
        if (rc != CLI_EXIT_OK)
            return rc;
    }
    return CLI_EXIT_OK;
}

static void progress(const sched *q, double t0) {
    const batch_totals *t = &q->b->totals;
    double dt = sw_clock_s() - t0;
    uint32_t running = 0;
    for (uint32_t i = 0; i < q->n_lanes; i++)
        running += q->lanes[i].job != NULL;
    if (isatty(STDERR_FILENO))
        fprintf(stderr, "\rbatch: %zu/%zu done, %u running, %zu tokens generated, %.1f tok/s ",
                q->n_done, q->b->n_jobs, running, t->n_generated,
                dt > 0 ? (double)t->n_generated / dt : 0.0);
}

static int run_loop(sched *q) {
    batch_ctx *b = q->b;
    const double t_begin = sw_clock_s();
    size_t reported = 0;
    for (;;) {
        int rc = admit(q);
        bool all_decode = false;
        uint32_t n = rc == CLI_EXIT_OK ? build(q, &all_decode) : 0;
        if (rc != CLI_EXIT_OK || n == 0)
            return rc;
        const double t0 = sw_clock_s();
        sw_status st = sw_engine_eval_batch(b->engine, q->items, n, q->logits);
        if (st != SW_OK)
            return cli_fail(st);
        const double dt = sw_clock_s() - t0;
        b->totals.n_forwards++;
        if (all_decode) {
            b->totals.decode_s += dt;
            b->totals.n_decode_tokens += n;
        }
        if ((rc = consume(q, n)) != CLI_EXIT_OK || (rc = batch_write_ready(b)) != CLI_EXIT_OK)
            return rc;
        if (q->n_done != reported || isatty(STDERR_FILENO))
            progress(q, t_begin);
        if (q->n_done != reported && !isatty(STDERR_FILENO))
            fprintf(stderr, "batch: %zu/%zu done\n", q->n_done, b->n_jobs);
        reported = q->n_done;
    }
}

int batch_run(batch_ctx *b) {
    sched q = {.b = b, .n_lanes = sw_engine_n_seq(b->engine),
               .cap = sw_engine_max_tokens(b->engine), .n_vocab = sw_engine_n_vocab(b->engine)};
    int rc = CLI_EXIT_OK;
    q.lanes = calloc(q.n_lanes, sizeof *q.lanes);
    q.items = calloc(q.cap, sizeof *q.items);
    q.owners = calloc(q.cap, sizeof *q.owners);
    q.logits = malloc((size_t)q.cap * q.n_vocab * sizeof *q.logits);
    if (q.lanes == NULL || q.items == NULL || q.owners == NULL || q.logits == NULL) {
        cli_error("out of memory for %u lanes of %u tokens", q.n_lanes, q.cap);
        rc = CLI_EXIT_OOM_HOST;
    }
    for (uint32_t i = 0; rc == CLI_EXIT_OK && i < q.n_lanes; i++) {
        sw_status st = sw_session_create(b->engine, &q.lanes[i].session);
        if (st != SW_OK)
            rc = cli_fail(st);
    }
    const double t0 = sw_clock_s();
    if (rc == CLI_EXIT_OK)
        rc = run_loop(&q);
    b->totals.wall_s = sw_clock_s() - t0;
    if (isatty(STDERR_FILENO))
        fputc('\n', stderr);
    for (uint32_t i = 0; q.lanes != NULL && i < q.n_lanes; i++) {
        if (q.lanes[i].job != NULL)
            sw_sampler_destroy(q.lanes[i].job->sampler);
        sw_session_destroy(q.lanes[i].session);
    }
    free(q.lanes);
    free(q.items);
    free(q.owners);
    free(q.logits);
    return rc;
}
