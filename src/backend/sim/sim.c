/*
 * sim.c — a simulated accelerator behind the backend interface, for
 * machines without one. Device memory is an arena with a hard capacity
 * (sim_pool.c); the compute queue and the copy queue are threads of their
 * own (sim_queue.c), so work really runs behind the host's back, copies
 * really overlap compute, and a missing event is a real race (sim_exec.c
 * catches it). The ops run on an inner cpu backend over the same borrowed
 * pool, so results are bit-identical to the cpu backend's.
 *
 * Like a real device it checks every operand at submission: memory must
 * be a live sim allocation and each access inside it; a weight that was
 * never uploaded is refused by name. Operands are then translated to host
 * addresses for the inner cpu backend. The block entry queues a whole
 * layer as one command (fewer hand-offs between threads); per_op hides it.
 * Kernel scratch is the inner cpu backend's, in host memory: a GPU keeps
 * it on chip, outside any plan.
 */
#define _POSIX_C_SOURCE 200809L /* pthread_condattr_setclock, CLOCK_MONOTONIC */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/sim/sim.h"
#include "backend/sim/sim_internal.h"
#include "quant/types.h"
#include "util/error.h"
#include "util/clock.h"

/* Compute commands the device holds before submission blocks; copies. */
enum { SIM_COMPUTE_SLOTS = 256, SIM_COPY_SLOTS = 64 };

/* What a backend_event is on the sim: a mark in one queue (seq 0: none). */
typedef struct sim_event {
    int queue;
    uint64_t seq;
} sim_event;

static sim_backend *sim_of(backend *b) { return b->impl; }
static sim_buf *sbuf(backend_buf *b) { return (sim_buf *)(void *)b; }
static sim_event *sev(backend_event *e) { return (sim_event *)(void *)e; }

/* The first asynchronous failure, reported again on every later call. */
static sw_status sticky(sim_backend *s) {
    pthread_mutex_lock(&s->mu);
    sw_status st = s->sticky;
    if (st != SW_OK)
        sw_errorf(st, "%s", s->sticky_msg);
    pthread_mutex_unlock(&s->mu);
    return st;
}

/* ---- memory ------------------------------------------------------------- */

static sw_status sim_alloc(backend *b, uint64_t bytes, const char *purpose, backend_buf **out) {
    sim_backend *s = sim_of(b);
    void *p = NULL;
    *out = NULL;
    if (bytes == 0)
        return SW_OK;
    sim_buf *buf = calloc(1, sizeof *buf);
    if (buf == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "sim device: out of host memory for a buffer record");
    sw_status st = sim_arena_alloc(&s->arena, bytes, purpose, &p);
    if (st != SW_OK) {
        free(buf);
        return st;
    }
    buf->magic = SIM_BUF_MAGIC;
    buf->base = p;
    buf->bytes = bytes;
    snprintf(buf->purpose, sizeof buf->purpose, "%s", purpose ? purpose : "?");
    pthread_mutex_lock(&s->mu);
    buf->next = s->live;
    if (s->live != NULL)
        s->live->prev = buf;
    s->live = buf;
    pthread_mutex_unlock(&s->mu);
    *out = (backend_buf *)(void *)buf;
    return SW_OK;
}

static void sim_free(backend *b, backend_buf *handle) {
    sim_backend *s = sim_of(b);
    sim_buf *buf = sbuf(handle);
    if (buf == NULL)
        return;
    pthread_mutex_lock(&s->mu);
    if (buf->prev != NULL)
        buf->prev->next = buf->next;
    else
        s->live = buf->next;
    if (buf->next != NULL)
        buf->next->prev = buf->prev;
    pthread_mutex_unlock(&s->mu);
    sim_arena_free(&s->arena, buf->base);
    buf->magic = 0;
    free(buf);
}

/* The live sim buffer behind m, with [off, off + bytes) inside it. */
static sw_status resolve(const char *what, bmem m, uint64_t bytes, sim_buf **out) {
    sim_buf *b = sbuf(m.buf);
    if (b == NULL || b->magic != SIM_BUF_MAGIC)
        return sw_errorf(SW_ERR_ARG, "sim device: %s: memory that is not a live device "
                         "allocation", what);
    if (m.off > b->bytes || bytes > b->bytes - m.off)
        return sw_errorf(SW_ERR_ARG, "sim device: %s: %llu bytes at offset %llu overrun '%s' "
                         "(%llu bytes)", what, (unsigned long long)bytes,
                         (unsigned long long)m.off, b->purpose, (unsigned long long)b->bytes);
    *out = b;
    return SW_OK;
}

