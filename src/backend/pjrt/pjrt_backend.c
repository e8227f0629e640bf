/*
 * pjrt_backend.c — the backend vtable on a PJRT plugin: device memory as
 * regions of PJRT arrays (pjrt_regions.h), ops and whole blocks as compiled
 * StableHLO programs (pjrt_programs.h), queues as lists of PJRT events.
 *
 * Ordering: PJRT orders each program after the arrays it reads, and every
 * call here looks its arrays up at call time, so work runs after whatever
 * was issued before it that it reads. The two queues only tell the host
 * what to wait for: each queue keeps the completion events of its work in
 * order, event_record marks how far, event_sync waits for those events.
 * queue_wait adds nothing PJRT does not already enforce.
 *
 * Capacity: the plan's budget (the plugin's memory limit where it reports
 * one); allocations are accounted against it exactly as on the sim. The
 * arrays themselves are made lazily, when first written.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/block.h"
#include "backend/pjrt/pjrt_backend.h"
#include "backend/pjrt/pjrt_pinned.h"
#include "backend/pjrt/pjrt_programs.h"
#include "backend/pjrt/pjrt_regions.h"
#include "backend/pjrt/pjrt_timing.h"
#include "util/error.h"

typedef struct queue_item {
    uint64_t index;
    PJRT_Event *ev;
} queue_item;

typedef struct pjrt_queue {
    queue_item *items;         /* pending, oldest first, from `head` */
    size_t head, n, cap;
    uint64_t submitted;        /* items ever pushed */
} pjrt_queue;

struct backend_event {
    int q;
    uint64_t mark;             /* queue items up to this index */
};

typedef struct pjrt_impl {
    pjrt_plugin plugin;
    pjrt_client client;
    pjrt_cache cache;
    pjrt_mem mem;
    pjrt_queue q[BQ_COUNT];
    backend_buf *live;
    uint64_t capacity, in_use, peak, n_allocs, bytes_to_device;
    uint64_t peer_bytes;       /* copied in from another device of the client */
    sw_status sticky;          /* first error of work already reaped */
    char sticky_msg[512];
    pthread_mutex_t mu;        /* alloc/free and the live list (thread-safe entries) */
    pjrt_timing timing;
    pjrt_pinned pinned;        /* streamed weights as pinned_host arrays */
    hlo h;                     /* the program being written (reused) */
    backend_vtable vt;         /* pjrt_vt, less the block entry when per_op */
} pjrt_impl;

static pjrt_impl *impl_of(backend *b) { return b->impl; }

/* ---- queues --------------------------------------------------------------- */

/* The first error of finished work is kept and returned by the next wait
 * or submission (sticky). */
static void keep_error(pjrt_impl *p, sw_status st) {
    if (st != SW_OK && p->sticky == SW_OK) {
        p->sticky = st;
        snprintf(p->sticky_msg, sizeof p->sticky_msg, "%s", sw_last_error());
    }
}

static sw_status sticky(pjrt_impl *p) {
    return p->sticky == SW_OK ? SW_OK : sw_errorf(p->sticky, "%s", p->sticky_msg);
}

/* Destroys the events at the front of Q that have fired, so a queue the
 * host never waits on (the ring's uploads) does not grow. */
static void reap(pjrt_impl *p, pjrt_queue *Q) {
    const PJRT_Api *api = p->plugin.api;
    while (Q->n > 0) {
        PJRT_Event_IsReady_Args r = {.struct_size = PJRT_Event_IsReady_Args_STRUCT_SIZE,
                                     .event = Q->items[Q->head].ev};
        if (api->PJRT_Event_IsReady(&r) != NULL || !r.is_ready)
            return;
        keep_error(p, pjrt_event_finish(&p->client, Q->items[Q->head].ev, "device work"));
        Q->head++;
        Q->n--;
    }
}

