/*
 * cpu_backend.c — the host CPU behind the backend interface: the kernels
 * of cpu_ops.h on the borrowed thread pool, memory from the C heap.
 *
 * Both queues are the calling thread: every op and copy has finished when
 * its call returns, so events are always passed and waits never stall.
 * Capacity is unlimited (UINT64_MAX) but every allocation is counted (in
 * use, peak, count), so the engine's accounting can be checked anywhere.
 * Its memory is the host's: host_memory() names any host bytes in place,
 * which is how the file mapping and the caller's arrays reach the ops.
 * Kernel scratch (attention rows: n_threads x max_attn_keys floats; the
 * matmul workspace for rows of up to max_row_elems) is made once here,
 * never per call: backend_cpu_scratch_bytes() says how much, for the
 * plan. Allocation and stats are thread-safe; ops share the pool and run
 * one at a time.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <assert.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_ops.h"
#include "quant/types.h"
#include "util/error.h"
#include "util/clock.h"

/* What a backend_buf is here: an allocation, or (base NULL) all of host
 * memory, where offsets are addresses. */
typedef struct cpu_buf {
    uint8_t *base;
    uint64_t bytes;
} cpu_buf;

typedef struct cpu_backend {
    backend base;          /* what callers hold; impl points back here */
    cpu_pool *pool;        /* borrowed */
    float *attn_scratch;   /* (n_threads, max_attn_keys), then the block scratch */
    uint64_t scratch_floats;
    uint64_t block_floats; /* n_threads * CPU_ATTN_BLOCK_FLOATS, after scratch_floats */
    cpu_mm_scratch *mm_ws; /* matmul tiles, rows up to max_row_elems */
    const float *last_mm_x; /* x of the previous op if it was a matmul, else NULL */
    cpu_buf host;          /* all host memory */
    pthread_mutex_t mu;    /* guards the counters below */
    uint64_t in_use_bytes, peak_bytes, n_allocs, bytes_to_device;
    double copy_busy_s;
} cpu_backend;

/* What a backend_event is here: nothing to track, as work is done when
 * its call returns. */
typedef struct cpu_event {
    int unused;
} cpu_event;

static cpu_backend *cpu_of(backend *b) { return b->impl; }


static cpu_buf *buf_of(backend_buf *b) { return (cpu_buf *)(void *)b; }

/* Host address of m (checked against its buffer by the caller). */
static void *cpu_ptr(bmem m) {
    const cpu_buf *b = buf_of(m.buf);
    if (b->base == NULL)
        return (void *)(uintptr_t)m.off;
    return b->base + m.off;
}

static sw_status check_mem(const char *what, bmem m, uint64_t bytes) {
    if (m.buf == NULL)
        return sw_errorf(SW_ERR_ARG, "cpu backend: %s: no buffer", what);
    const cpu_buf *b = buf_of(m.buf);
    if (b->base == NULL ? m.off == 0 && bytes > 0 : m.off > b->bytes || bytes > b->bytes - m.off)
        return sw_errorf(SW_ERR_ARG, "cpu backend: %s: %llu bytes at offset %llu are outside "
                         "the buffer (%llu bytes)", what, (unsigned long long)bytes,
                         (unsigned long long)m.off, (unsigned long long)b->bytes);
    return SW_OK;
}

/* ---- memory and copies -------------------------------------------------- */

static sw_status cpu_be_alloc(backend *b, uint64_t bytes, const char *purpose,
                              backend_buf **out) {
    cpu_backend *c = cpu_of(b);
    *out = NULL;
    if (bytes == 0)
        return SW_OK;
    uint64_t rounded = (bytes + 63) / 64 * 64;
    cpu_buf *buf = malloc(sizeof *buf);
    uint8_t *p = rounded >= bytes && rounded <= SIZE_MAX ? aligned_alloc(64, (size_t)rounded)
                                                          : NULL;
    if (buf == NULL || p == NULL) {
        free(buf);
        free(p);
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory: requested %llu bytes for '%s', "
                         "in use %llu by this backend", (unsigned long long)bytes,
                         purpose ? purpose : "?", (unsigned long long)c->in_use_bytes);
    }
    *buf = (cpu_buf){.base = p, .bytes = bytes};
    pthread_mutex_lock(&c->mu);
    c->in_use_bytes += bytes;
    c->peak_bytes = c->in_use_bytes > c->peak_bytes ? c->in_use_bytes : c->peak_bytes;
    c->n_allocs++;
    pthread_mutex_unlock(&c->mu);
    *out = (backend_buf *)(void *)buf;
    return SW_OK;
}

