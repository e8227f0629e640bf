/*
 * pjrt_regions.h — Spillway's device memory model (bytes at offsets in a
 * buffer) over PJRT's (immutable arrays, each made by a copy or a program).
 *
 * A backend_buf is an accounted byte range holding regions: a region is
 * one PJRT array that holds bytes [off, off + bytes) of it. Copies and
 * programs replace regions; what a call reads is looked up when it is
 * called, in host order. Because every write makes a new array and PJRT
 * orders each program after the arrays it reads are ready, work sees
 * exactly the writes issued before it, and a write never lands under a
 * reader still running (the ring's discipline holds by construction; the
 * old array is freed once its readers are done).
 *
 * Rules: a write replaces every region it covers or that starts where it
 * starts (the bytes past the write are then undefined, as after any
 * write of a shorter array); a region it covers only in part from
 * elsewhere keeps its bytes outside the write (device slices); a read
 * takes the region starting at its offset if it holds at least the bytes
 * read, slices a region that contains it, and makes zeros where nothing
 * was written. A read straddling two regions is an internal error
 * (SW_ERR_UNSUPPORTED), never silent.
 */
#ifndef SW_BACKEND_PJRT_REGIONS_H
#define SW_BACKEND_PJRT_REGIONS_H

#include "backend/backend.h"
#include "backend/pjrt/pjrt_exec.h"

#define PJRT_BUF_MAGIC 0x504a5254u   /* "PJRT" */

typedef struct pjrt_region {
    uint64_t off, bytes;
    PJRT_Buffer *buf;
    uint64_t upload_tag;           /* pjrt_timing tag of the upload that made it, or 0 */
} pjrt_region;

struct backend_buf {
    uint32_t magic;
    uint64_t bytes;                /* accounted size */
    char purpose[48];
    pjrt_region *r;
    uint32_t n, cap;
    PJRT_Buffer *reserve;          /* the allocation probe, until the first write */
    struct backend_buf *next;      /* the backend's live list */
};

/* What region lookups need from the backend. */
typedef struct pjrt_mem {
    pjrt_client *client;
    pjrt_cache *cache;
    PJRT_Memory *memory;           /* where arrays are made */
} pjrt_mem;

/* The array holding [off, off+bytes) of b: *out borrowed (the region's),
 * or, when *owned is set, made for this read (the caller destroys it
 * after use). *have: bytes *out holds (>= bytes); *tag (may be NULL): the
 * upload tag of the region read. */
sw_status pjrt_region_read(pjrt_mem *m, backend_buf *b, uint64_t off, uint64_t bytes,
                           PJRT_Buffer **out, uint64_t *have, bool *owned, uint64_t *tag);

/* nb (bytes long, taken over) now holds [off, off+bytes) of b; tag: the
 * upload that made it (0 for a program's result). */
sw_status pjrt_region_write(pjrt_mem *m, backend_buf *b, uint64_t off, uint64_t bytes,
                            PJRT_Buffer *nb, uint64_t tag);

/* Bytes [start, start+bytes) of array a (have bytes long), as a new array
 * (the caller's). */
sw_status pjrt_region_slice(pjrt_mem *m, PJRT_Buffer *a, uint64_t have, uint64_t start,
                            uint64_t bytes, PJRT_Buffer **out);

/* Destroys every region's array. */
void pjrt_regions_clear(pjrt_mem *m, backend_buf *b);

#endif
