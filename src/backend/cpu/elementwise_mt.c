/*
 * elementwise_mt.c — the row-local kernels of elementwise.c spread over
 * the thread pool when they are big enough to pay for the hand-off (a
 * prefill chunk's GeGLU, norms over many rows, a soft-capped vocabulary).
 * Each thread takes a contiguous range of whole rows or elements, and
 * every element is computed by the same code as single-threaded, so the
 * results are the same bits for any thread count.
 */
#include "backend/cpu/cpu_ops.h"

enum {
    MT_MIN_ELEMS = 1 << 14, /* below this one thread is faster than a hand-off */
    MT_ALIGN = 16           /* element ranges start on 64 bytes */
};

typedef struct mt_job {
    int kind; /* 0 geglu, 1 rmsnorm, 2 softcap */
    const float *a, *b;
    float *out;
    uint64_t n;       /* elements (geglu, softcap) or row length (rmsnorm) */
    uint32_t n_rows;  /* rmsnorm */
    float p;          /* eps or cap */
} mt_job;

static uint64_t mt_split(uint64_t n, int ith, int nth) {
    const uint64_t e = n * (uint64_t)ith / (uint64_t)nth;
    return ith == nth ? n : e / MT_ALIGN * MT_ALIGN;
}

static void mt_task(void *arg, int ith, int nth) {
    const mt_job *j = arg;
    if (j->kind == 1) {
        const uint64_t r0 = (uint64_t)j->n_rows * (uint64_t)ith / (uint64_t)nth;
        const uint64_t r1 = (uint64_t)j->n_rows * (uint64_t)(ith + 1) / (uint64_t)nth;
        if (r0 < r1)
            cpu_rmsnorm(j->a + r0 * j->n, j->b, j->out + r0 * j->n, (uint32_t)j->n,
                        (uint32_t)(r1 - r0), j->p);
        return;
    }
    const uint64_t i0 = mt_split(j->n, ith, nth), i1 = mt_split(j->n, ith + 1, nth);
    if (i0 >= i1)
        return;
    if (j->kind == 0)
        cpu_geglu(j->a + i0, j->b + i0, j->out + i0, i1 - i0);
    else
        cpu_softcap(j->out + i0, i1 - i0, j->p);
}

static void mt_run(cpu_pool *pool, mt_job *j, uint64_t total) {
    if (cpu_pool_size(pool) > 1 && total >= MT_MIN_ELEMS)
        cpu_pool_run(pool, mt_task, j);
    else
        mt_task(j, 0, 1);
}

void cpu_geglu_mt(cpu_pool *pool, const float *gate, const float *up, float *out, uint64_t n) {
    mt_job j = {.kind = 0, .a = gate, .b = up, .out = out, .n = n};
    mt_run(pool, &j, n);
}

void cpu_rmsnorm_mt(cpu_pool *pool, const float *x, const float *w, float *y, uint32_t n,
                    uint32_t n_rows, float eps) {
    mt_job j = {.kind = 1, .a = x, .b = w, .out = y, .n = n, .n_rows = n_rows, .p = eps};
    mt_run(pool, &j, n_rows > 1 ? (uint64_t)n * n_rows : 0);
}

void cpu_softcap_mt(cpu_pool *pool, float *x, uint64_t n, float cap) {
    if (cap == 0.0f)
        return;
    mt_job j = {.kind = 2, .out = x, .n = n, .p = cap};
    mt_run(pool, &j, n);
}