static sw_status push(pjrt_impl *p, int q, PJRT_Event *ev) {
    pjrt_queue *Q = &p->q[q];
    reap(p, Q);
    if (Q->head + Q->n == Q->cap) {
        if (Q->head > 0) {
            memmove(Q->items, Q->items + Q->head, Q->n * sizeof *Q->items);
            Q->head = 0;
        } else {
            size_t cap = Q->cap ? Q->cap * 2 : 64;
            queue_item *it = realloc(Q->items, cap * sizeof *it);
            if (it == NULL) {
                (void)pjrt_event_finish(&p->client, ev, "event");
                return sw_errorf(SW_ERR_OOM_HOST, "out of host memory queueing device work");
            }
            Q->items = it;
            Q->cap = cap;
        }
    }
    Q->items[Q->head + Q->n++] = (queue_item){++Q->submitted, ev};
    return SW_OK;
}

/* Waits for queue q's items up to index mark; the first error is returned
 * after every item is waited for (so none is left behind). */
static sw_status drain(pjrt_impl *p, int q, uint64_t mark) {
    pjrt_queue *Q = &p->q[q];
    while (Q->n > 0 && Q->items[Q->head].index <= mark) {
        keep_error(p, pjrt_event_finish(&p->client, Q->items[Q->head].ev, "device work"));
        Q->head++;
        Q->n--;
    }
    return sticky(p);
}

/* ---- memory --------------------------------------------------------------- */

static bool is_live(pjrt_impl *p, const backend_buf *b) {
    for (const backend_buf *x = p->live; x != NULL; x = x->next)
        if (x == b)
            return b->magic == PJRT_BUF_MAGIC;
    return false;
}

/* On a device that reports its memory, the allocation is tried for real
 * (an uninitialized array of the size), so a device that cannot give it
 * refuses here — where the engine describes the failure and the planner
 * plans again — rather than at the first upload. The probe is released at
 * the buffer's first write: arrays are made as writes happen. */
static sw_status probe_alloc(pjrt_impl *p, uint64_t bytes, const char *purpose,
                             PJRT_Buffer **out) {
    const PJRT_Api *api = p->plugin.api;
    *out = NULL;
    if (!p->client.has_stats || !PJRT_HAS(api, PJRT_Client_CreateUninitializedBuffer))
        return SW_OK;
    int64_t dims[1] = {(int64_t)bytes};
    PJRT_Client_CreateUninitializedBuffer_Args a = {
        .struct_size = PJRT_Client_CreateUninitializedBuffer_Args_STRUCT_SIZE,
        .client = p->client.client, .shape_dims = dims, .shape_num_dims = 1,
        .shape_element_type = PJRT_Buffer_Type_U8, .memory = p->mem.memory};
    char what[96];
    snprintf(what, sizeof what, "allocating %s", purpose ? purpose : "a buffer");
    sw_status st = pjrt_status(&p->plugin, api->PJRT_Client_CreateUninitializedBuffer(&a),
                               what, bytes, false);
    *out = a.buffer;
    return st == SW_ERR_UNSUPPORTED ? SW_OK : st;
}

static sw_status add_buffer(pjrt_impl *p, uint64_t bytes, const char *purpose,
                            PJRT_Buffer *reserve, backend_buf **out) {
    backend_buf *buf = calloc(1, sizeof *buf);
    if (buf == NULL) {
        pjrt_buffer_destroy(&p->client, reserve);
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory");
    }
    buf->reserve = reserve;
    buf->magic = PJRT_BUF_MAGIC;
    buf->bytes = bytes;
    snprintf(buf->purpose, sizeof buf->purpose, "%s", purpose ? purpose : "buffer");
    buf->next = p->live;
    p->live = buf;
    p->in_use += bytes;
    p->n_allocs++;
    if (p->in_use > p->peak)
        p->peak = p->in_use;
    *out = buf;
    return SW_OK;
}

