/*
 * pjrt_regions.c — regions of a PJRT buffer (pjrt_regions.h).
 */
#include <stdlib.h>
#include <string.h>

#include "backend/pjrt/hlo.h"
#include "backend/pjrt/pjrt_regions.h"
#include "util/error.h"

/* A ui8[bytes] array of zeros: where nothing was written yet (a KV cache
 * before its first append). Waits for the copy, so the zeros may go. */
static sw_status zeros(pjrt_mem *m, uint64_t bytes, PJRT_Buffer **out) {
    void *z = calloc(1, bytes ? bytes : 1);
    PJRT_Event *done = NULL;
    if (z == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory (%.1f MiB of zeros)",
                         (double)bytes / 1048576.0);
    sw_status st = pjrt_buffer_from_host(m->client, m->memory, z, bytes, out, &done);
    if (st == SW_OK)
        st = pjrt_event_finish(m->client, done, "zeroing device memory");
    free(z);
    return st;
}

sw_status pjrt_region_slice(pjrt_mem *m, PJRT_Buffer *a, uint64_t have, uint64_t start,
                       uint64_t bytes, PJRT_Buffer **out) {
    hlo *h = calloc(1, sizeof *h);
    if (h == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory writing a program");
    int64_t s = (int64_t)start, l = (int64_t)(start + bytes);
    sw_status st = hlo_begin(h, 1, &have);
    int v = hlo_slice(h, hlo_arg(0), &s, &l);
    pjrt_program *p = NULL;
    if (st == SW_OK && (st = hlo_finish(h, &v, 1)) == SW_OK &&
        (st = pjrt_program_get(m->cache, h->text, &p)) == SW_OK)
        st = pjrt_execute(m->cache, p, &a, 1, out, NULL);
    hlo_free(h);
    free(h);
    return st;
}

static sw_status insert(backend_buf *b, uint64_t off, uint64_t bytes, PJRT_Buffer *nb,
                        uint64_t tag) {
    if (b->n == b->cap) {
        uint32_t cap = b->cap ? b->cap * 2 : 8;
        pjrt_region *r = realloc(b->r, cap * sizeof *r);
        if (r == NULL)
            return sw_errorf(SW_ERR_OOM_HOST, "out of host memory tracking device arrays");
        b->r = r;
        b->cap = cap;
    }
    b->r[b->n++] = (pjrt_region){off, bytes, nb, tag};
    return SW_OK;
}

static sw_status straddle(const backend_buf *b, uint64_t off, uint64_t bytes, const char *op) {
    return sw_errorf(SW_ERR_UNSUPPORTED, "internal: PJRT %s of %llu bytes at %llu of '%s' "
                     "straddles arrays written separately", op, (unsigned long long)bytes,
                     (unsigned long long)off, b->purpose);
}

sw_status pjrt_region_read(pjrt_mem *m, backend_buf *b, uint64_t off, uint64_t bytes,
                           PJRT_Buffer **out, uint64_t *have, bool *owned, uint64_t *tag) {
    *owned = false;
    if (tag != NULL)
        *tag = 0;
    for (uint32_t i = 0; i < b->n; i++) {
        const pjrt_region *r = &b->r[i];
        if (tag != NULL && r->off <= off && off < r->off + r->bytes)
            *tag = r->upload_tag;
        if (r->off == off && r->bytes >= bytes) {
            *out = r->buf;
            *have = r->bytes;
            return SW_OK;
        }
        if (r->off <= off && off + bytes <= r->off + r->bytes) {
            *owned = true;
            *have = bytes;
            return pjrt_region_slice(m, r->buf, r->bytes, off - r->off, bytes, out);
        }
        if (r->off < off + bytes && off < r->off + r->bytes)
            return straddle(b, off, bytes, "read");
    }
    PJRT_Buffer *z = NULL;
    SW_TRY(zeros(m, bytes, &z));
    sw_status st = insert(b, off, bytes, z, 0);
    if (st != SW_OK) {
        pjrt_buffer_destroy(m->client, z);
        return st;
    }
    *out = z;
    *have = bytes;
    return SW_OK;
}

/* Region i, which a write of [off, off + bytes) covers only in part (not
 * from its start), keeps the bytes outside the write as regions of their
 * own, sliced on the device: a ring slot that held a wider layer of Gemma
 * 4 before this one is overwritten tensor by tensor at other offsets. */
static sw_status keep_outside(pjrt_mem *m, backend_buf *b, uint32_t i, uint64_t off,
                              uint64_t bytes) {
    const pjrt_region r = b->r[i];
    const uint64_t end = off + bytes, r_end = r.off + r.bytes;
    PJRT_Buffer *head = NULL, *tail = NULL;
    sw_status st = SW_OK;
    if (r.off < off)
        st = pjrt_region_slice(m, r.buf, r.bytes, 0, off - r.off, &head);
    if (st == SW_OK && r_end > end)
        st = pjrt_region_slice(m, r.buf, r.bytes, end - r.off, r_end - end, &tail);
    if (st != SW_OK) {
        pjrt_buffer_destroy(m->client, head);
        return st;
    }
    pjrt_buffer_destroy(m->client, r.buf);   /* freed once its readers ran */
    b->r[i] = b->r[--b->n];
    if (head != NULL && (st = insert(b, r.off, off - r.off, head, r.upload_tag)) != SW_OK) {
        pjrt_buffer_destroy(m->client, head);
        head = NULL;
    }
    if (tail != NULL && (st != SW_OK || (st = insert(b, end, r_end - end, tail, r.upload_tag))))
        pjrt_buffer_destroy(m->client, tail);
    return st;
}

sw_status pjrt_region_write(pjrt_mem *m, backend_buf *b, uint64_t off, uint64_t bytes,
                            PJRT_Buffer *nb, uint64_t tag) {
    pjrt_buffer_destroy(m->client, b->reserve);   /* its bytes now go to real arrays */
    b->reserve = NULL;
    for (uint32_t i = 0; i < b->n;) {
        pjrt_region *r = &b->r[i];
        bool overlaps = r->off < off + bytes && off < r->off + r->bytes;
        if (!overlaps) {
            i++;
            continue;
        }
        if (r->off != off && !(off <= r->off && r->off + r->bytes <= off + bytes)) {
            sw_status st = keep_outside(m, b, i, off, bytes); /* the parts go to the end */
            if (st != SW_OK) {
                pjrt_buffer_destroy(m->client, nb);
                return st;
            }
            continue;
        }
        pjrt_buffer_destroy(m->client, r->buf);   /* freed once its readers ran */
        *r = b->r[--b->n];
    }
    sw_status st = insert(b, off, bytes, nb, tag);
    if (st != SW_OK)
        pjrt_buffer_destroy(m->client, nb);
    return st;
}

void pjrt_regions_clear(pjrt_mem *m, backend_buf *b) {
    pjrt_buffer_destroy(m->client, b->reserve);
    b->reserve = NULL;
    for (uint32_t i = 0; i < b->n; i++)
        pjrt_buffer_destroy(m->client, b->r[i].buf);
    free(b->r);
    b->r = NULL;
    b->n = b->cap = 0;
}
