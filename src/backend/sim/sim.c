/*
 * sim.c — a simulated accelerator behind the backend interface, for
 * machines without one: device memory is an arena with a hard capacity
 * (sim_pool.c), host-to-device copies go through a copy thread paced to a
 * link rate (sim_copy.c), and the ops are the CPU kernels, run through an
 * inner cpu backend on the same borrowed pool, so results are
 * bit-identical to the cpu backend's.
 *
 * Like a real device it checks that copies target live device memory and
 * that weights given to matmul/get_rows were uploaded; activations are not
 * checked (those ops return nothing). Attention scratch is the inner cpu
 * backend's, in host memory: a GPU keeps it on chip, outside any plan.
 */
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/sim/sim_internal.h"
#include "util/error.h"

typedef struct sim_backend {
    backend base;     /* what callers hold; impl points back here */
    sim_arena arena;
    sim_copier copier;
    backend *cpu;     /* runs the ops */
} sim_backend;

static sim_backend *sim_of(backend *b) { return b->impl; }

/* ---- buffers, copies, events ------------------------------------------ */

static sw_status sim_alloc(backend *b, uint64_t bytes, const char *purpose, void **out) {
    return sim_arena_alloc(&sim_of(b)->arena, bytes, purpose, out);
}

static void sim_free(backend *b, void *ptr) { sim_arena_free(&sim_of(b)->arena, ptr); }

static sw_status sim_copy_async(backend *b, void *dst, const void *src, uint64_t bytes,
                                backend_event *done) {
    sim_backend *s = sim_of(b);
    if (bytes > 0 && (src == NULL || !sim_arena_holds(&s->arena, dst, bytes)))
        return sw_errorf(SW_ERR_ARG, "sim device: copy of %llu bytes %s",
                         (unsigned long long)bytes,
                         src == NULL ? "from a NULL source"
                                     : "to memory that is not one live device allocation");
    return sim_copier_submit(&s->copier, dst, src, bytes, (sim_event *)done);
}

static sw_status sim_event_create(backend *b, backend_event **out) {
    (void)b;
    sim_event *ev = calloc(1, sizeof *ev);
    *out = (backend_event *)ev;
    if (ev == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "sim device: out of host memory for an event");
    return SW_OK;
}

static void sim_event_destroy(backend *b, backend_event *ev) {
    (void)b;
    free((sim_event *)ev);
}

static sw_status sim_event_wait(backend *b, backend_event *ev) {
    if (ev == NULL)
        return sw_errorf(SW_ERR_ARG, "sim device: event_wait on a NULL event");
    return sim_copier_wait(&sim_of(b)->copier, (const sim_event *)ev);
}

/* Synchronous and unpaced: only activations come back, kilobytes a token. */
static sw_status sim_copy_to_host(backend *b, void *dst, const void *src, uint64_t bytes) {
    sim_backend *s = sim_of(b);
    if (bytes > 0 && (dst == NULL || !sim_arena_holds(&s->arena, src, bytes)))
        return sw_errorf(SW_ERR_ARG, "sim device: copy to host of %llu bytes %s",
                         (unsigned long long)bytes,
                         dst == NULL ? "to a NULL destination"
                                     : "from memory that is not one live device allocation");
    return s->cpu->vt->copy_to_host(s->cpu, dst, src, bytes);
}

/* Synchronous and unpaced, bypassing the queue: activations going to the
 * device are kilobytes a token and must not wait behind queued weight
 * copies. Counted in bytes_to_device. */
static sw_status sim_copy_to_device(backend *b, void *dst, const void *src, uint64_t bytes) {
    sim_backend *s = sim_of(b);
    if (bytes > 0 && (src == NULL || !sim_arena_holds(&s->arena, dst, bytes)))
        return sw_errorf(SW_ERR_ARG, "sim device: copy to device of %llu bytes %s",
                         (unsigned long long)bytes,
                         src == NULL ? "from a NULL source"
                                     : "into memory that is not one live device allocation");
    if (bytes > 0)
        memcpy(dst, src, (size_t)bytes);
    sim_copier_count(&s->copier, bytes);
    return SW_OK;
}

static void sim_reset_peak(backend *b) { sim_arena_reset_peak(&sim_of(b)->arena); }

/* ---- ops: the inner cpu backend's, after checking weights are here ----- */

static sw_status weight_on_device(sim_backend *s, const tensor_view *w) {
    if (w != NULL && w->data != NULL && sim_arena_holds(&s->arena, w->data, w->n_bytes))
        return SW_OK;
    return sw_errorf(SW_ERR_ARG, "sim device: weight '%s' is not in device memory; upload it "
                     "with copy_async before using it in an op",
                     w != NULL && w->name != NULL ? w->name : "?");
}

static sw_status sim_matmul(backend *b, const tensor_view *w, const float *x, float *y,
                            uint32_t n_tokens) {
    sim_backend *s = sim_of(b);
    sw_status st = weight_on_device(s, w);
    return st != SW_OK ? st : s->cpu->vt->matmul(s->cpu, w, x, y, n_tokens);
}

