/*
 * sim_queue.c — one queue of the simulated device: a thread working
 * through a fixed FIFO of commands in order, as a CUDA stream does.
 *
 * Nothing is allocated per command: push() copies the command into the
 * ring and blocks while all `capacity` slots are taken. `submitted` and
 * `done` count commands, so an event is just the value of `submitted` when
 * it was recorded, and it has passed once `done` reaches it; a wait command
 * on another queue blocks this thread on that queue's counter. A command is
 * taken out of the ring before it runs, so its slot frees early.
 *
 * Circle with sim_exec.c, on purpose: this thread runs each command
 * through sim_exec(), whose wait command blocks on another queue here
 * (sim_queue_wait) and whose failures are recorded through sim_fail():
 * the device's execution and its queues are one mechanism.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>

#include "backend/sim/sim_internal.h"
#include "util/error.h"
#include "util/clock.h"

static void *queue_main(void *arg) {
    sim_queue *q = arg;
    sim_cmd *cmd = &q->running;
    pthread_mutex_lock(&q->mu);
    for (;;) {
        while (!q->stop && q->count == 0)
            pthread_cond_wait(&q->cv_work, &q->mu);
        if (q->stop)
            break;
        *cmd = q->ring[q->head];
        q->head = (q->head + 1) % q->capacity;
        q->count--;
        pthread_cond_signal(&q->cv_space);
        pthread_mutex_unlock(&q->mu);
        q->exec(q->owner, q->index, cmd);
        pthread_mutex_lock(&q->mu);
        q->done++;
        pthread_cond_broadcast(&q->cv_done);
    }
    q->stop = true;
    pthread_cond_broadcast(&q->cv_done);
    pthread_cond_broadcast(&q->cv_space);
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

sw_status sim_queue_init(sim_queue *q, int index, uint32_t capacity, sim_backend *owner,
                         sim_exec_fn exec) {
    int n_ready = 0; /* primitives created so far, in the order below */
    memset(q, 0, sizeof *q);
    q->index = index;
    q->capacity = capacity;
    q->owner = owner;
    q->exec = exec;
    if ((q->ring = malloc((size_t)capacity * sizeof *q->ring)) == NULL) {
        memset(q, 0, sizeof *q);
        return sw_errorf(SW_ERR_OOM_HOST, "sim device: out of host memory for a queue of %u "
                         "commands", capacity);
    }
    if (pthread_mutex_init(&q->mu, NULL) != 0)
        goto fail;
    n_ready++;
    if (pthread_cond_init(&q->cv_work, NULL) != 0)
        goto fail;
    n_ready++;
    if (pthread_cond_init(&q->cv_space, NULL) != 0)
        goto fail;
    n_ready++;
    if (pthread_cond_init(&q->cv_done, NULL) != 0)
        goto fail;
    n_ready++;
    if (pthread_create(&q->thread, NULL, queue_main, q) != 0)
        goto fail;
    q->thread_started = true;
    return SW_OK;
fail:
    if (n_ready > 3)
        pthread_cond_destroy(&q->cv_done);
    if (n_ready > 2)
        pthread_cond_destroy(&q->cv_space);
    if (n_ready > 1)
        pthread_cond_destroy(&q->cv_work);
    if (n_ready > 0)
        pthread_mutex_destroy(&q->mu);
    free(q->ring);
    memset(q, 0, sizeof *q);
    return sw_errorf(SW_ERR_OOM_HOST, "sim device: cannot start a queue thread (%d of 5 "
                     "threading primitives created)", n_ready);
}

void sim_queue_stop(sim_queue *q) {
    if (!q->thread_started)
        return;
    pthread_mutex_lock(&q->mu);
    q->stop = true;
    pthread_cond_broadcast(&q->cv_work);
    pthread_cond_broadcast(&q->cv_space);
    pthread_cond_broadcast(&q->cv_done);
    pthread_mutex_unlock(&q->mu);
}

void sim_queue_destroy(sim_queue *q) {
    if (!q->thread_started)
        return;
    sim_queue_stop(q);
    pthread_join(q->thread, NULL);
    pthread_cond_destroy(&q->cv_done);
    pthread_cond_destroy(&q->cv_space);
    pthread_cond_destroy(&q->cv_work);
    pthread_mutex_destroy(&q->mu);
    free(q->ring);
    memset(q, 0, sizeof *q);
}

sw_status sim_queue_push(sim_queue *q, const sim_cmd *cmd, uint64_t *seq) {
    sw_status st = SW_OK;
    pthread_mutex_lock(&q->mu);
    while (!q->stop && q->count == q->capacity)
        pthread_cond_wait(&q->cv_space, &q->mu);
    if (q->stop) {
        st = sw_errorf(SW_ERR_DEVICE, "sim device: work queued while the device is stopping");
        goto done;
    }
    q->ring[(q->head + q->count) % q->capacity] = *cmd;
    q->count++;
    q->submitted++;
    if (seq != NULL)
        *seq = q->submitted;
    pthread_cond_signal(&q->cv_work);
done:
    pthread_mutex_unlock(&q->mu);
    return st;
}

uint64_t sim_queue_mark(sim_queue *q) {
    pthread_mutex_lock(&q->mu);
    uint64_t m = q->submitted;
    pthread_mutex_unlock(&q->mu);
    return m;
}

bool sim_queue_wait(sim_queue *q, uint64_t seq, double *waited) {
    pthread_mutex_lock(&q->mu);
    bool ok = true;
    if (q->done < seq) {
        const double t0 = sw_clock_s();
        while (!q->stop && q->done < seq)
            pthread_cond_wait(&q->cv_done, &q->mu);
        if (waited != NULL)
            *waited += sw_clock_s() - t0;
        ok = q->done >= seq;
    }
    pthread_mutex_unlock(&q->mu);
    return ok;
}