static void cpu_be_free(backend *b, backend_buf *handle) {
    cpu_backend *c = cpu_of(b);
    cpu_buf *buf = buf_of(handle);
    if (buf == NULL || buf == &c->host)
        return;
    pthread_mutex_lock(&c->mu);
    assert(buf->bytes <= c->in_use_bytes);
    c->in_use_bytes -= buf->bytes;
    pthread_mutex_unlock(&c->mu);
    free(buf->base);
    free(buf);
}

static backend_buf *cpu_be_host_memory(backend *b) {
    return (backend_buf *)(void *)&cpu_of(b)->host;
}

static sw_status cpu_be_copy_h2d(backend *b, backend_queue q, bmem dst, const void *src,
                                 uint64_t bytes) {
    cpu_backend *c = cpu_of(b);
    (void)q;
    sw_status st = check_mem("copy to device", dst, bytes);
    if (st != SW_OK || bytes == 0)
        return st;
    if (src == NULL)
        return sw_errorf(SW_ERR_ARG, "cpu backend: copy of %llu bytes from NULL",
                         (unsigned long long)bytes);
    const double t0 = sw_clock_s();
    memcpy(cpu_ptr(dst), src, (size_t)bytes);
    const double t1 = sw_clock_s();
    pthread_mutex_lock(&c->mu);
    c->bytes_to_device += bytes;
    c->copy_busy_s += t1 - t0;
    pthread_mutex_unlock(&c->mu);
    return SW_OK;
}

static sw_status cpu_be_copy_d2h(backend *b, backend_queue q, void *dst, bmem src,
                                 uint64_t bytes) {
    (void)b;
    (void)q;
    sw_status st = check_mem("copy to host", src, bytes);
    if (st != SW_OK || bytes == 0)
        return st;
    if (dst == NULL)
        return sw_errorf(SW_ERR_ARG, "cpu backend: copy of %llu bytes to NULL",
                         (unsigned long long)bytes);
    memcpy(dst, cpu_ptr(src), (size_t)bytes);
    return SW_OK;
}

/* ---- events: every mark has passed ---------------------------------------- */

static sw_status cpu_be_event_create(backend *b, backend_event **out) {
    (void)b;
    cpu_event *ev = calloc(1, sizeof *ev);
    *out = (backend_event *)(void *)ev;
    return ev ? SW_OK : sw_errorf(SW_ERR_OOM_HOST, "cpu backend: out of host memory for an event");
}

static void cpu_be_event_destroy(backend *b, backend_event *ev) {
    (void)b;
    free((cpu_event *)(void *)ev);
}

static sw_status cpu_be_event_record(backend *b, backend_event *ev, backend_queue q) {
    (void)b;
    (void)q;
    return ev ? SW_OK : sw_errorf(SW_ERR_ARG, "cpu backend: NULL event");
}

static sw_status cpu_be_queue_wait(backend *b, backend_queue q, backend_event *ev) {
    return cpu_be_event_record(b, ev, q);
}

static sw_status cpu_be_event_sync(backend *b, backend_event *ev) {
    return cpu_be_event_record(b, ev, BQ_COMPUTE);
}

static sw_status cpu_be_sync(backend *b) {
    (void)b;
    return SW_OK;
}

/* ---- ops ---------------------------------------------------------------- */

static sw_status check_operand(void *user, const mem_operand *o) {
    return check_mem(bop_name(*(const bop_kind *)user), *o->m, o->bytes);
}

static tensor_view view_of(const btensor *w) {
    return (tensor_view){.name = w->name, .type = w->type, .n_dims = 2,
                         .ne = {w->ne0, w->ne1, 1, 1}, .n_bytes = w->n_bytes,
                         .data = w->mem.buf ? cpu_ptr(w->mem) : NULL};
}

