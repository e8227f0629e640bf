/*
 * sim_copy.c — the simulated device's copy engine: one thread working
 * through a fixed FIFO of host-to-device copies, paced to the link rate.
 *
 * Pacing: a copy moves in SIM_CHUNK_BYTES chunks; chunk i is due at
 * start + (bytes so far) / rate and the thread sleeps until that absolute
 * time (CLOCK_MONOTONIC), so late wake-ups are made up by the following
 * chunks and a long copy's average rate is the link rate. The link is
 * modelled as free again when the last chunk is due; a copy starts on it
 * then or when it was queued, whichever is later (not when this thread got
 * round to it). Copies land in queue order; an event records the
 * sequence number of its copy (see sim_event). Nothing is allocated per
 * copy: copy_async blocks while all SIM_QUEUE_LEN slots are taken.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, pthread_condattr_setclock */

#include <string.h>
#include <time.h>

#include "backend/sim/sim_internal.h"
#include "util/error.h"

double sim_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static struct timespec timespec_at(double t) {
    struct timespec ts;
    ts.tv_sec = (time_t)t;
    ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

/* Sleeps until monotonic time t, with mu held (released while asleep).
 * Returns false if a stop came first. */
static bool pace_until(sim_copier *c, double t) {
    while (!c->stop) {
        if (sim_now_s() >= t)
            return true;
        struct timespec ts = timespec_at(t);
        pthread_cond_timedwait(&c->cv_pace, &c->mu, &ts);
    }
    return false;
}

/* Performs one copy chunk by chunk; mu is held on entry and exit but not
 * during a memcpy. Returns false if cancelled by a stop. */
static bool copy_paced(sim_copier *c, const sim_copy_req *r) {
    const double rate = c->link_bytes_per_s;
    /* The link starts this copy when it is free or when the copy was
     * queued, whichever is later — not when this thread got round to it, so
     * late wake-ups from pacing sleeps do not add up into a slower link. */
    double due = c->link_free_s > r->submit_s ? c->link_free_s : r->submit_s;
    for (uint64_t done = 0; done < r->bytes;) {
        uint64_t n = r->bytes - done < SIM_CHUNK_BYTES ? r->bytes - done : SIM_CHUNK_BYTES;
        pthread_mutex_unlock(&c->mu);
        memcpy((uint8_t *)r->dst + done, (const uint8_t *)r->src + done, (size_t)n);
        pthread_mutex_lock(&c->mu);
        done += n;
        if (c->stop)
            return false;
        if (rate > 0.0) {
            due += (double)n / rate;
            if (!pace_until(c, due))
                return false;
        }
    }
    c->link_free_s = due;
    return true;
}

static void *copier_main(void *arg) {
    sim_copier *c = arg;
    pthread_mutex_lock(&c->mu);
    for (;;) {
        while (!c->stop && c->count == 0)
            pthread_cond_wait(&c->cv_work, &c->mu);
        if (c->stop)
            break;
        /* Take the request out now so its slot frees early: the queue holds
         * SIM_QUEUE_LEN waiting copies plus the one in flight. */
        sim_copy_req r = c->queue[c->head];
        c->head = (c->head + 1) % SIM_QUEUE_LEN;
        c->count--;
        pthread_cond_signal(&c->cv_space);
        const double t0 = sim_now_s();
        if (!copy_paced(c, &r))
            break;
        c->busy_s += sim_now_s() - t0;
        c->bytes_to_device += r.bytes;
        c->done_seq = r.seq;
        pthread_cond_broadcast(&c->cv_done);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

sw_status sim_copier_init(sim_copier *c, double link_bytes_per_s) {
    pthread_condattr_t attr;
    int n_ready = 0; /* primitives created so far, in the order below */
    memset(c, 0, sizeof *c);
    if (!(link_bytes_per_s >= 0.0))
        return sw_errorf(SW_ERR_ARG, "sim device: link_bytes_per_s must be >= 0");
    c->link_bytes_per_s = link_bytes_per_s;
    if (pthread_condattr_init(&attr) != 0)
        goto fail;
    bool clock_ok = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) == 0;
    if (clock_ok && pthread_cond_init(&c->cv_pace, &attr) == 0)
        n_ready++;
    pthread_condattr_destroy(&attr);
    if (n_ready < 1 || pthread_mutex_init(&c->mu, NULL) != 0)
        goto fail;
    n_ready++;
    if (pthread_cond_init(&c->cv_work, NULL) != 0)
        goto fail;
    n_ready++;
    if (pthread_cond_init(&c->cv_space, NULL) != 0)
        goto fail;
    n_ready++;
    if (pthread_cond_init(&c->cv_done, NULL) != 0)
        goto fail;
    n_ready++;
    if (pthread_create(&c->thread, NULL, copier_main, c) != 0)
        goto fail;
    c->thread_started = true;
    return SW_OK;
fail:
    if (n_ready > 4)
        pthread_cond_destroy(&c->cv_done);
    if (n_ready > 3)
        pthread_cond_destroy(&c->cv_space);
    if (n_ready > 2)
        pthread_cond_destroy(&c->cv_work);
    if (n_ready > 1)
        pthread_mutex_destroy(&c->mu);
    if (n_ready > 0)
        pthread_cond_destroy(&c->cv_pace);
    memset(c, 0, sizeof *c);
    return sw_errorf(SW_ERR_OOM_HOST, "sim device: cannot start its copy thread "
                     "(%d of 6 threading primitives created)", n_ready);
}

void sim_copier_destroy(sim_copier *c) {
    if (!c->thread_started)
        return;
    pthread_mutex_lock(&c->mu);
    c->stop = true;
    pthread_cond_broadcast(&c->cv_work);
    pthread_cond_broadcast(&c->cv_space);
    pthread_cond_broadcast(&c->cv_done);
    pthread_cond_broadcast(&c->cv_pace);
    pthread_mutex_unlock(&c->mu);
    pthread_join(c->thread, NULL);
    pthread_cond_destroy(&c->cv_done);
    pthread_cond_destroy(&c->cv_space);
    pthread_cond_destroy(&c->cv_work);
    pthread_cond_destroy(&c->cv_pace);
    pthread_mutex_destroy(&c->mu);
    memset(c, 0, sizeof *c);
}

sw_status sim_copier_submit(sim_copier *c, void *dst, const void *src, uint64_t bytes,
                            sim_event *ev) {
    sw_status st = SW_OK;
    pthread_mutex_lock(&c->mu);
    while (!c->stop && c->count == SIM_QUEUE_LEN)
        pthread_cond_wait(&c->cv_space, &c->mu);
    if (c->stop) {
        st = sw_errorf(SW_ERR_DEVICE, "sim device: copy queued while the device is being "
                       "destroyed");
        goto done;
    }
    uint32_t tail = (c->head + c->count) % SIM_QUEUE_LEN;
    c->queue[tail] = (sim_copy_req){.dst = dst, .src = src, .bytes = bytes,
                                    .submit_s = sim_now_s(),
                                    .seq = ++c->last_seq};
    c->count++;
    if (ev != NULL)
        ev->seq = c->last_seq;
    pthread_cond_signal(&c->cv_work);
done:
    pthread_mutex_unlock(&c->mu);
    return st;
}

sw_status sim_copier_wait(sim_copier *c, const sim_event *ev) {
    sw_status st = SW_OK;
    pthread_mutex_lock(&c->mu);
    if (c->done_seq < ev->seq) {
        const double t0 = sim_now_s();
        while (!c->stop && c->done_seq < ev->seq)
            pthread_cond_wait(&c->cv_done, &c->mu);
        c->stall_s += sim_now_s() - t0;
        if (c->done_seq < ev->seq)
            st = sw_errorf(SW_ERR_DEVICE, "sim device: waited for a copy that was cancelled "
                           "because the device is being destroyed");
    }
    pthread_mutex_unlock(&c->mu);
    return st;
}

void sim_copier_stats(sim_copier *c, uint64_t *bytes_to_device, double *busy_s,
                      double *stall_s) {
    pthread_mutex_lock(&c->mu);
    *bytes_to_device = c->bytes_to_device;
    *busy_s = c->busy_s;
    *stall_s = c->stall_s;
    pthread_mutex_unlock(&c->mu);
}

void sim_copier_count(sim_copier *c, uint64_t bytes) {
    pthread_mutex_lock(&c->mu);
    c->bytes_to_device += bytes;
    pthread_mutex_unlock(&c->mu);
}