/* ---- translation of operands for the inner cpu backend ------------------- */

typedef struct xlate {
    sim_backend *s;
    sim_cmd *cmd;
    const char *what;
} xlate;

static sw_status note_read(sim_cmd *c, sim_buf *b) {
    for (uint32_t i = 0; i < c->n_reads; i++)
        if (c->reads[i] == b)
            return SW_OK;
    if (c->n_reads == SIM_MAX_READS)
        return sw_errorf(SW_ERR_ARG, "sim device: one command reads more than %d weight "
                         "buffers", SIM_MAX_READS);
    c->reads[c->n_reads] = b;
    c->read_gen[c->n_reads++] = atomic_load(&b->gen_queued);
    return SW_OK;
}

static sw_status xlate_mem(void *user, const mem_operand *o) {
    xlate *x = user;
    sim_buf *b = NULL;
    bmem *m = o->m;
    const btensor *weight = o->weight;
    if (weight != NULL && (m->buf == NULL || sbuf(m->buf)->magic != SIM_BUF_MAGIC))
        return sw_errorf(SW_ERR_ARG, "sim device: weight '%s' is not in device memory; upload "
                         "it before using it in %s", weight->name ? weight->name : "?",
                         x->what);
    sw_status st = resolve(x->what, *m, o->bytes, &b);
    if (st == SW_OK && weight != NULL)
        st = note_read(x->cmd, b);
    if (st != SW_OK)
        return st;
    m->buf = x->s->cpu->vt->host_memory(x->s->cpu);
    m->off = (uint64_t)(uintptr_t)(b->base + m->off);
    return SW_OK;
}

/* Failure injection and the sticky error, before anything is queued. */
static sw_status may_submit(sim_backend *s, const char *what) {
    sw_status st = sticky(s);
    if (st != SW_OK)
        return st;
    pthread_mutex_lock(&s->mu);
    bool inject = ++s->n_ops == s->fail_op_at;
    pthread_mutex_unlock(&s->mu);
    if (inject)
        return sw_errorf(SW_ERR_DEVICE, "sim device: %s refused (injected fault)", what);
    return SW_OK;
}

static sw_status sim_submit(backend *b, const bop *op) {
    sim_backend *s = sim_of(b);
    if (op == NULL || op->kind >= BOP_COUNT)
        return sw_errorf(SW_ERR_ARG, "sim device: bad op");
    sw_status st = may_submit(s, bop_name(op->kind));
    if (st != SW_OK)
        return st;
    sim_cmd c;
    c.kind = CMD_OP;
    c.n_reads = 0;
    c.u.op = *op;
    xlate x = {s, &c, bop_name(op->kind)};
    if ((st = bop_for_each_mem(&c.u.op, xlate_mem, &x)) != SW_OK)
        return st;
    return sim_queue_push(&s->queue[BQ_COMPUTE], &c, NULL);
}

static sw_status sim_block_entry(backend *b, const block_args *a) {
    sim_backend *s = sim_of(b);
    if (a == NULL || a->shape == NULL)
        return sw_errorf(SW_ERR_ARG, "sim device: bad block");
    sw_status st = may_submit(s, "block");
    if (st != SW_OK)
        return st;
    sim_cmd c;
    c.kind = CMD_BLOCK;
    c.n_reads = 0;
    c.u.block.a = *a;
    c.u.block.shape = *a->shape;
    c.u.block.a.shape = &c.u.block.shape;
    xlate x = {s, &c, "block"};
    if ((st = block_for_each_mem(&c.u.block.a, xlate_mem, &x)) != SW_OK)
        return st;
    c.u.block.a.shape = NULL; /* re-pointed at the queue's copy when it runs */
    return sim_queue_push(&s->queue[BQ_COMPUTE], &c, NULL);
}

/* ---- copies ------------------------------------------------------------- */

