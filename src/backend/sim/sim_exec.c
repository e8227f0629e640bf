/*
 * sim_exec.c — what the simulated device's queue threads do with each
 * command: ops and blocks on the inner cpu backend (so results are the cpu
 * backend's bits), host-to-device copies paced to the link rate on the
 * copy queue, waits on the other queue, and the race check.
 *
 * Pacing (copy queue): a copy moves in SIM_CHUNK_BYTES chunks; chunk i is
 * due at start + (bytes so far) / rate and the thread sleeps until that
 * absolute time, so late wake-ups are made up by the following chunks and
 * a long copy's average rate is the link rate. The link starts a copy when
 * it is free again or when the copy became runnable (queued, and past the
 * last wait it sat behind), whichever is later — not when this thread got
 * round to it, so wake-up latencies do not add up into a slower link.
 * Copies on the compute queue (activations: kilobytes) are not paced.
 *
 * Race check: a real device would let a copy overwrite a ring slot while a
 * kernel still reads it, or before the kernel that should read its old
 * contents has run, whenever the host forgot an event. Here each weight
 * buffer counts the copy-queue uploads queued into it and landed in it; a
 * command that reads a weight must find exactly the uploads that had been
 * queued when it was submitted, before and after it runs, and no copy may
 * write a buffer while an op reads it (readers/writers counters, checked
 * both ways). Any breach is a sticky SW_ERR_DEVICE naming the buffer: the
 * failure is loud and never depends on luck beyond the timing itself.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "backend/sim/sim_internal.h"
#include "util/error.h"
#include "util/clock.h"

/* Copies move in chunks of this size: the pacing granule, and the point
 * where a stopping device can cancel a long copy. */
#define SIM_CHUNK_BYTES (1u << 20)


void sim_fail(sim_backend *s, sw_status st, const char *fmt, ...) {
    pthread_mutex_lock(&s->mu);
    if (s->sticky == SW_OK) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(s->sticky_msg, sizeof s->sticky_msg, fmt, ap);
        va_end(ap);
        s->sticky = st;
    }
    pthread_mutex_unlock(&s->mu);
}

static bool stopping(sim_backend *s) {
    return atomic_load(&s->stopping);
}

/* Sleeps until monotonic time t; false if the device started stopping. */
static bool pace_until(sim_backend *s, double t) {
    pthread_mutex_lock(&s->pace_mu);
    while (!stopping(s) && sw_clock_s() < t) {
        struct timespec ts;
        ts.tv_sec = (time_t)t;
        ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&s->cv_pace, &s->pace_mu, &ts);
    }
    pthread_mutex_unlock(&s->pace_mu);
    return !stopping(s);
}

/* One chunk into a tracked buffer: refuses to overlap a reader. */
static void write_chunk(sim_backend *s, sim_buf *target, uint8_t *dst, const uint8_t *src,
                        uint64_t n) {
    if (target != NULL) {
        atomic_fetch_add(&target->writers, 1);
        if (atomic_load(&target->readers) > 0)
            sim_fail(s, SW_ERR_DEVICE, "sim device: '%s' was overwritten by a copy while an op "
                     "was still reading it (a buffer was reused before an event recorded "
                     "after its last reader had passed)", target->purpose);
    }
    memcpy(dst, src, (size_t)n);
    if (target != NULL)
        atomic_fetch_sub(&target->writers, 1);
}

/* A host-to-device copy on the copy queue, paced to the link. */
static void copy_paced(sim_backend *s, sim_cmd *c) {
    const double rate = s->link_Bps, t0 = sw_clock_s();
    double ready = c->u.copy.submit_s > s->copy_ready_s ? c->u.copy.submit_s : s->copy_ready_s;
    double due = s->link_free_s > ready ? s->link_free_s : ready;
    uint8_t *dst = c->u.copy.dst;
    const uint8_t *src = c->u.copy.src;
    for (uint64_t done = 0; done < c->u.copy.bytes && !stopping(s);) {
        uint64_t n = c->u.copy.bytes - done;
        n = n < SIM_CHUNK_BYTES ? n : SIM_CHUNK_BYTES;
        write_chunk(s, c->u.copy.target, dst + done, src + done, n);
        done += n;
        if (rate > 0.0) {
            due += (double)n / rate;
            pace_until(s, due);
        }
    }
    if (rate > 0.0)
        s->link_free_s = due;
    if (c->u.copy.target != NULL)
        atomic_fetch_add(&c->u.copy.target->gen_done, 1);
    pthread_mutex_lock(&s->mu);
    s->busy_s += sw_clock_s() - t0;
    s->bytes_to_device += c->u.copy.bytes;
    pthread_mutex_unlock(&s->mu);
}