static sw_status pj_alloc(backend *b, uint64_t bytes, const char *purpose, backend_buf **out) {
    pjrt_impl *p = impl_of(b);
    PJRT_Buffer *reserve = NULL;
    sw_status st = SW_OK;
    *out = NULL;
    if (bytes == 0)
        return SW_OK;
    pthread_mutex_lock(&p->mu);
    if (bytes > p->capacity - p->in_use)
        st = sw_errorf(SW_ERR_OOM_DEVICE, "device (PJRT %s) out of memory: %s needs %.1f MiB, "
                       "%.1f MiB of %.1f MiB in use", p->client.platform,
                       purpose ? purpose : "a buffer", (double)bytes / 1048576.0,
                       (double)p->in_use / 1048576.0, (double)p->capacity / 1048576.0);
    if (st == SW_OK)
        st = probe_alloc(p, bytes, purpose, &reserve);
    if (st == SW_OK)
        st = add_buffer(p, bytes, purpose, reserve, out);
    pthread_mutex_unlock(&p->mu);
    return st;
}

static void pj_free(backend *b, backend_buf *buf) {
    pjrt_impl *p = impl_of(b);
    pthread_mutex_lock(&p->mu);
    if (buf == NULL || !is_live(p, buf)) {
        pthread_mutex_unlock(&p->mu);
        return;
    }
    for (backend_buf **pp = &p->live; *pp != NULL; pp = &(*pp)->next)
        if (*pp == buf) {
            *pp = buf->next;
            break;
        }
    pjrt_regions_clear(&p->mem, buf);
    p->in_use -= buf->bytes;
    buf->magic = 0;
    free(buf);
    pthread_mutex_unlock(&p->mu);
}

/* Page-locked host memory the plugin may DMA from: registered with the
 * client where the plugin supports that (GPU plugins), else plain; its
 * uploads then go through pinned_host arrays over it (pjrt_pinned.h). */
static sw_status pj_host_alloc_pinned(backend *b, uint64_t bytes, void **out) {
    pjrt_impl *p = impl_of(b);
    size_t n = (size_t)((bytes + 4095) & ~(uint64_t)4095);
    *out = aligned_alloc(4096, n ? n : 4096);
    if (*out == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for %.1f MiB of pinned weights",
                         (double)bytes / 1048576.0);
    if (PJRT_HAS(p->plugin.api, PJRT_Client_DmaMap)) {
        PJRT_Client_DmaMap_Args a = {.struct_size = PJRT_Client_DmaMap_Args_STRUCT_SIZE,
                                     .client = p->client.client, .data = *out, .size = n};
        (void)pjrt_status(&p->plugin, p->plugin.api->PJRT_Client_DmaMap(&a), "dma map", 0,
                          false);   /* UNIMPLEMENTED on the CPU plugin: stays plain */
    }
    return pjrt_pinned_add(&p->pinned, *out, bytes);
}

static void pj_host_free_pinned(backend *b, void *ptr) {
    pjrt_impl *p = impl_of(b);
    if (ptr == NULL)
        return;
    pjrt_pinned_remove(&p->pinned, ptr);
    if (PJRT_HAS(p->plugin.api, PJRT_Client_DmaUnmap)) {
        PJRT_Client_DmaUnmap_Args a = {.struct_size = PJRT_Client_DmaUnmap_Args_STRUCT_SIZE,
                                       .client = p->client.client, .data = ptr};
        (void)pjrt_status(&p->plugin, p->plugin.api->PJRT_Client_DmaUnmap(&a), "dma unmap", 0,
                          false);
    }
    free(ptr);
}

static sw_status check_range(pjrt_impl *p, bmem m, uint64_t bytes, const char *what) {
    if (m.buf == NULL || !is_live(p, m.buf))
        return sw_errorf(SW_ERR_ARG, "PJRT %s: not a live buffer of this backend", what);
    if (m.off > m.buf->bytes || bytes > m.buf->bytes - m.off)
        return sw_errorf(SW_ERR_ARG, "PJRT %s: %llu bytes at %llu overrun '%s' (%llu bytes)",
                         what, (unsigned long long)bytes, (unsigned long long)m.off,
                         m.buf->purpose, (unsigned long long)m.buf->bytes);
    return SW_OK;
}

