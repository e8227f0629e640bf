/*
 * batch_run.c — `spillway batch` on the library's scheduler (batch.h):
 * every request is queued at once (the scheduler admits them in input
 * order as sequences free up); after each forward the finished requests at
 * the head of the input order are written and released, so results stream
 * out in order and only the unwritten ones are held.
 *
 * Circle with batch.c, on purpose: the command (batch.c) calls this
 * loop, which hands each finished result back to batch.c's writer
 * (batch_write_job), the one place that knows the output format.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/batch.h"
#include "util/clock.h"

static int submit_all(batch_ctx *b, sw_scheduler *q) {
    for (size_t i = 0; i < b->n_jobs; i++) {
        batch_job *j = &b->jobs[i];
        sw_request_options o = sw_request_options_default();
        o.sampling = j->sampling;
        o.n_predict = j->n_predict;
        o.stop = (const char *const *)j->stop;
        o.n_stop = j->n_stop;
        sw_status st = sw_scheduler_submit(q, j->prompt, j->n_prompt, &o, &j->req);
        if (st != SW_OK)
            return cli_fail(st);
        free(j->prompt); /* the scheduler has its copy */
        j->prompt = NULL;
    }
    return CLI_EXIT_OK;
}

/* Job j's result from its ended request. */
static int take_result(sw_scheduler *q, batch_job *j, const sw_request_info *in) {
    j->n_generated = in->n_generated;
    j->finish = in->finish;
    j->t_start = in->t_started;
    j->t_first = in->t_first;
    j->t_end = in->t_end;
    j->text = malloc(in->text_len + 1);
    if (j->text == NULL) {
        cli_error("out of memory for the output of line %zu", j->line);
        return CLI_EXIT_OOM_HOST;
    }
    j->text_len = sw_request_text(q, j->req, 0, j->text, in->text_len);
    return CLI_EXIT_OK;
}

/* Writes (and lets go of) the ended jobs at the head of the input order;
 * *n_done counts them. */
static int write_ready(batch_ctx *b, sw_scheduler *q, size_t *n_done) {
    while (b->next_out < b->n_jobs) {
        batch_job *j = &b->jobs[b->next_out];
        sw_request_info in;
        sw_request_get_info(q, j->req, &in);
        if (in.state != SW_REQ_DONE)
            return CLI_EXIT_OK;
        if (in.finish == SW_FINISH_ERROR) {
            cli_error("line %zu: the request could not run (out of host memory)", j->line);
            return CLI_EXIT_OOM_HOST;
        }
        int rc = take_result(q, j, &in);
        if (rc == CLI_EXIT_OK && (rc = batch_write_job(b, j)) != CLI_EXIT_OK)
            cli_error("cannot write the results: %s", strerror(errno));
        sw_request_release(q, j->req);
        j->req = NULL;
        free(j->text);
        j->text = NULL;
        if (rc != CLI_EXIT_OK)
            return rc;
        b->next_out++;
        (*n_done)++;
    }
    return CLI_EXIT_OK;
}

static void batch_progress(const batch_ctx *b, const sw_scheduler_stats *t, size_t n_done,
                           double t0) {
    double dt = sw_clock_s() - t0;
    if (isatty(STDERR_FILENO))
        fprintf(stderr, "\rbatch: %zu/%zu done, %zu running, %llu tokens generated, "
                "%.1f tok/s ", n_done, b->n_jobs, t->n_running,
                (unsigned long long)t->generated_tokens,
                dt > 0 ? (double)t->generated_tokens / dt : 0.0);
}

static int run_loop(batch_ctx *b, sw_scheduler *q) {
    const double t_begin = sw_clock_s();
    size_t reported = 0, n_done = 0;
    for (;;) {
        uint32_t n = 0;
        sw_status st = sw_scheduler_step(q, &n);
        if (st != SW_OK)
            return cli_fail(st);
        int rc = write_ready(b, q, &n_done);
        if (rc != CLI_EXIT_OK || n == 0)
            return rc;
        sw_scheduler_stats t;
        sw_scheduler_get_stats(q, &t);
        if (n_done != reported || isatty(STDERR_FILENO))
            batch_progress(b, &t, n_done, t_begin);
        if (n_done != reported && !isatty(STDERR_FILENO))
            fprintf(stderr, "batch: %zu/%zu done\n", n_done, b->n_jobs);
        reported = n_done;
    }
}

int batch_run(batch_ctx *b) {
    sw_scheduler *q = NULL;
    draft_ctx draft = {0};
    int rc = gen_opts_start_scheduler(b->opt, b->model, b->engine, &q, &draft);
    if (rc != CLI_EXIT_OK)
        goto done;
    const double t0 = sw_clock_s();
    rc = submit_all(b, q);
    if (rc == CLI_EXIT_OK)
        rc = run_loop(b, q);
    sw_scheduler_stats t;
    sw_scheduler_get_stats(q, &t);
    b->totals = (batch_totals){.n_prompt = t.prompt_tokens, .n_generated = t.generated_tokens,
                               .n_decode_tokens = t.decode_tokens, .decode_s = t.decode_s,
                               .wall_s = sw_clock_s() - t0, .n_forwards = t.n_forwards,
                               .drafted = sw_scheduler_draft_max(q) > 0, .spec = t};
    if (isatty(STDERR_FILENO))
        fputc('\n', stderr);
done:
    for (size_t i = 0; i < b->n_jobs; i++)
        b->jobs[i].req = NULL; /* freed with the scheduler */
    sw_scheduler_destroy(q);
    draft_end(&draft);
    return rc;
}