static sw_status sim_get_rows(backend *b, const tensor_view *w, const int32_t *ids,
                              uint32_t n, float *out) {
    sim_backend *s = sim_of(b);
    sw_status st = weight_on_device(s, w);
    return st != SW_OK ? st : s->cpu->vt->get_rows(s->cpu, w, ids, n, out);
}

static void sim_rmsnorm(backend *b, const float *x, const float *w, float *y, uint32_t n,
                        uint32_t n_rows, float eps) {
    backend *cpu = sim_of(b)->cpu;
    cpu->vt->rmsnorm(cpu, x, w, y, n, n_rows, eps);
}

static void sim_rope(backend *b, float *x, const int32_t *pos, uint32_t n_tokens,
                     uint32_t n_heads, uint32_t head_dim, float base, float freq_scale) {
    backend *cpu = sim_of(b)->cpu;
    cpu->vt->rope(cpu, x, pos, n_tokens, n_heads, head_dim, base, freq_scale);
}

static void sim_attention(backend *b, const attn_args *a) {
    backend *cpu = sim_of(b)->cpu;
    cpu->vt->attention(cpu, a);
}

static void sim_geglu(backend *b, const float *gate, const float *up, float *out,
                      uint64_t n) {
    backend *cpu = sim_of(b)->cpu;
    cpu->vt->geglu(cpu, gate, up, out, n);
}

static void sim_softcap(backend *b, float *x, uint64_t n, float cap) {
    backend *cpu = sim_of(b)->cpu;
    cpu->vt->softcap(cpu, x, n, cap);
}

static void sim_add(backend *b, float *x, const float *y, uint64_t n) {
    backend *cpu = sim_of(b)->cpu;
    cpu->vt->add(cpu, x, y, n);
}

static void sim_scale(backend *b, float *x, uint64_t n, float s) {
    backend *cpu = sim_of(b)->cpu;
    cpu->vt->scale(cpu, x, n, s);
}

/* ---- lifecycle --------------------------------------------------------- */

static void sim_get_stats(backend *b, backend_stats *out) {
    sim_backend *s = sim_of(b);
    *out = (backend_stats){.capacity_bytes = s->arena.capacity_bytes};
    sim_arena_stats(&s->arena, &out->in_use_bytes, &out->peak_bytes, &out->n_allocs);
    sim_copier_stats(&s->copier, &out->bytes_to_device, &out->copy_busy_s,
                     &out->wait_stall_s);
}

/* The copier goes first: its thread may be writing into the arena. */
static void sim_destroy(backend *b) {
    sim_backend *s = sim_of(b);
    sim_copier_destroy(&s->copier);
    sim_arena_destroy(&s->arena);
    backend_destroy(s->cpu);
    free(s);
}

static const backend_vtable sim_vtable = {
    .name = "sim",
    .destroy = sim_destroy,
    .alloc = sim_alloc,
    .free = sim_free,
    .copy_async = sim_copy_async,
    .event_create = sim_event_create,
    .event_destroy = sim_event_destroy,
    .event_wait = sim_event_wait,
    .copy_to_host = sim_copy_to_host,
    .copy_to_device = sim_copy_to_device,
    .reset_peak = sim_reset_peak,
    .matmul = sim_matmul,
    .get_rows = sim_get_rows,
    .rmsnorm = sim_rmsnorm,
    .rope = sim_rope,
    .attention = sim_attention,
    .geglu = sim_geglu,
    .softcap = sim_softcap,
    .add = sim_add,
    .scale = sim_scale,
    .get_stats = sim_get_stats,
};

sw_status backend_sim_create(const sim_options *opt, cpu_pool *pool, backend **out) {
    sw_status st;
    sim_backend *s = NULL;
    if (out == NULL || opt == NULL)
        return sw_errorf(SW_ERR_ARG, "backend_sim_create: %s is NULL", out ? "opt" : "out");
    *out = NULL;
    s = calloc(1, sizeof *s);
    if (s == NULL) {
        st = sw_errorf(SW_ERR_OOM_HOST, "sim device: out of host memory");
        goto fail;
    }
    st = backend_cpu_create(pool, opt->max_attn_keys, &s->cpu);
    if (st != SW_OK)
        goto fail;
    st = sim_arena_init(&s->arena, opt->capacity_bytes, opt->fail_alloc_at);
    if (st != SW_OK)
        goto fail;
    st = sim_copier_init(&s->copier, opt->link_bytes_per_s);
    if (st != SW_OK)
        goto fail;
    s->base.vt = &sim_vtable;
    s->base.impl = s;
    *out = &s->base;
    return SW_OK;
fail:
    if (s != NULL) {
        sim_arena_destroy(&s->arena);
        backend_destroy(s->cpu);
    }
    free(s);
    return st;
}
