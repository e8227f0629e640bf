/*
 * pjrt_timing.h — when uploads and programs finish, from PJRT's own event
 * callbacks, summed into what --report shows: time the link was busy, and
 * time the compute side waited for an upload (an upload that finished after
 * the previous program and after the program's submission held it up).
 *
 * An upload gets a tag; the arrays it made carry the tag, so a program
 * knows which uploads it read. Records live in a fixed ring: a tag whose
 * record was reused is ignored (counted as no wait), never misread.
 */
#ifndef SW_BACKEND_PJRT_TIMING_H
#define SW_BACKEND_PJRT_TIMING_H

#include <pthread.h>
#include <stdint.h>

#include "backend/pjrt/pjrt_plugin.h"

#define PJRT_TIMING_RECORDS 4096
#define PJRT_TIMING_DEPS 24

typedef struct pjrt_timing_record {
    uint64_t tag;
    double submit_s, done_s;             /* done_s 0 until the callback */
    uint64_t deps[PJRT_TIMING_DEPS];     /* programs: the upload tags read */
    int n_deps;
    int is_copy;
    struct pjrt_timing *owner;
} pjrt_timing_record;

typedef struct pjrt_timing {
    const PJRT_Api *api;
    pthread_mutex_t mu;
    pjrt_timing_record rec[PJRT_TIMING_RECORDS];
    uint64_t next_tag;
    double copy_busy_s, copy_last_done_s;
    double compute_last_done_s, stall_s;
} pjrt_timing;

void pjrt_timing_init(pjrt_timing *t, const PJRT_Api *api);
void pjrt_timing_destroy(pjrt_timing *t);

/* An upload whose array becomes ready with `ready` (borrowed: the caller
 * still destroys it). Returns its tag, 0 when it cannot be timed. */
uint64_t pjrt_timing_copy(pjrt_timing *t, PJRT_Event *ready);

/* A program that finishes with `done` (borrowed), having read the uploads
 * tagged deps[0..n) (0 entries ignored). */
void pjrt_timing_program(pjrt_timing *t, PJRT_Event *done, const uint64_t *deps, int n);

/* Totals so far. */
void pjrt_timing_totals(pjrt_timing *t, double *copy_busy_s, double *stall_s);

#endif