/* The checks both directions share: the queue, the host pointer, and the
 * device range, whose buffer goes to *t. */
static sw_status check_copy(sim_backend *s, backend_queue q, const void *host, bmem m,
                            uint64_t bytes, bool to_device, sim_buf **t) {
    sw_status st = sticky(s);
    if (st != SW_OK)
        return st;
    if (q != BQ_COMPUTE && q != BQ_COPY)
        return sw_errorf(SW_ERR_ARG, "sim device: no queue %d", (int)q);
    if (host == NULL)
        return sw_errorf(SW_ERR_ARG, "sim device: copy of %llu bytes %s NULL",
                         (unsigned long long)bytes, to_device ? "from" : "to");
    return resolve(to_device ? "copy to device" : "copy to host", m, bytes, t);
}

static sw_status sim_copy_h2d(backend *b, backend_queue q, bmem dst, const void *src,
                              uint64_t bytes) {
    sim_backend *s = sim_of(b);
    sim_buf *t = NULL;
    sw_status st = bytes ? check_copy(s, q, src, dst, bytes, true, &t) : sticky(s);
    if (st != SW_OK || bytes == 0)
        return st;
    sim_cmd c = {.kind = CMD_H2D, .n_reads = 0};
    c.u.copy.dst = t->base + dst.off;
    c.u.copy.src = src;
    c.u.copy.bytes = bytes;
    c.u.copy.target = q == BQ_COPY ? t : NULL;
    c.u.copy.submit_s = sw_clock_s();
    if (q == BQ_COPY)
        atomic_fetch_add(&t->gen_queued, 1);
    return sim_queue_push(&s->queue[q], &c, NULL);
}

static sw_status sim_copy_d2h(backend *b, backend_queue q, void *dst, bmem src,
                              uint64_t bytes) {
    sim_backend *s = sim_of(b);
    sim_buf *t = NULL;
    sw_status st = bytes ? check_copy(s, q, dst, src, bytes, false, &t) : sticky(s);
    if (st != SW_OK || bytes == 0)
        return st;
    sim_cmd c = {.kind = CMD_D2H, .n_reads = 0};
    c.u.copy.dst = dst;
    c.u.copy.src = t->base + src.off;
    c.u.copy.bytes = bytes;
    return sim_queue_push(&s->queue[q], &c, NULL);
}

/* ---- events ------------------------------------------------------------- */

static sw_status sim_event_create(backend *b, backend_event **out) {
    (void)b;
    sim_event *ev = calloc(1, sizeof *ev);
    *out = (backend_event *)(void *)ev;
    return ev ? SW_OK : sw_errorf(SW_ERR_OOM_HOST, "sim device: out of host memory for an event");
}

static void sim_event_destroy(backend *b, backend_event *ev) {
    (void)b;
    free(sev(ev));
}

static sw_status sim_event_record(backend *b, backend_event *ev, backend_queue q) {
    if (ev == NULL || (q != BQ_COMPUTE && q != BQ_COPY))
        return sw_errorf(SW_ERR_ARG, "sim device: event_record with a NULL event or bad queue");
    sev(ev)->queue = (int)q;
    sev(ev)->seq = sim_queue_mark(&sim_of(b)->queue[q]);
    return SW_OK;
}

static sw_status sim_queue_wait_event(backend *b, backend_queue q, backend_event *ev) {
    sim_backend *s = sim_of(b);
    if (ev == NULL || (q != BQ_COMPUTE && q != BQ_COPY))
        return sw_errorf(SW_ERR_ARG, "sim device: queue_wait with a NULL event or bad queue");
    const sim_event *e = sev(ev);
    if (e->seq == 0 || e->queue == (int)q) /* nothing recorded, or in order anyway */
        return SW_OK;
    sim_cmd c = {.kind = CMD_WAIT, .n_reads = 0};
    c.u.wait.queue = e->queue;
    c.u.wait.seq = e->seq;
    return sim_queue_push(&s->queue[q], &c, NULL);
}

static sw_status sim_event_sync(backend *b, backend_event *ev) {
    sim_backend *s = sim_of(b);
    if (ev == NULL)
        return sw_errorf(SW_ERR_ARG, "sim device: event_sync on a NULL event");
    const sim_event *e = sev(ev);
    if (e->seq > 0 && !sim_queue_wait(&s->queue[e->queue], e->seq, NULL))
        return sw_errorf(SW_ERR_DEVICE, "sim device: waited for work that was dropped because "
                         "the device is stopping");
    return sticky(s);
}