/* Every token's (sequence, position) must name a row of the cache. */
static sw_status check_cache_rows(const char *what, const bkv *kv, const int32_t *pos,
                                  const int32_t *seq, uint32_t n) {
    for (uint32_t t = 0; t < n; t++)
        if (seq[t] < 0 || (uint32_t)seq[t] >= kv->n_seq || pos[t] < 0 ||
            (kv->ring == 0 && (uint32_t)pos[t] >= kv->rows))
            return sw_errorf(SW_ERR_ARG, "cpu %s: token %u (sequence %d, position %d) is outside "
                             "the cache (%u sequences x %u rows)", what, t, seq[t], pos[t],
                             kv->n_seq, kv->rows);
    return SW_OK;
}

/* Most keys any query of the call sees: what cpu_attention needs per
 * thread (the same clamps as its attn_range). */
static uint64_t attn_keys_needed(const cpu_attn_args *a) {
    uint64_t most = 0;
    for (uint32_t t = 0; t < a->n_tokens; t++) {
        if (a->q_pos[t] < 0)
            continue;
        uint64_t n = (uint64_t)a->q_pos[t] + 1;
        if (a->window > 0 && n > a->window)
            n = a->window;
        if (a->kv_ring > 0 && n > a->kv_ring)
            n = a->kv_ring;
        most = n > most ? n : most;
    }
    return most;
}

/* A call seeing more keys than one thread's share of the scratch runs on
 * one thread (cpu_attention gives the same bits for any thread count);
 * more keys than the whole scratch is refused. */
static sw_status run_attention(cpu_backend *c, const bop_attention *a) {
    const bkv *kv = &a->cache;
    cpu_attn_args ca = {
        .q = cpu_ptr(a->q), .k = cpu_ptr(kv->k), .v = cpu_ptr(kv->v), .kv_type = kv->type,
        .out = cpu_ptr(a->out), .q_pos = cpu_ptr(a->pos), .q_seq = cpu_ptr(a->seq),
        .seq_rows = kv->rows, .n_tokens = a->n_tokens, .n_head = a->n_head,
        .n_head_kv = a->n_head_kv, .head_dim = a->head_dim, .kv_ring = kv->ring,
        .window = a->window, .softcap = a->softcap, .scratch = c->attn_scratch,
        .scratch_floats = c->scratch_floats,
        .block = c->block_floats ? c->attn_scratch + c->scratch_floats : NULL,
        .block_floats = c->block_floats,
    };
    sw_status st = check_cache_rows("attention", kv, ca.q_pos, ca.q_seq, a->n_tokens);
    if (st != SW_OK)
        return st;
    const uint64_t keys = attn_keys_needed(&ca);
    if (keys > c->scratch_floats)
        return sw_errorf(SW_ERR_ARG, "cpu attention: a query sees %llu keys, the scratch was "
                         "sized for %llu", (unsigned long long)keys,
                         (unsigned long long)c->scratch_floats);
    cpu_pool *pool = keys * (uint64_t)cpu_pool_size(c->pool) > c->scratch_floats ? NULL
                                                                                 : c->pool;
    cpu_attention(pool, &ca);
    return SW_OK;
}

static sw_status run_kv_append(const bop_kv_append *a) {
    const bkv *kv = &a->cache;
    const int32_t *pos = cpu_ptr(a->pos), *seq = cpu_ptr(a->seq);
    sw_status st = check_cache_rows("kv append", kv, pos, seq, a->n_tokens);
    if (st != SW_OK)
        return st;
    cpu_kv_append(cpu_ptr(a->k), cpu_ptr(a->v), pos, seq, a->n_tokens, kv->row_elems,
                  kv->type, kv->rows, kv->ring, cpu_ptr(kv->k), cpu_ptr(kv->v));
    return SW_OK;
}

/* The caller's x_again is taken only when this backend also saw the
 * previous op be a matmul over the same x. */