/* Checks that every weight the command reads holds the uploads it was
 * submitted after, and that no copy is writing it. */
static void check_reads(sim_backend *s, const sim_cmd *c, const char *when) {
    for (uint32_t i = 0; i < c->n_reads; i++) {
        sim_buf *b = c->reads[i];
        uint64_t have = atomic_load(&b->gen_done);
        if (atomic_load(&b->writers) > 0 || have != c->read_gen[i])
            sim_fail(s, SW_ERR_DEVICE, "sim device: '%s' was overwritten %s an op read it "
                     "(it held upload %llu, the op was queued after upload %llu%s): a ring "
                     "slot was refilled before an event recorded after its last reader had "
                     "passed", b->purpose, when, (unsigned long long)have,
                     (unsigned long long)c->read_gen[i],
                     atomic_load(&b->writers) > 0 ? ", and a copy is writing it" : "");
    }
}

static void sleep_s(double t) {
    struct timespec ts = {.tv_sec = (time_t)t, .tv_nsec = (long)((t - (double)(time_t)t) * 1e9)};
    nanosleep(&ts, NULL);
}

/* An op or a block: readers are counted while it runs (and while the
 * injected latency keeps it "running"), so a copy that lands meanwhile is
 * caught from both sides. */
static void run_compute(sim_backend *s, sim_cmd *c) {
    for (uint32_t i = 0; i < c->n_reads; i++)
        atomic_fetch_add(&c->reads[i]->readers, 1);
    check_reads(s, c, "before");
    if (s->op_delay_s > 0)
        sleep_s(s->op_delay_s);
    sw_status st;
    if (c->kind == CMD_OP) {
        st = s->cpu->vt->submit(s->cpu, &c->u.op);
    } else {
        c->u.block.a.shape = &c->u.block.shape;
        st = block_run_ops(s->cpu, &c->u.block.a);
    }
    if (st != SW_OK)
        sim_fail(s, st, "%s", sw_last_error());
    check_reads(s, c, "while");
    for (uint32_t i = 0; i < c->n_reads; i++)
        atomic_fetch_sub(&c->reads[i]->readers, 1);
}

void sim_exec(sim_backend *s, int queue, sim_cmd *c) {
    switch (c->kind) {
    case CMD_WAIT: {
        double waited = 0.0;
        bool ok = sim_queue_wait(&s->queue[c->u.wait.queue], c->u.wait.seq, &waited);
        if (queue == BQ_COPY && waited > 0)
            s->copy_ready_s = sw_clock_s();
        if (ok && queue == BQ_COMPUTE && c->u.wait.queue == BQ_COPY) {
            pthread_mutex_lock(&s->mu);
            s->stall_s += waited;   /* compute waiting for copies */
            pthread_mutex_unlock(&s->mu);
        }
        return;
    }
    case CMD_H2D:
        if (queue == BQ_COPY) {
            copy_paced(s, c);
            return;
        }
        memcpy(c->u.copy.dst, c->u.copy.src, (size_t)c->u.copy.bytes);
        pthread_mutex_lock(&s->mu);
        s->bytes_to_device += c->u.copy.bytes;
        pthread_mutex_unlock(&s->mu);
        return;
    case CMD_D2H:
        memcpy(c->u.copy.dst, c->u.copy.src, (size_t)c->u.copy.bytes);
        return;
    case CMD_OP:
    case CMD_BLOCK:
        run_compute(s, c);
        return;
    }
}