static sw_status sim_sync(backend *b) {
    sim_backend *s = sim_of(b);
    for (int q = 0; q < BQ_COUNT; q++)
        if (!sim_queue_wait(&s->queue[q], sim_queue_mark(&s->queue[q]), NULL))
            return sw_errorf(SW_ERR_DEVICE, "sim device: stopped with work queued");
    return sticky(s);
}

/* A split's hop between two simulated devices: once both are idle, the
 * bytes straight from one's memory to the other's (a peer link; its rate
 * is not modelled, the host's memcpy stands in). */
static sw_status sim_copy_peer(backend *b, bmem dst, backend *src_b, bmem src, uint64_t bytes) {
    sim_buf *t = NULL, *f = NULL;
    if (src_b == NULL || src_b->vt->copy_peer != b->vt->copy_peer)
        return sw_errorf(SW_ERR_ARG, "sim device: a peer copy from another kind of device");
    SW_TRY(sim_sync(src_b));
    SW_TRY(sim_sync(b));
    if (bytes == 0)
        return SW_OK;
    SW_TRY(resolve("peer copy to", dst, bytes, &t));
    SW_TRY(resolve("peer copy from", src, bytes, &f));
    memcpy(t->base + dst.off, f->base + src.off, bytes);
    pthread_mutex_lock(&sim_of(b)->mu);
    sim_of(b)->peer_bytes += bytes;
    pthread_mutex_unlock(&sim_of(b)->mu);
    return SW_OK;
}

/* ---- lifecycle ---------------------------------------------------------- */

static void sim_get_stats(backend *b, backend_stats *out) {
    sim_backend *s = sim_of(b);
    *out = (backend_stats){.capacity_bytes = s->arena.capacity_bytes};
    sim_arena_stats(&s->arena, &out->in_use_bytes, &out->peak_bytes, &out->n_allocs);
    pthread_mutex_lock(&s->mu);
    out->bytes_to_device = s->bytes_to_device;
    out->peer_bytes = s->peer_bytes;
    out->copy_busy_s = s->busy_s;
    out->wait_stall_s = s->stall_s;
    pthread_mutex_unlock(&s->mu);
}

static void sim_reset_peak(backend *b) { sim_arena_reset_peak(&sim_of(b)->arena); }

/* Stops both queues before joining either (one may wait on the other),
 * dropping what they hold; buffers still allocated go with the arena. */
static void sim_destroy(backend *b) {
    sim_backend *s = sim_of(b);
    atomic_store(&s->stopping, true);
    pthread_mutex_lock(&s->pace_mu);
    pthread_cond_broadcast(&s->cv_pace);
    pthread_mutex_unlock(&s->pace_mu);
    for (int q = 0; q < BQ_COUNT; q++)
        sim_queue_stop(&s->queue[q]);
    for (int q = 0; q < BQ_COUNT; q++)
        sim_queue_destroy(&s->queue[q]);
    while (s->live != NULL) { /* buffers the caller left: the arena goes anyway */
        sim_buf *next = s->live->next;
        free(s->live);
        s->live = next;
    }
    pthread_cond_destroy(&s->cv_pace);
    pthread_mutex_destroy(&s->pace_mu);
    pthread_mutex_destroy(&s->mu);
    sim_arena_destroy(&s->arena);
    backend_destroy(s->cpu);
    free(s);
}

/* Registration (the expert cache's copies from the mapping in place):
 * the simulated card copies from any host bytes at its one link rate, so
 * it accepts every range, as a card that can page-lock the mapping does
 * (SPILLWAY_EXPERT_STAGING=1 makes the engine stage instead). */
static sw_status sim_host_register(backend *b, void *ptr, uint64_t bytes) {
    return ptr != NULL && bytes != 0 ? sticky(sim_of(b))
                                     : sw_errorf(SW_ERR_ARG, "sim device: register nothing");
}

static void sim_host_unregister(backend *b, void *ptr) {
    (void)b;
    (void)ptr;
}