static sw_status run_matmul(cpu_backend *c, const bop_matmul *m) {
    const tensor_view w = view_of(&m->w);
    const float *x = cpu_ptr(m->x);
    const unsigned flags = (m->fine ? CPU_MM_FINE : 0) |
                           (m->x_again && x == c->last_mm_x ? CPU_MM_X_AGAIN : 0);
    sw_status st = cpu_matmul_as(c->pool, c->mm_ws, &w, x, cpu_ptr(m->y), m->n_tokens, flags);
    c->last_mm_x = st == SW_OK ? x : NULL;
    return st;
}


/* BOP_MOE_CACHED: ids, slots and the rows from elsewhere checked first. */
static sw_status run_moe_cached(cpu_backend *c, const bop_moe_cached *m) {
    const tensor_view gu = view_of(&m->gate_up), dn = view_of(&m->down);
    const cpu_moe_args a = {.gate_up = &gu, .down = &dn, .x = cpu_ptr(m->x),
                            .weights = cpu_ptr(m->weights), .ids = cpu_ptr(m->ids),
                            .out = cpu_ptr(m->out), .xg = cpu_ptr(m->xg),
                            .gu = cpu_ptr(m->gu), .yd = cpu_ptr(m->yd),
                            .n_tokens = m->n_tokens, .n_expert = m->n_expert, .k = m->k,
                            .slot_of = cpu_ptr(m->slot_of), .y_row = cpu_ptr(m->y_row),
                            .y = cpu_ptr(m->y), .n_slot = m->n_slot,
                            .accumulate = m->accumulate};
    for (uint32_t e = 0; e < m->n_expert; e++)
        if (a.slot_of[e] < -1 || a.slot_of[e] >= (int32_t)m->n_slot)
            return sw_errorf(SW_ERR_ARG, "cpu backend: expert %u in slot %d of %u", e,
                             (int)a.slot_of[e], m->n_slot);
    for (uint64_t i = 0; i < (uint64_t)m->n_tokens * m->k; i++) {
        if (a.ids[i] < 0 || (uint32_t)a.ids[i] >= m->n_expert)
            return sw_errorf(SW_ERR_ARG, "cpu backend: expert id %d outside 0..%u",
                             (int)a.ids[i], m->n_expert - 1);
        const bool row_read = (a.slot_of[a.ids[i]] < 0) == m->accumulate;
        if (row_read && (a.y_row[i] < 0 || (uint32_t)a.y_row[i] >= m->n_y))
            return sw_errorf(SW_ERR_ARG, "cpu backend: expert row %d outside 0..%u",
                             (int)a.y_row[i], m->n_y);
    }
    return cpu_moe_experts(c->pool, c->mm_ws, &a);
}

