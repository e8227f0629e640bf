/*
 * pipeline.c — a split's stages after the first, each on a thread of its
 * own, so that the devices work at once: while stage k computes a long
 * prompt's chunk i, stage k - 1 computes chunk i + 1. The first stage runs
 * on the caller's thread; a forward that wants no logits returns once the
 * first stage has handed its stream on, and one that wants logits (every
 * decode step, a prompt's last chunk) waits for the last stage. Each stage
 * takes its forwards in order, so its KV sees the chunks in order, as
 * without the pipeline; the numbers are the same.
 *
 * A forward that wants logits may also go in parts (micro-batches of
 * consecutive rows, as many as the plan found best: split_micro.c): the
 * first stage computes part j + 1 while the next computes part j. Rows
 * are independent in every kernel (the cpu kernels give a token alone the
 * bits it gets in a batch) and a sequence's later rows follow its earlier
 * ones through each stage, so the logits are the whole batch's.
 *
 * A worker hands its stream to the next stage only when that stage is
 * idle (its host memory is then free to overwrite); an error on a worker
 * is kept and returned by the next forward or drain.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "util/clock.h"
#include "util/error.h"

struct stage_worker {
    sw_engine *e;                  /* the stage it runs */
    stage_worker *next;            /* the stage after it; NULL: the last */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool busy, quit;               /* a forward posted and not finished; stop */
    uint32_t n, n_out;             /* the posted forward */
    float *logits;
    sw_status st;                  /* the first error, until taken */
    char err[512];
};

/* Waits until w is idle; returns (and clears) a kept error. w->mu held. */
static sw_status wait_idle_locked(stage_worker *w) {
    while (w->busy)
        pthread_cond_wait(&w->cv, &w->mu);
    const sw_status st = w->st;
    if (st != SW_OK) {
        w->st = SW_OK;
        return sw_errorf(st, "%s", w->err);
    }
    return SW_OK;
}

/* Hands prev's stream of n tokens to w's stage and starts its forward. */
static sw_status post(stage_worker *w, const sw_engine *prev, uint32_t n, uint32_t n_out,
                      float *logits) {
    pthread_mutex_lock(&w->mu);
    sw_status st = wait_idle_locked(w);
    if (st == SW_OK)
        st = engine_hand_on(prev, w->e, n);
    if (st == SW_OK) {
        w->n = n, w->n_out = n_out, w->logits = logits;
        w->busy = true;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return st;
}

static void *worker_main(void *arg) {
    stage_worker *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->busy && !w->quit)
            pthread_cond_wait(&w->cv, &w->mu);
        if (!w->busy)
            break;
        const uint32_t n = w->n, n_out = w->n_out;
        float *logits = w->logits;
        pthread_mutex_unlock(&w->mu);
        sw_status st = engine_stage_forward(w->e, n, n_out, logits, w->next == NULL);
        if (st == SW_OK && w->next != NULL)
            st = post(w->next, w->e, n, n_out, logits);
        pthread_mutex_lock(&w->mu);
        if (st != SW_OK && w->st == SW_OK) {
            w->st = st;
            snprintf(w->err, sizeof w->err, "%s", sw_last_error());
        }
        w->busy = false;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

sw_status pipeline_start(sw_engine *e) {
    if ((e->workers = calloc(e->n_stages, sizeof *e->workers)) == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory starting the stages' threads");
    for (uint32_t k = 0; k < e->n_stages; k++) {
        stage_worker *w = &e->workers[k];
        w->e = e->stages[k];
        w->next = k + 1 < e->n_stages ? &e->workers[k + 1] : NULL;
        pthread_mutex_init(&w->mu, NULL);
        pthread_cond_init(&w->cv, NULL);
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
            pthread_cond_destroy(&w->cv);
            pthread_mutex_destroy(&w->mu);
            pipeline_stop(e);
            return sw_errorf(SW_ERR_OOM_HOST, "cannot start a thread for device %u", k + 1);
        }
        e->n_workers = k + 1;
    }
    return SW_OK;
}

sw_status pipeline_drain(sw_engine *e) {
    sw_status first = SW_OK;
    char msg[512] = "";
    for (uint32_t k = 0; k < e->n_workers; k++) { /* in order: each waits for its next */
        stage_worker *w = &e->workers[k];
        pthread_mutex_lock(&w->mu);
        const sw_status st = wait_idle_locked(w);
        pthread_mutex_unlock(&w->mu);
        if (st != SW_OK && first == SW_OK) {
            first = st;
            snprintf(msg, sizeof msg, "%s", sw_last_error());
        }
    }
    return first == SW_OK ? SW_OK : sw_errorf(first, "%s", msg);
}

sw_status pipeline_post(sw_engine *e, uint32_t n, uint32_t n_out, float *logits) {
    SW_TRY(engine_stage_forward(e, n, 0, NULL, false));
    return post(&e->workers[0], e, n, n_out, logits);
}

sw_status pipeline_forward(sw_engine *e, uint32_t n, uint32_t n_out, float *logits) {
    SW_TRY(pipeline_post(e, n, n_out, logits));
    return n_out > 0 ? pipeline_drain(e) : SW_OK;
}

sw_status pipeline_parts(sw_engine *e, uint32_t n, uint32_t n_out, float *logits,
                         uint32_t parts) {
    const uint32_t cap = e->n_tok, V = e->config.n_vocab;
    int32_t *const arr[4] = {engine_host_meta(e, e->act.ids), engine_host_meta(e, e->act.pos),
                             engine_host_meta(e, e->act.seq),
                             engine_host_meta(e, e->act.out_rows)};
    int32_t *keep = e->parts_meta; /* the whole batch's rows, [4][n_tok] */
    for (int i = 0; i < 4; i++)
        memcpy(keep + (size_t)i * cap, arr[i], (size_t)(i == 3 ? n_out : n) * sizeof(int32_t));
    const int32_t *rows = keep + 3 * (size_t)cap;
    uint32_t done_out = 0;
    for (uint32_t j = 0; j < parts; j++) {
        const uint32_t a = (uint32_t)((uint64_t)n * j / parts);
        const uint32_t b = (uint32_t)((uint64_t)n * (j + 1) / parts);
        for (int i = 0; i < 3; i++)
            memcpy(arr[i], keep + (size_t)i * cap + a, (size_t)(b - a) * sizeof(int32_t));
        uint32_t c = 0; /* this part's logit rows, renumbered from its first */
        while (done_out + c < n_out && (uint32_t)rows[done_out + c] < b) {
            arr[3][c] = rows[done_out + c] - (int32_t)a;
            c++;
        }
        SW_TRY(pipeline_post(e, b - a, c, c ? logits + (size_t)done_out * V : NULL));
        done_out += c;
    }
    return pipeline_drain(e);
}

void pipeline_stop(sw_engine *e) {
    if (e->workers == NULL)
        return;
    (void)pipeline_drain(e);
    for (uint32_t k = 0; k < e->n_workers; k++) {
        stage_worker *w = &e->workers[k];
        pthread_mutex_lock(&w->mu);
        w->quit = true;
        pthread_cond_broadcast(&w->cv);
        pthread_mutex_unlock(&w->mu);
        pthread_join(w->thread, NULL);
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
    }
    free(e->workers);
    e->workers = NULL;
    e->n_workers = 0;
}