/* ---- copies --------------------------------------------------------------- */

/* Times an upload by the readiness of the array it makes; returns its tag. */
static uint64_t time_copy(pjrt_impl *p, PJRT_Buffer *nb) {
    PJRT_Event *ready = NULL;
    if (pjrt_buffer_ready(&p->client, nb, &ready) != SW_OK)
        return 0;
    uint64_t tag = pjrt_timing_copy(&p->timing, ready);
    if (push(p, BQ_COPY, ready) != SW_OK)   /* destroyed when the queue drains */
        return 0;
    return tag;
}

static sw_status pj_copy_h2d(backend *b, backend_queue q, bmem dst, const void *src,
                             uint64_t bytes) {
    pjrt_impl *p = impl_of(b);
    PJRT_Buffer *nb = NULL;
    PJRT_Event *done = NULL;
    if (q >= BQ_COUNT || src == NULL)
        return sw_errorf(SW_ERR_ARG, "PJRT copy_h2d: bad queue or source");
    SW_TRY(check_range(p, dst, bytes, "copy to device"));
    if (bytes == 0)
        return SW_OK;
    sw_status st = SW_OK;
    if (!pjrt_pinned_upload(&p->pinned, src, bytes, &nb, &st))
        st = pjrt_buffer_from_host(&p->client, p->mem.memory, src, bytes, &nb, &done);
    if (st != SW_OK)
        return st;
    if (done != NULL)
        st = push(p, q, done);
    uint64_t tag = st == SW_OK && q == BQ_COPY ? time_copy(p, nb) : 0;
    p->bytes_to_device += bytes;
    if (st != SW_OK) {
        pjrt_buffer_destroy(&p->client, nb);
        return st;
    }
    return pjrt_region_write(&p->mem, dst.buf, dst.off, bytes, nb, tag);
}

static sw_status pj_copy_d2h(backend *b, backend_queue q, void *dst, bmem src, uint64_t bytes) {
    pjrt_impl *p = impl_of(b);
    PJRT_Buffer *a = NULL, *exact = NULL;
    PJRT_Event *done = NULL;
    uint64_t have = 0;
    bool owned = false;
    if (q >= BQ_COUNT || dst == NULL)
        return sw_errorf(SW_ERR_ARG, "PJRT copy_d2h: bad queue or destination");
    SW_TRY(check_range(p, src, bytes, "copy from device"));
    if (bytes == 0)
        return SW_OK;
    SW_TRY(pjrt_region_read(&p->mem, src.buf, src.off, bytes, &a, &have, &owned, NULL));
    sw_status st = SW_OK;
    if (have != bytes)   /* the array is longer than asked: copy just the head */
        st = pjrt_region_slice(&p->mem, a, have, 0, bytes, &exact);
    if (st == SW_OK)
        st = pjrt_buffer_to_host(&p->client, exact ? exact : a, dst, bytes, &done);
    if (st == SW_OK)
        st = push(p, q, done);
    pjrt_buffer_destroy(&p->client, exact);
    if (owned)
        pjrt_buffer_destroy(&p->client, a);
    return st;
}

/* A split's stream from the previous stage's device: PJRT copies the array
 * device to device (both stages hold one client, pjrt_plugin.h); the new
 * array becomes the region, so this stage's programs run after it lands. */
