/*
 * batch_run.c — `spillway batch` on the library's scheduler (batch.h):
 * every request is queued at once (the scheduler admits them in input
 * order as sequences free up); after each forward the finished requests at
 * the head of the input order are written and released, so results stream
 * out in order and only the unwritten ones are held.
 *
 * With --replicas N each replica's engine has its own scheduler, stepped
 * by a thread of its own (replica 0 by the calling thread); a job goes to
 * the replica with the fewest tokens (prompt + to generate) assigned so
 * far. Whichever thread steps, it writes what is ready under one lock, in
 * input order across the replicas (a scheduler may be read from any
 * thread: spillway.h).
 *
 * Circle with batch.c, on purpose: the command (batch.c) calls this
 * loop, which hands each finished result back to batch.c's writer
 * (batch_write_job), the one place that knows the output format.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/batch.h"
#include "util/clock.h"

/* The run's shared state: the writing lock and what every thread reads. */
typedef struct run_ctx {
    batch_ctx *b;
    sw_scheduler *q[CLI_MAX_REPLICAS];
    pthread_mutex_t mu;          /* writing results, n_done, rc */
    size_t n_done, reported;
    int rc;                      /* the first failure */
    double t_begin;
} run_ctx;

typedef struct replica_arg {
    run_ctx *r;
    size_t i;
} replica_arg;

static int submit_all(batch_ctx *b, sw_scheduler *const *q) {
    uint64_t load[CLI_MAX_REPLICAS] = {0};
    for (size_t i = 0; i < b->n_jobs; i++) {
        batch_job *j = &b->jobs[i];
        size_t k = 0;   /* the replica with the fewest tokens so far */
        for (size_t t = 1; t < b->n_rep; t++)
            k = load[t] < load[k] ? t : k;
        load[k] += j->n_prompt + (j->n_predict > 0 ? (uint64_t)j->n_predict : 0);
        sw_request_options o = sw_request_options_default();
        o.sampling = j->sampling;
        o.n_predict = j->n_predict;
        o.stop = (const char *const *)j->stop;
        o.n_stop = j->n_stop;
        sw_status st = sw_scheduler_submit(q[k], j->prompt, j->n_prompt, &o, &j->req);
        if (st != SW_OK)
            return cli_fail(st);
        j->q = q[k];
        free(j->prompt); /* the scheduler has its copy */
        j->prompt = NULL;
    }
    return CLI_EXIT_OK;
}

/* Job j's result from its ended request. */
static int take_result(batch_job *j, const sw_request_info *in) {
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
    j->text_len = sw_request_text(j->q, j->req, 0, j->text, in->text_len);
    return CLI_EXIT_OK;
}

/* Writes (and lets go of) the ended jobs at the head of the input order;
 * *n_done counts them (under mu). */
