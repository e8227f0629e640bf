/*
 * pjrt_timing.c — upload and program completion times (pjrt_timing.h).
 * Callbacks run on the plugin's threads; everything they touch is under
 * the mutex, and the records they point at live as long as the backend.
 * Uploads are taken to run one after another (one link), and programs too
 * (one device), which is how the busy and wait sums are formed.
 */
#define _POSIX_C_SOURCE 200809L
#include <string.h>
#include <time.h>

#include "backend/pjrt/pjrt_timing.h"
#include "util/clock.h"


void pjrt_timing_init(pjrt_timing *t, const PJRT_Api *api) {
    memset(t, 0, sizeof *t);
    t->api = api;
    pthread_mutex_init(&t->mu, NULL);
}

void pjrt_timing_destroy(pjrt_timing *t) {
    pthread_mutex_destroy(&t->mu);
}

static double max2(double a, double b) { return a > b ? a : b; }

/* The finish time of upload `tag`, 0 if unknown (not done, or reused). */
static double copy_done(const pjrt_timing *t, uint64_t tag) {
    const pjrt_timing_record *r = &t->rec[tag % PJRT_TIMING_RECORDS];
    return tag != 0 && r->tag == tag && r->is_copy ? r->done_s : 0;
}

static void on_done(PJRT_Error *err, void *user) {
    pjrt_timing_record *r = user;
    pjrt_timing *t = r->owner;
    double done = sw_clock_s();
    if (err != NULL) {   /* the queue's own wait reports the error */
        PJRT_Error_Destroy_Args d = {.struct_size = PJRT_Error_Destroy_Args_STRUCT_SIZE,
                                     .error = err};
        t->api->PJRT_Error_Destroy(&d);
    }
    pthread_mutex_lock(&t->mu);
    r->done_s = done;
    if (r->is_copy) {
        double start = max2(r->submit_s, t->copy_last_done_s);
        t->copy_busy_s += done > start ? done - start : 0;
        t->copy_last_done_s = max2(t->copy_last_done_s, done);
    } else {
        double could_start = max2(r->submit_s, t->compute_last_done_s), dep = 0;
        for (int i = 0; i < r->n_deps; i++)
            dep = max2(dep, copy_done(t, r->deps[i]));
        if (dep > could_start)
            t->stall_s += (dep < done ? dep : done) - could_start;
        t->compute_last_done_s = max2(t->compute_last_done_s, done);
    }
    pthread_mutex_unlock(&t->mu);
}

/* Takes the next record; its tag is returned (0 if the event cannot call
 * back). */
static uint64_t start(pjrt_timing *t, PJRT_Event *ev, int is_copy, const uint64_t *deps,
                      int n) {
    if (ev == NULL || !PJRT_HAS(t->api, PJRT_Event_OnReady))
        return 0;
    pthread_mutex_lock(&t->mu);
    uint64_t tag = ++t->next_tag;
    pjrt_timing_record *r = &t->rec[tag % PJRT_TIMING_RECORDS];
    *r = (pjrt_timing_record){.tag = tag, .submit_s = sw_clock_s(), .is_copy = is_copy,
                              .owner = t};
    for (int i = 0; i < n && r->n_deps < PJRT_TIMING_DEPS; i++)
        if (deps[i] != 0)
            r->deps[r->n_deps++] = deps[i];
    pthread_mutex_unlock(&t->mu);
    PJRT_Event_OnReady_Args a = {.struct_size = PJRT_Event_OnReady_Args_STRUCT_SIZE,
                                 .event = ev, .callback = on_done, .user_arg = r};
    PJRT_Error *err = t->api->PJRT_Event_OnReady(&a);
    if (err != NULL) {
        PJRT_Error_Destroy_Args d = {.struct_size = PJRT_Error_Destroy_Args_STRUCT_SIZE,
                                     .error = err};
        t->api->PJRT_Error_Destroy(&d);
        return 0;
    }
    return tag;
}

uint64_t pjrt_timing_copy(pjrt_timing *t, PJRT_Event *ready) {
    return start(t, ready, 1, NULL, 0);
}

void pjrt_timing_program(pjrt_timing *t, PJRT_Event *done, const uint64_t *deps, int n) {
    (void)start(t, done, 0, deps, n);
}

void pjrt_timing_totals(pjrt_timing *t, double *copy_busy_s, double *stall_s) {
    pthread_mutex_lock(&t->mu);
    *copy_busy_s = t->copy_busy_s;
    *stall_s = t->stall_s;
    pthread_mutex_unlock(&t->mu);
}