static sw_status pj_copy_peer(backend *b, bmem dst, backend *src_b, bmem src, uint64_t bytes) {
    pjrt_impl *p = impl_of(b);
    if (src_b == NULL || src_b->vt->copy_peer != b->vt->copy_peer)
        return sw_errorf(SW_ERR_ARG, "PJRT: a peer copy from another kind of device");
    pjrt_impl *f = impl_of(src_b);
    SW_TRY(check_range(p, dst, bytes, "peer copy to"));
    SW_TRY(check_range(f, src, bytes, "peer copy from"));
    if (bytes == 0)
        return SW_OK;
    PJRT_Buffer *a = NULL, *exact = NULL, *nb = NULL;
    uint64_t have = 0;
    bool owned = false;
    SW_TRY(pjrt_region_read(&f->mem, src.buf, src.off, bytes, &a, &have, &owned, NULL));
    sw_status st = SW_OK;
    if (have != bytes)   /* the array is longer than the stream: just its head */
        st = pjrt_region_slice(&f->mem, a, have, 0, bytes, &exact);
    if (st == SW_OK)
        st = pjrt_buffer_to_device(&f->client, exact ? exact : a, &p->client, &nb);
    pjrt_buffer_destroy(&f->client, exact);
    if (owned)
        pjrt_buffer_destroy(&f->client, a);
    if (st != SW_OK)
        return st;
    pthread_mutex_lock(&p->mu);
    p->peer_bytes += bytes;
    pthread_mutex_unlock(&p->mu);
    return pjrt_region_write(&p->mem, dst.buf, dst.off, bytes, nb, 0);
}

/* ---- programs ------------------------------------------------------------- */

typedef sw_status (*text_fn)(hlo *h, const void *what, const uint64_t *in_bytes,
                             const prog_sig *s);

static sw_status op_text(hlo *h, const void *what, const uint64_t *in_bytes, const prog_sig *s) {
    return prog_op_text(h, what, in_bytes, s);
}

static sw_status block_text(hlo *h, const void *what, const uint64_t *in_bytes,
                            const prog_sig *s) {
    return prog_block_text(h, what, in_bytes, s);
}

/* Runs the program `text` on args; its n_out results into outs (the
 * caller's). Timed against the uploads the inputs came from. */
static sw_status exec_text(pjrt_impl *p, const char *text, PJRT_Buffer *const *args, int n_in,
                           const uint64_t *tags, PJRT_Buffer **outs, int n_out) {
    pjrt_program *prog = NULL;
    PJRT_Event *done = NULL;
    SW_TRY(pjrt_program_get(&p->cache, text, &prog));
    if (prog->n_outputs != (uint32_t)n_out)
        return sw_errorf(SW_ERR_DEVICE, "internal: program has %u outputs, expected %d",
                         prog->n_outputs, n_out);
    SW_TRY(pjrt_execute(&p->cache, prog, args, (size_t)n_in, outs, &done));
    pjrt_timing_program(&p->timing, done, tags, tags ? n_in : 0);
    return push(p, BQ_COMPUTE, done);
}

/* A program's inputs, looked up as regions. */
typedef struct prog_args {
    PJRT_Buffer *a[PROG_MAX_IN];
    bool owned[PROG_MAX_IN];
    uint64_t have[PROG_MAX_IN], tags[PROG_MAX_IN];
    int n;
} prog_args;

static sw_status read_args(pjrt_impl *p, const prog_sig *s, prog_args *in) {
    memset(in, 0, sizeof *in);
    for (int i = 0; i < s->n_in; i++)
        SW_TRY(check_range(p, s->in[i].mem, s->in[i].bytes, "program input"));
    for (int i = 0; i < s->n_out; i++)
        SW_TRY(check_range(p, s->out[i].mem, s->out[i].bytes, "program output"));
    for (; in->n < s->n_in; in->n++) {
        const prog_io *io = &s->in[in->n];
        SW_TRY(pjrt_region_read(&p->mem, io->mem.buf, io->mem.off, io->bytes, &in->a[in->n],
                                &in->have[in->n], &in->owned[in->n], &in->tags[in->n]));
    }
    return SW_OK;
}

static void release_args(pjrt_impl *p, prog_args *in) {
    for (int i = 0; i < in->n; i++)
        if (in->owned[i])
            pjrt_buffer_destroy(&p->client, in->a[i]);
}