static int write_ready(batch_ctx *b, size_t *n_done) {
    while (b->next_out < b->n_jobs) {
        batch_job *j = &b->jobs[b->next_out];
        sw_request_info in;
        sw_request_get_info(j->q, j->req, &in);
        if (in.state != SW_REQ_DONE)
            return CLI_EXIT_OK;
        if (in.finish == SW_FINISH_ERROR) {
            cli_error("line %zu: the request could not run (out of host memory)", j->line);
            return CLI_EXIT_OOM_HOST;
        }
        int rc = take_result(j, &in);
        if (rc == CLI_EXIT_OK && (rc = batch_write_job(b, j)) != CLI_EXIT_OK)
            cli_error("cannot write the results: %s", strerror(errno));
        sw_request_release(j->q, j->req);
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

/* Generated tokens over every replica so far. */
static uint64_t generated(const run_ctx *r, size_t *n_running) {
    uint64_t n = 0;
    *n_running = 0;
    for (size_t i = 0; i < r->b->n_rep; i++) {
        sw_scheduler_stats t;
        sw_scheduler_get_stats(r->q[i], &t);
        n += t.generated_tokens;
        *n_running += t.n_running;
    }
    return n;
}

/* After a step: the ready results written, progress said (under mu). */
static void after_step(run_ctx *r) {
    batch_ctx *b = r->b;
    const int rc = write_ready(b, &r->n_done);
    if (rc != CLI_EXIT_OK && r->rc == CLI_EXIT_OK)
        r->rc = rc;
    const bool tty = isatty(STDERR_FILENO);
    if (r->n_done != r->reported || tty) {
        size_t running;
        const uint64_t gen = generated(r, &running);
        const double dt = sw_clock_s() - r->t_begin;
        if (tty)
            fprintf(stderr, "\rbatch: %zu/%zu done, %zu running, %llu tokens generated, "
                    "%.1f tok/s ", r->n_done, b->n_jobs, running, (unsigned long long)gen,
                    dt > 0 ? (double)gen / dt : 0.0);
        else
            fprintf(stderr, "batch: %zu/%zu done\n", r->n_done, b->n_jobs);
    }
    r->reported = r->n_done;
}

/* Steps replica i's scheduler until it has nothing left, or a thread
 * failed. */
static void *step_replica(void *arg) {
    const replica_arg *a = arg;
    run_ctx *r = a->r;
    for (;;) {
        uint32_t n = 0;
        const sw_status st = sw_scheduler_step(r->q[a->i], &n);
        pthread_mutex_lock(&r->mu);
        if (st != SW_OK && r->rc == CLI_EXIT_OK)
            r->rc = cli_fail(st);
        else if (st == SW_OK)
            after_step(r);
        const bool stop = st != SW_OK || n == 0 || r->rc != CLI_EXIT_OK;
        pthread_mutex_unlock(&r->mu);
        if (stop)
            return NULL;
    }
}

/* The schedulers' counts, summed, into b->totals. */
static void totals(batch_ctx *b, sw_scheduler *const *q, double t0) {
    batch_totals *x = &b->totals;
    memset(x, 0, sizeof *x);
    for (size_t i = 0; i < b->n_rep; i++) {
        sw_scheduler_stats t;
        sw_scheduler_get_stats(q[i], &t);
        x->n_prompt += t.prompt_tokens;
        x->n_generated += t.generated_tokens;
        x->n_decode_tokens += t.decode_tokens;
        x->decode_s = t.decode_s > x->decode_s ? t.decode_s : x->decode_s; /* side by side */
        x->n_forwards += t.n_forwards;
        x->drafted |= sw_scheduler_draft_max(q[i]) > 0;
        x->spec.drafted_tokens += t.drafted_tokens;
        x->spec.accepted_tokens += t.accepted_tokens;
        x->spec.verify_forwards += t.verify_forwards;
        x->spec.verify_tokens += t.verify_tokens;
    }
    x->wall_s = sw_clock_s() - t0;
}

int batch_run(batch_ctx *b) {
    run_ctx r = {.b = b, .rc = CLI_EXIT_OK};
    draft_ctx draft[CLI_MAX_REPLICAS];
    pthread_t th[CLI_MAX_REPLICAS];
    replica_arg args[CLI_MAX_REPLICAS];
    size_t n_sched = 0, n_threads = 0;
    memset(draft, 0, sizeof draft);
    pthread_mutex_init(&r.mu, NULL);
    int rc = CLI_EXIT_OK;
    for (; n_sched < b->n_rep && rc == CLI_EXIT_OK; n_sched++)
        rc = gen_opts_start_scheduler(b->opt, b->model, b->engines[n_sched], &r.q[n_sched],
                                      &draft[n_sched]);
    if (rc != CLI_EXIT_OK)
        goto done;
    const double t0 = sw_clock_s();
    r.t_begin = t0;
    if ((rc = submit_all(b, r.q)) != CLI_EXIT_OK)
        goto done;
    for (size_t i = 1; i < b->n_rep; i++, n_threads++) {
        args[i] = (replica_arg){&r, i};
        if (pthread_create(&th[i], NULL, step_replica, &args[i]) != 0) {
            cli_error("cannot start replica %zu's thread", i);
            rc = CLI_EXIT_FAILURE;
            pthread_mutex_lock(&r.mu);
            r.rc = rc;   /* the started ones stop after their step */
            pthread_mutex_unlock(&r.mu);
            break;
        }
    }
    if (rc == CLI_EXIT_OK) {
        args[0] = (replica_arg){&r, 0};
        step_replica(&args[0]);
    }
    for (size_t i = 1; i <= n_threads; i++)
        pthread_join(th[i], NULL);
    if (rc == CLI_EXIT_OK) {   /* what the last steps left */
        pthread_mutex_lock(&r.mu);
        after_step(&r);
        rc = r.rc;
        pthread_mutex_unlock(&r.mu);
    }
    if (rc == CLI_EXIT_OK && b->next_out < b->n_jobs) {
        cli_error("internal: %zu of %zu requests never ended", b->n_jobs - b->next_out,
                  b->n_jobs);
        rc = CLI_EXIT_FAILURE;
    }
    totals(b, r.q, t0);
    if (b->n_rep == 1)   /* one scheduler: its own speculative counts, whole */
        sw_scheduler_get_stats(r.q[0], &b->totals.spec);
    if (isatty(STDERR_FILENO))
        fputc('\n', stderr);
done:
    for (size_t i = 0; i < b->n_jobs; i++)
        b->jobs[i].req = NULL; /* freed with the schedulers */
    for (size_t i = 0; i < n_sched; i++) {
        sw_scheduler_destroy(r.q[i]);
        draft_end(&draft[i]);
    }
    pthread_mutex_destroy(&r.mu);
    return rc;
}
