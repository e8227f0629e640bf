/*
 * pjrt_pinned.h — streamed weights held in the plugin's `pinned_host`
 * memory: the engine's pinned allocation (host_alloc_pinned) is where it
 * packs the streamed layers; each byte range it later uploads becomes, on
 * first use, a PJRT array in the pinned_host memory kind over those very
 * bytes (zero-copy where the plugin allows, else one copy), and every
 * upload after that is a device-side PJRT_Buffer_CopyToMemory from it —
 * PJRT events order it, the host never waits.
 *
 * Plugins without a pinned_host memory, or without CopyToMemory, keep the
 * plain upload path (BufferFromHostBuffer from the same page-locked bytes).
 */
#ifndef SW_BACKEND_PJRT_PINNED_H
#define SW_BACKEND_PJRT_PINNED_H

#include <stdbool.h>

#include "backend/pjrt/pjrt_exec.h"

typedef struct pjrt_pinned_array {
    const uint8_t *src;
    uint64_t bytes;
    PJRT_Buffer *arr;              /* in pinned_host memory */
    PJRT_Event *released;          /* fires once arr let go of the bytes */
} pjrt_pinned_array;

typedef struct pjrt_pinned_block {
    uint8_t *ptr;
    uint64_t bytes;
} pjrt_pinned_block;

#define PJRT_PINNED_BLOCKS 8

typedef struct pjrt_pinned {
    pjrt_client *client;           /* borrowed */
    bool usable;                   /* pinned_host memory and CopyToMemory exist */
    pjrt_pinned_block blocks[PJRT_PINNED_BLOCKS];
    pjrt_pinned_array *arrays;
    size_t n_arrays, cap_arrays;
    uint64_t n_device_copies;      /* uploads served from pinned_host arrays */
} pjrt_pinned;

void pjrt_pinned_init(pjrt_pinned *p, pjrt_client *c);

/* Remembers [ptr, ptr+bytes) as pinned memory the engine will upload from. */
sw_status pjrt_pinned_add(pjrt_pinned *p, uint8_t *ptr, uint64_t bytes);
/* Forgets it, destroying the arrays over it (after their copies ran). */
void pjrt_pinned_remove(pjrt_pinned *p, const uint8_t *ptr);

/* When src lies in pinned memory and the plugin can: a new device array
 * with those bytes, copied from the pinned_host array over them (*out,
 * true returned). False: use the plain upload. */
bool pjrt_pinned_upload(pjrt_pinned *p, const void *src, uint64_t bytes, PJRT_Buffer **out,
                        sw_status *st);

void pjrt_pinned_free(pjrt_pinned *p);

#endif