/* Makes outs the regions s writes (all taken over, also on error). */
static sw_status write_outs(pjrt_impl *p, const prog_sig *s, PJRT_Buffer **outs, sw_status st) {
    for (int i = 0; i < s->n_out; i++) {
        if (st == SW_OK)
            st = pjrt_region_write(&p->mem, s->out[i].mem.buf, s->out[i].mem.off,
                                   s->out[i].bytes, outs[i], 0);
        else
            pjrt_buffer_destroy(&p->client, outs[i]);
    }
    return st;
}

/* Looks the inputs up, builds (or finds) the program, runs it, and makes
 * its results the regions it writes. */
static sw_status run(pjrt_impl *p, const prog_sig *s, text_fn text, const void *what) {
    PJRT_Buffer *outs[PROG_MAX_OUT] = {0};
    prog_args in;
    hlo *h = &p->h;
    sw_status st = read_args(p, s, &in);
    if (st == SW_OK)
        st = text(h, what, in.have, s);
    if (st == SW_OK)
        st = exec_text(p, h->text, in.a, s->n_in, in.tags, outs, s->n_out);
    st = write_outs(p, s, outs, st);
    release_args(p, &in);
    return st;
}

/* Token counts a block program is compiled for: 1, 2, 4, ... A batch of
 * another size is padded up (positions -1: masked, never cached), so a
 * new prompt length does not compile a new block. */
static uint32_t bucket_of(uint32_t n) {
    uint32_t b = 1;
    while (b < n && b < (1u << 30))
        b <<= 1;
    return b;
}

/* The block on n_tokens padded to Tb: pad its per-token arguments, run
 * the Tb program, keep the first n_tokens rows of its per-token results. */
static sw_status block_padded(pjrt_impl *p, const block_args *a, uint32_t Tb) {
    prog_sig s, sb;
    prog_args in;
    block_args ab = *a;
    ab.n_tokens = Tb;
    SW_TRY(prog_block_sig(a, &s));
    SW_TRY(prog_block_sig(&ab, &sb));
    PJRT_Buffer *pad[PROG_MAX_IN] = {0}, *outs[PROG_MAX_OUT] = {0};
    PJRT_Buffer *args[PROG_MAX_IN], *pad_args[PROG_MAX_IN];
    uint64_t have[PROG_MAX_IN], pad_have[PROG_MAX_IN];
    prog_io pad_io[PROG_MAX_IN];
    int ix[PROG_MAX_IN], np = 0;
    hlo *h = &p->h;
    sw_status st = read_args(p, &s, &in);
    memcpy(args, in.a, sizeof args);
    memcpy(have, in.have, sizeof have);
    for (int i = 0; i < s.n_in; i++) {
        if (s.in[i].rows == MEM_ROWS_NONE)
            continue;
        pad_io[np] = s.in[i];
        pad_args[np] = in.a[i];
        pad_have[np] = in.have[i];
        ix[np++] = i;
    }
    if (st == SW_OK)
        st = prog_pad_text(h, pad_io, pad_have, np, a->n_tokens, Tb);
    if (st == SW_OK)
        st = exec_text(p, h->text, pad_args, np, NULL, pad, np);
    for (int k = 0; k < np; k++) {
        args[ix[k]] = pad[k];
        have[ix[k]] = sb.in[ix[k]].bytes;
    }
    if (st == SW_OK)
        st = prog_block_text(h, &ab, have, &sb);
    if (st == SW_OK)
        st = exec_text(p, h->text, args, sb.n_in, in.tags, outs, sb.n_out);
    for (int i = 0; i < sb.n_out; i++) {   /* the real rows of per-token results */
        PJRT_Buffer *kept = NULL;
        if (st != SW_OK || sb.out[i].rows == MEM_ROWS_NONE)
            continue;
        st = prog_unpad_text(h, sb.out[i].bytes, s.out[i].bytes);
        if (st == SW_OK)
            st = exec_text(p, h->text, &outs[i], 1, NULL, &kept, 1);
        pjrt_buffer_destroy(&p->client, outs[i]);
        outs[i] = kept;
    }
    st = write_outs(p, &s, outs, st);
    for (int k = 0; k < np; k++)
        pjrt_buffer_destroy(&p->client, pad[k]);
    release_args(p, &in);
    return st;
}