static sw_status run_op(cpu_backend *c, const bop *op) {
    const bop_rmsnorm *n = &op->u.rmsnorm;
    const bop_rope *r = &op->u.rope;
    tensor_view w;
    switch (op->kind) {
    case BOP_GET_ROWS:
        w = view_of(&op->u.get_rows.w);
        return cpu_get_rows(&w, cpu_ptr(op->u.get_rows.ids), op->u.get_rows.n,
                            cpu_ptr(op->u.get_rows.out));
    case BOP_MATMUL:
        return run_matmul(c, &op->u.matmul);
    case BOP_RMSNORM:
        cpu_rmsnorm_mt(c->pool, cpu_ptr(n->x), n->w.n_bytes ? cpu_ptr(n->w.mem) : NULL,
                       cpu_ptr(n->y), n->n, n->n_rows, n->eps);
        return SW_OK;
    case BOP_ROPE:
        cpu_rope(cpu_ptr(r->x), cpu_ptr(r->pos), r->n_tokens, r->n_heads, r->head_dim, r->base,
                 r->freq_scale, r->n_pairs);
        return SW_OK;
    case BOP_KV_APPEND:
        return run_kv_append(&op->u.kv_append);
    case BOP_ATTENTION:
        return run_attention(c, &op->u.attention);
    case BOP_GEGLU:
        cpu_geglu_mt(c->pool, cpu_ptr(op->u.geglu.gate), cpu_ptr(op->u.geglu.up),
                     cpu_ptr(op->u.geglu.out), op->u.geglu.n);
        return SW_OK;
    case BOP_ADD:
        cpu_add(cpu_ptr(op->u.add.x), cpu_ptr(op->u.add.y), op->u.add.n);
        return SW_OK;
    case BOP_SCALE:
        cpu_scale(cpu_ptr(op->u.scale.x), op->u.scale.n, op->u.scale.s);
        return SW_OK;
    case BOP_SOFTCAP:
        cpu_softcap_mt(c->pool, cpu_ptr(op->u.softcap.x), op->u.softcap.n, op->u.softcap.cap);
        return SW_OK;
    case BOP_GATHER:
        return cpu_gather_rows(cpu_ptr(op->u.gather.src), op->u.gather.n_src,
                               cpu_ptr(op->u.gather.idx), op->u.gather.n, op->u.gather.cols,
                               cpu_ptr(op->u.gather.dst));
    case BOP_MOE_ROUTE: {
        const bop_moe_route *m = &op->u.moe_route;
        if (m->expert_scale.n_bytes < (uint64_t)m->n_expert * sizeof(float))
            return sw_errorf(SW_ERR_ARG, "cpu backend: expert scale '%s' is not %u f32 values",
                             m->expert_scale.name ? m->expert_scale.name : "?", m->n_expert);
        return cpu_moe_route(cpu_ptr(m->scores), cpu_ptr(m->expert_scale.mem), m->n_tokens,
                             m->n_expert, m->k, cpu_ptr(m->ids), cpu_ptr(m->weights));
    }
    case BOP_MOE_EXPERTS: {
        const bop_moe_experts *m = &op->u.moe_experts;
        const tensor_view gu = view_of(&m->gate_up), dn = view_of(&m->down);
        const cpu_moe_args a = {.gate_up = &gu, .down = &dn, .x = cpu_ptr(m->x),
                                .weights = cpu_ptr(m->weights), .ids = cpu_ptr(m->ids),
                                .out = cpu_ptr(m->out), .xg = cpu_ptr(m->xg),
                                .gu = cpu_ptr(m->gu), .yd = cpu_ptr(m->yd),
                                .n_tokens = m->n_tokens, .n_expert = m->n_expert, .k = m->k};
        for (uint64_t i = 0; i < (uint64_t)m->n_tokens * m->k; i++)
            if (a.ids[i] < 0 || (uint32_t)a.ids[i] >= m->n_expert)
                return sw_errorf(SW_ERR_ARG, "cpu backend: expert id %d outside 0..%u",
                                 (int)a.ids[i], m->n_expert - 1);
        return cpu_moe_experts(c->pool, c->mm_ws, &a);
    }
    case BOP_MOE_CACHED:
        return run_moe_cached(c, &op->u.moe_cached);
    case BOP_COUNT:
        break;
    }
    return sw_errorf(SW_ERR_ARG, "cpu backend: unknown op %d", (int)op->kind);
}

static sw_status cpu_be_submit(backend *b, const bop *op) {
    if (op == NULL || op->kind >= BOP_COUNT)
        return sw_errorf(SW_ERR_ARG, "cpu backend: bad op");
    bop checked = *op;
    bop_kind kind = op->kind;
    if (op->kind == BOP_RMSNORM && op->u.rmsnorm.w.type != SW_TYPE_F32)
        return sw_errorf(SW_ERR_ARG, "cpu backend: norm '%s' is not f32",
                         op->u.rmsnorm.w.name ? op->u.rmsnorm.w.name : "?");
    sw_status st = bop_for_each_mem(&checked, check_operand, &kind);
    cpu_backend *c = cpu_of(b);
    if (op->kind != BOP_MATMUL || st != SW_OK)
        c->last_mm_x = NULL;
    return st != SW_OK ? st : run_op(c, op);
}

/* ---- lifecycle ---------------------------------------------------------- */

static void cpu_be_get_stats(backend *b, backend_stats *out) {
    cpu_backend *c = cpu_of(b);
    pthread_mutex_lock(&c->mu);
    *out = (backend_stats){
        .capacity_bytes = UINT64_MAX, .in_use_bytes = c->in_use_bytes,
        .peak_bytes = c->peak_bytes, .n_allocs = c->n_allocs,
        .bytes_to_device = c->bytes_to_device, .copy_busy_s = c->copy_busy_s,
    };
    pthread_mutex_unlock(&c->mu);
}