#define SIM_VTABLE_ENTRIES                                                   \
    .name = "sim", .destroy = sim_destroy, .alloc = sim_alloc, .free = sim_free, \
    .host_memory = NULL, .host_register = sim_host_register,                     \
    .host_unregister = sim_host_unregister,                                      \
    .copy_h2d = sim_copy_h2d, .copy_d2h = sim_copy_d2h,                          \
    .submit = sim_submit, .event_create = sim_event_create,                      \
    .event_destroy = sim_event_destroy, .event_record = sim_event_record,        \
    .queue_wait = sim_queue_wait_event, .event_sync = sim_event_sync,            \
    .sync = sim_sync, .get_stats = sim_get_stats, .reset_peak = sim_reset_peak,  \
    .copy_peer = sim_copy_peer

static const backend_vtable sim_vtable = {SIM_VTABLE_ENTRIES, .block = sim_block_entry};
static const backend_vtable sim_vtable_per_op = {SIM_VTABLE_ENTRIES, .block = NULL};

/* The threading primitives, in order; *n_ready says how many exist. */
static sw_status init_sync(sim_backend *s, int *n_ready) {
    pthread_condattr_t attr;
    *n_ready = 0;
    if (pthread_mutex_init(&s->mu, NULL) != 0)
        return SW_ERR_OOM_HOST;
    (*n_ready)++;
    if (pthread_mutex_init(&s->pace_mu, NULL) != 0)
        return SW_ERR_OOM_HOST;
    (*n_ready)++;
    if (pthread_condattr_init(&attr) != 0)
        return SW_ERR_OOM_HOST;
    bool ok = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) == 0 &&
              pthread_cond_init(&s->cv_pace, &attr) == 0;
    pthread_condattr_destroy(&attr);
    if (!ok)
        return SW_ERR_OOM_HOST;
    (*n_ready)++;
    return SW_OK;
}

sw_status backend_sim_create(const backend_params *p, backend **out) {
    sw_status st;
    sim_backend *s = NULL;
    int n_sync = 0, n_queues = 0;
    if (out == NULL || p == NULL)
        return sw_errorf(SW_ERR_ARG, "backend_sim_create: NULL argument");
    *out = NULL;
    const backend_test_hooks none = {0}, *test = p->test ? p->test : &none;
    if (!(p->link_Bps >= 0.0) || !(test->op_delay_s >= 0.0))
        return sw_errorf(SW_ERR_ARG, "sim device: link rate and op delay must be >= 0");
    if ((s = calloc(1, sizeof *s)) == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "sim device: out of host memory");
    s->link_Bps = p->link_Bps;
    s->op_delay_s = test->op_delay_s;
    s->fail_op_at = test->fail_op_at;
    atomic_init(&s->stopping, false);
    if ((st = backend_cpu_create(p, &s->cpu)) != SW_OK ||
        (st = sim_arena_init(&s->arena, p->capacity_bytes, test->fail_alloc_at)) != SW_OK)
        goto fail;
    if (init_sync(s, &n_sync) != SW_OK) {
        st = sw_errorf(SW_ERR_OOM_HOST, "sim device: cannot create its locks");
        goto fail;
    }
    for (; n_queues < BQ_COUNT; n_queues++)
        if ((st = sim_queue_init(&s->queue[n_queues], n_queues,
                                 n_queues == BQ_COMPUTE ? SIM_COMPUTE_SLOTS : SIM_COPY_SLOTS, s,
                                 sim_exec)) != SW_OK)
            goto fail;
    s->base.vt = test->per_op ? &sim_vtable_per_op : &sim_vtable;
    s->base.impl = s;
    *out = &s->base;
    return SW_OK;
fail:
    for (int q = 0; q < n_queues; q++)
        sim_queue_stop(&s->queue[q]);
    for (int q = 0; q < n_queues; q++)
        sim_queue_destroy(&s->queue[q]);
    if (n_sync > 2)
        pthread_cond_destroy(&s->cv_pace);
    if (n_sync > 1)
        pthread_mutex_destroy(&s->pace_mu);
    if (n_sync > 0)
        pthread_mutex_destroy(&s->mu);
    sim_arena_destroy(&s->arena);
    backend_destroy(s->cpu);
    free(s);
    return st;
}