static sw_status pj_submit(backend *b, const bop *op) {
    prog_sig s;
    if (op == NULL)
        return sw_errorf(SW_ERR_ARG, "PJRT submit: NULL op");
    SW_TRY(sticky(impl_of(b)));
    SW_TRY(prog_op_sig(op, &s));
    return run(impl_of(b), &s, op_text, op);
}

static sw_status pj_block(backend *b, const block_args *a) {
    prog_sig s;
    if (a == NULL || a->shape == NULL)
        return sw_errorf(SW_ERR_ARG, "PJRT block: NULL arguments");
    SW_TRY(sticky(impl_of(b)));
    uint32_t Tb = bucket_of(a->n_tokens);
    if (Tb != a->n_tokens)
        return block_padded(impl_of(b), a, Tb);
    SW_TRY(prog_block_sig(a, &s));
    return run(impl_of(b), &s, block_text, a);
}

/* ---- events --------------------------------------------------------------- */

static sw_status pj_event_create(backend *b, backend_event **out) {
    (void)b;
    *out = calloc(1, sizeof **out);
    return *out ? SW_OK : sw_errorf(SW_ERR_OOM_HOST, "out of host memory");
}

static void pj_event_destroy(backend *b, backend_event *ev) {
    (void)b;
    free(ev);
}

static sw_status pj_event_record(backend *b, backend_event *ev, backend_queue q) {
    if (ev == NULL || q >= BQ_COUNT)
        return sw_errorf(SW_ERR_ARG, "PJRT event_record: bad event or queue");
    ev->q = (int)q;
    ev->mark = impl_of(b)->q[q].submitted;
    return SW_OK;
}

static sw_status pj_queue_wait(backend *b, backend_queue q, backend_event *ev) {
    (void)b;
    if (ev == NULL || q >= BQ_COUNT)
        return sw_errorf(SW_ERR_ARG, "PJRT queue_wait: bad event or queue");
    return SW_OK;   /* PJRT orders work by the arrays it reads */
}

static sw_status pj_event_sync(backend *b, backend_event *ev) {
    if (ev == NULL)
        return sw_errorf(SW_ERR_ARG, "PJRT event_sync: NULL event");
    return drain(impl_of(b), ev->q, ev->mark);
}

static sw_status pj_sync(backend *b) {
    pjrt_impl *p = impl_of(b);
    sw_status a = drain(p, BQ_COMPUTE, UINT64_MAX);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", sw_last_error());
    sw_status c = drain(p, BQ_COPY, UINT64_MAX);
    return a != SW_OK ? sw_errorf(a, "%s", msg) : c;
}

static void pj_get_stats(backend *b, backend_stats *out) {
    pjrt_impl *p = impl_of(b);
    *out = (backend_stats){.capacity_bytes = p->capacity, .in_use_bytes = p->in_use,
                           .peak_bytes = p->peak, .n_allocs = p->n_allocs,
                           .bytes_to_device = p->bytes_to_device,
                           .peer_bytes = p->peer_bytes};
    pjrt_timing_totals(&p->timing, &out->copy_busy_s, &out->wait_stall_s);
}

static void pj_reset_peak(backend *b) {
    pjrt_impl *p = impl_of(b);
    p->peak = p->in_use;
}

