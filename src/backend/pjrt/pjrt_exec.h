/*
 * pjrt_exec.h — the PJRT calls the backend makes, each a function that
 * returns sw_status: StableHLO text compiled into a cached executable,
 * executions, buffers from host bytes and back, events.
 *
 * Every device array Spillway keeps is a flat `ui8` buffer (a byte range
 * of one of our allocations, see pjrt_regions.h); programs bitcast inside.
 */
#ifndef SW_BACKEND_PJRT_EXEC_H
#define SW_BACKEND_PJRT_EXEC_H

#include "backend/pjrt/pjrt_plugin.h"

/* Compiled programs by their text, for the life of the backend. */
typedef struct pjrt_program {
    char *text;                       /* owned; the cache key */
    uint64_t hash;
    PJRT_LoadedExecutable *exe;
    uint32_t n_outputs;
    struct pjrt_program *next;
} pjrt_program;

typedef struct pjrt_cache {
    pjrt_client *client;              /* borrowed */
    pjrt_program *bucket[256];
} pjrt_cache;

/* The program for `text`, compiled on first use. */
sw_status pjrt_program_get(pjrt_cache *c, const char *text, pjrt_program **out);
void pjrt_cache_free(pjrt_cache *c);

/* Runs prog on the client's device. args: n_args buffers (borrowed);
 * outs: prog->n_outputs new buffers (owned by the caller). *done (may be
 * NULL) gets the execution's completion event (owned by the caller). */
sw_status pjrt_execute(pjrt_cache *c, pjrt_program *prog, PJRT_Buffer *const *args,
                       size_t n_args, PJRT_Buffer **outs, PJRT_Event **done);

/* A ui8[bytes] buffer in `memory` from host bytes that must stay valid
 * until *done fires (the caller owns both results). */
sw_status pjrt_buffer_from_host(pjrt_client *c, PJRT_Memory *memory, const void *src,
                                uint64_t bytes, PJRT_Buffer **out, PJRT_Event **done);

/* The same; with zero_copy the array may use the host bytes in place, and
 * *done fires only once the array is destroyed (the bytes must live and
 * stay unchanged until then). */
sw_status pjrt_buffer_over_host(pjrt_client *c, PJRT_Memory *memory, const void *src,
                                uint64_t bytes, bool zero_copy, PJRT_Buffer **out,
                                PJRT_Event **done);

/* Copies all of src (bytes long) into dst; *done fires when dst is written. */
sw_status pjrt_buffer_to_host(pjrt_client *c, PJRT_Buffer *src, void *dst, uint64_t bytes,
                              PJRT_Event **done);

/* A copy of src (an array of c's client) on another device of that client,
 * `to` (in its device memory where the plugin copies to a memory, else on
 * the device): PJRT's own transfer, ordered after src is ready; *out is
 * the caller's and is ready when the copy is done. */
sw_status pjrt_buffer_to_device(pjrt_client *c, PJRT_Buffer *src, const pjrt_client *to,
                                PJRT_Buffer **out);

void pjrt_buffer_destroy(pjrt_client *c, PJRT_Buffer *b);

/* Blocks until ev fires and destroys it; returns its error. NULL is SW_OK. */
sw_status pjrt_event_finish(pjrt_client *c, PJRT_Event *ev, const char *what);

/* The event that fires when b is ready (owned by the caller). */
sw_status pjrt_buffer_ready(pjrt_client *c, PJRT_Buffer *b, PJRT_Event **out);

#endif