static void cpu_be_reset_peak(backend *b) {
    cpu_backend *c = cpu_of(b);
    pthread_mutex_lock(&c->mu);
    c->peak_bytes = c->in_use_bytes;
    pthread_mutex_unlock(&c->mu);
}

static void cpu_be_destroy(backend *b) {
    cpu_backend *c = cpu_of(b);
    pthread_mutex_destroy(&c->mu);
    cpu_mm_scratch_destroy(c->mm_ws);
    free(c->attn_scratch);
    free(c);
}

static const backend_vtable cpu_vtable = {
    .name = "cpu",
    .destroy = cpu_be_destroy,
    .alloc = cpu_be_alloc,
    .free = cpu_be_free,
    .host_memory = cpu_be_host_memory,
    .copy_h2d = cpu_be_copy_h2d,
    .copy_d2h = cpu_be_copy_d2h,
    .submit = cpu_be_submit,
    .block = NULL, /* per-op dispatch costs nothing here */
    .event_create = cpu_be_event_create,
    .event_destroy = cpu_be_event_destroy,
    .event_record = cpu_be_event_record,
    .queue_wait = cpu_be_queue_wait,
    .event_sync = cpu_be_event_sync,
    .sync = cpu_be_sync,
    .get_stats = cpu_be_get_stats,
    .reset_peak = cpu_be_reset_peak,
};

uint64_t backend_cpu_scratch_bytes(uint32_t n_threads, uint32_t max_attn_keys,
                                   uint32_t attn_group, uint64_t max_row_elems) {
    const uint64_t block = max_attn_keys ? (uint64_t)n_threads * CPU_ATTN_BLOCK_FLOATS : 0;
    return ((uint64_t)n_threads * max_attn_keys * (attn_group ? attn_group : 1) + block) *
               sizeof(float) +
           cpu_mm_scratch_bytes((int)n_threads, max_row_elems);
}

sw_status backend_cpu_create(const backend_params *p, backend **out) {
    sw_status st;
    cpu_backend *c = NULL;
    if (out == NULL || p == NULL)
        return sw_errorf(SW_ERR_ARG, "backend_cpu_create: NULL argument");
    *out = NULL;
    c = calloc(1, sizeof *c);
    if (c == NULL) {
        st = sw_errorf(SW_ERR_OOM_HOST, "cpu backend: out of host memory");
        goto fail;
    }
    const backend_op_sizes *k = &p->sizes;
    c->pool = p->pool;
    c->host = (cpu_buf){.base = NULL, .bytes = UINT64_MAX};
    c->scratch_floats = (uint64_t)cpu_pool_size(p->pool) * k->max_attn_keys *
                        (k->attn_group ? k->attn_group : 1);
    c->block_floats = c->scratch_floats > 0
                          ? (uint64_t)cpu_pool_size(p->pool) * CPU_ATTN_BLOCK_FLOATS : 0;
    if (c->scratch_floats > 0 &&
        (c->attn_scratch = malloc((size_t)(c->scratch_floats + c->block_floats) *
                                  sizeof(float))) == NULL) {
        st = sw_errorf(SW_ERR_OOM_HOST, "cpu backend: out of host memory for %llu floats of "
                       "attention scratch",
                       (unsigned long long)(c->scratch_floats + c->block_floats));
        goto fail;
    }
    if ((st = cpu_mm_scratch_create(cpu_pool_size(p->pool),
                                    k->max_row_elems ? k->max_row_elems : 4096,
                                    &c->mm_ws)) != SW_OK)
        goto fail;
    cpu_mm_scratch_set_exact(c->mm_ws, p->exact_dots);
    cpu_mm_scratch_set_bf16(c->mm_ws, p->bf16_dots);
    if (pthread_mutex_init(&c->mu, NULL) != 0) {
        st = sw_errorf(SW_ERR_OOM_HOST, "cpu backend: cannot create a mutex");
        goto fail;
    }
    c->base.vt = &cpu_vtable;
    c->base.impl = c;
    *out = &c->base;
    return SW_OK;
fail:
    if (c != NULL) {
        cpu_mm_scratch_destroy(c->mm_ws);
        free(c->attn_scratch);
    }
    free(c);
    return st;
}