static void pj_destroy(backend *b) {
    if (b == NULL)
        return;
    pjrt_impl *p = impl_of(b);
    (void)pj_sync(b);
    while (p->live != NULL)
        pj_free(b, p->live);
    pjrt_pinned_free(&p->pinned);
    pjrt_cache_free(&p->cache);
    pjrt_client_close(&p->client);
    pjrt_plugin_close(&p->plugin);
    for (int q = 0; q < BQ_COUNT; q++)
        free(p->q[q].items);
    pjrt_timing_destroy(&p->timing);
    hlo_free(&p->h);
    pthread_mutex_destroy(&p->mu);
    free(p);
    free(b);
}

static const backend_vtable pjrt_vt = {
    .name = "pjrt",
    .destroy = pj_destroy,
    .alloc = pj_alloc,
    .free = pj_free,
    .host_alloc_pinned = pj_host_alloc_pinned,
    .host_free_pinned = pj_host_free_pinned,
    .copy_h2d = pj_copy_h2d,
    .copy_d2h = pj_copy_d2h,
    .submit = pj_submit,
    .block = pj_block,
    .event_create = pj_event_create,
    .event_destroy = pj_event_destroy,
    .event_record = pj_event_record,
    .queue_wait = pj_queue_wait,
    .event_sync = pj_event_sync,
    .sync = pj_sync,
    .get_stats = pj_get_stats,
    .reset_peak = pj_reset_peak,
    .copy_peer = pj_copy_peer,
};

sw_status backend_pjrt_create(const backend_params *params, backend **out) {
    char path[PJRT_PATH_CAP];
    *out = NULL;
    pjrt_impl *p = calloc(1, sizeof *p);
    backend *b = calloc(1, sizeof *b);
    if (p == NULL || b == NULL) {
        free(p);
        free(b);
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory");
    }
    p->vt = pjrt_vt;
    if (params->test && params->test->per_op)   /* every op its own program (tests) */
        p->vt.block = NULL;
    b->vt = &p->vt;
    b->impl = p;
    pthread_mutex_init(&p->mu, NULL);
    sw_status st = pjrt_plugin_find(path, sizeof path);
    if (st == SW_OK)
        st = pjrt_plugin_open(path, &p->plugin);
    if (st == SW_OK &&
        (st = pjrt_client_open_device(&p->plugin, params->device_index, &p->client)) != SW_OK)
        pjrt_plugin_close(&p->plugin);
    if (st != SW_OK) {
        pthread_mutex_destroy(&p->mu);
        free(p);
        free(b);
        return st;
    }
    pjrt_timing_init(&p->timing, p->plugin.api);
    pjrt_pinned_init(&p->pinned, &p->client);
    p->cache.client = &p->client;
    p->mem = (pjrt_mem){&p->client, &p->cache, p->client.device_memory};
    p->capacity = params->capacity_bytes;
    if (p->client.has_stats && (p->capacity == 0 || p->client.bytes_limit < p->capacity))
        p->capacity = p->client.bytes_limit;
    if (p->capacity == 0) {
        pj_destroy(b);
        return sw_errorf(SW_ERR_ARG, "the PJRT %s plugin does not report its memory: pass "
                         "--device-mem SIZE", p->client.platform);
    }
    *out = b;
    return SW_OK;
}

sw_status backend_pjrt_probe(uint64_t *bytes_limit, char *platform, size_t cap) {
    char path[PJRT_PATH_CAP];
    pjrt_plugin pl;
    pjrt_client c;
    SW_TRY(pjrt_plugin_find(path, sizeof path));
    SW_TRY(pjrt_plugin_open(path, &pl));
    sw_status st = pjrt_client_open(&pl, &c);
    if (st == SW_OK) {
        *bytes_limit = c.has_stats ? c.bytes_limit - c.bytes_in_use : 0;
        if (c.device_kind[0] && strcmp(c.device_kind, c.platform))
            snprintf(platform, cap, "%s %s", c.platform, c.device_kind);
        else
            snprintf(platform, cap, "%s", c.platform);
        pjrt_client_close(&c);
    }
    pjrt_plugin_close(&pl);
    return st;
}
