/*
 * matmul.c — cpu_matmul (y = x·Wᵀ over weights in their stored type) and
 * cpu_get_rows (embedding gather).
 *
 * Threads split output rows (contiguous ranges), never a dot product, and
 * every dot uses the canonical order of qdot.h, so y[t][r] depends only on
 * row r and token t: not on the thread count, n_tokens, the path taken or
 * the ISA. Two paths, chosen for speed only:
 *   direct  (n_tokens < MM_SCRATCH_MIN_TOKENS, and F32 weights): fused
 *           dequantize-and-dot on the stored row, a block at a time;
 *   scratch (prefill): a tile of rows is dequantized once into a per-thread
 *           f32 buffer, then dotted with every token, 4 tokens at a time.
 * The scratch buffer is thread-local, grown once to the largest tile seen
 * and freed when its thread exits; failure to grow gives SW_ERR_OOM_HOST.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/qdot.h"
#include "quant/types.h"
#include "util/error.h"

enum {
    MM_SCRATCH_MIN_TOKENS = 5,    /* below this, re-dequantizing is as cheap */
    MM_TILE_BYTES = 256 * 1024,   /* f32 rows dequantized per tile (L2-sized) */
    MM_TILE_MAX_ROWS = 16,
    MM_TOKENS_PER_DOT = 8,        /* outputs gathered per direct-path call */
    MM_MIN_PARALLEL_MACS = 1 << 16 /* smaller jobs run on the caller alone */
};

/* ---- per-thread scratch ----------------------------------------------- */

static _Thread_local float *tls_scratch;
static _Thread_local size_t tls_scratch_floats;
static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static atomic_bool scratch_key_ok;

/* The key exists only for its destructor: it frees a worker's buffer when
 * the pool joins the worker. */
static void scratch_key_init(void) {
    atomic_store(&scratch_key_ok, pthread_key_create(&scratch_key, free) == 0);
}

/* This thread's buffer of at least n floats, or NULL if it cannot grow. */
static float *mm_scratch(size_t n) {
    if (tls_scratch_floats >= n)
        return tls_scratch;
    pthread_once(&scratch_once, scratch_key_init);
    free(tls_scratch);
    tls_scratch = NULL;
    tls_scratch_floats = 0;
    size_t bytes = (n * sizeof(float) + 63) & ~(size_t)63;
    float *p = aligned_alloc(64, bytes);
    if (p == NULL)
        return NULL;
    tls_scratch = p;
    tls_scratch_floats = n;
    if (atomic_load(&scratch_key_ok))
        pthread_setspecific(scratch_key, p);
    return p;
}

/* ---- the row loops ---------------------------------------------------- */

typedef struct mm_job {
    const cpu_qkernel *k;      /* the weight type's kernels */
    const cpu_qkernel *k_f32;  /* dots over the dequantized scratch rows */
    const uint8_t *w;
    uint64_t row_bytes, ne0, n_rows;
    const float *x;            /* [n_tokens][ne0] */
    float *y;                  /* [n_tokens][n_rows] */
    uint32_t n_tokens;
    bool use_scratch;
    atomic_bool oom;
} mm_job;

/* Dots rows [r0, r1) with all tokens straight from the stored bytes. */
static void mm_rows_direct(const mm_job *j, uint64_t r0, uint64_t r1) {
    float o[MM_TOKENS_PER_DOT];
    for (uint64_t r = r0; r < r1; r++) {
        const uint8_t *row = j->w + r * j->row_bytes;
        for (uint32_t t0 = 0; t0 < j->n_tokens; t0 += MM_TOKENS_PER_DOT) {
            uint32_t nt = j->n_tokens - t0;
            nt = nt < MM_TOKENS_PER_DOT ? nt : MM_TOKENS_PER_DOT;
            j->k->dot(row, j->x + (uint64_t)t0 * j->ne0, j->ne0, nt, j->ne0, o);
            for (uint32_t t = 0; t < nt; t++)
                j->y[(uint64_t)(t0 + t) * j->n_rows + r] = o[t];
        }
    }
}

/* Dots one tile of m dequantized rows (s: [m][ne0]) starting at row r with
 * every token, 4 tokens per pass so each x row is read once per tile. */
static void mm_tile_dot(const mm_job *j, const float *s, uint64_t r, uint64_t m) {
    float o[4];
    for (uint32_t t0 = 0; t0 < j->n_tokens; t0 += 4) {
        uint32_t nt = j->n_tokens - t0 < 4 ? j->n_tokens - t0 : 4;
        const float *xt = j->x + (uint64_t)t0 * j->ne0;
        for (uint64_t i = 0; i < m; i++) {
            j->k_f32->dot((const uint8_t *)(s + i * j->ne0), xt, j->ne0, nt, j->ne0, o);
            for (uint32_t t = 0; t < nt; t++)
                j->y[(uint64_t)(t0 + t) * j->n_rows + r + i] = o[t];
        }
    }
}

/* Prefill path for rows [r0, r1). Returns false if scratch ran out. */
static bool mm_rows_scratch(const mm_job *j, uint64_t r0, uint64_t r1) {
    uint64_t rt = MM_TILE_BYTES / (j->ne0 * sizeof(float));
    rt = rt < 1 ? 1 : (rt > MM_TILE_MAX_ROWS ? MM_TILE_MAX_ROWS : rt);
    float *s = mm_scratch((size_t)(rt * j->ne0));
    if (s == NULL)
        return false;
    for (uint64_t r = r0; r < r1; r += rt) {
        uint64_t m = r1 - r < rt ? r1 - r : rt;
        for (uint64_t i = 0; i < m; i++)
            j->k->dequant(j->w + (r + i) * j->row_bytes, s + i * j->ne0, j->ne0);
        mm_tile_dot(j, s, r, m);
    }
    return true;
}

static void mm_task(void *arg, int ith, int nth) {
    mm_job *j = arg;
    uint64_t r0 = j->n_rows * (uint64_t)ith / (uint64_t)nth;
    uint64_t r1 = j->n_rows * (uint64_t)(ith + 1) / (uint64_t)nth;
    if (r0 == r1)
        return;
    if (!j->use_scratch)
        mm_rows_direct(j, r0, r1);
    else if (!mm_rows_scratch(j, r0, r1))
        atomic_store(&j->oom, true);
}

/* ---- entry points ----------------------------------------------------- */

/* Checks w and finds its kernels and row size. */
static sw_status mm_check_weight(const tensor_view *w, const char *who, const cpu_qkernel **k,
                                 uint64_t *row_bytes) {
    if (w == NULL || w->data == NULL)
        return sw_errorf(SW_ERR_ARG, "%s: weight '%s' is not bound", who,
                         w && w->name ? w->name : "?");
    const char *name = w->name ? w->name : "?";
    *k = cpu_qkernel_get(cpu_isa_best(), w->type);
    if (*k == NULL)
        return sw_errorf(SW_ERR_UNSUPPORTED,
                         "%s: tensor '%s': unsupported tensor type %u (%s) on the CPU "
                         "backend; re-export with --weights q8_0",
                         who, name, (unsigned)w->type, type_name(w->type));
    if (w->ne[0] == 0 || !type_row_bytes(w->type, w->ne[0], row_bytes))
        return sw_errorf(SW_ERR_ARG, "%s: tensor '%s': row of %llu elements is not whole %s "
                         "blocks", who, name, (unsigned long long)w->ne[0], type_name(w->type));
    if (w->ne[1] > w->n_bytes / *row_bytes)
        return sw_errorf(SW_ERR_ARG, "%s: tensor '%s': %llu rows of %llu bytes exceed its "
                         "%llu bytes", who, name, (unsigned long long)w->ne[1],
                         (unsigned long long)*row_bytes, (unsigned long long)w->n_bytes);
    return SW_OK;
}

sw_status cpu_matmul(cpu_pool *pool, const tensor_view *w, const float *x, float *y,
                     uint32_t n_tokens) {
    const cpu_qkernel *k = NULL;
    uint64_t row_bytes = 0;
    sw_status st = mm_check_weight(w, "cpu_matmul", &k, &row_bytes);
    if (st != SW_OK)
        return st;
    if (n_tokens == 0 || w->ne[1] == 0)
        return SW_OK;
    if (x == NULL || y == NULL)
        return sw_errorf(SW_ERR_ARG, "cpu_matmul: NULL %s", x == NULL ? "x" : "y");
    mm_job job = {
        .k = k, .k_f32 = cpu_qkernel_get(cpu_isa_best(), SW_TYPE_F32), .w = w->data,
        .row_bytes = row_bytes, .ne0 = w->ne[0], .n_rows = w->ne[1], .x = x, .y = y,
        .n_tokens = n_tokens,
        .use_scratch = n_tokens >= MM_SCRATCH_MIN_TOKENS && w->type != SW_TYPE_F32,
    };
    atomic_init(&job.oom, false);
    if ((double)job.ne0 * (double)job.n_rows * n_tokens < MM_MIN_PARALLEL_MACS)
        mm_task(&job, 0, 1);
    else
        cpu_pool_run(pool, mm_task, &job);
    if (atomic_load(&job.oom)) {
        uint64_t rt = MM_TILE_BYTES / (job.ne0 * sizeof(float));
        rt = rt < 1 ? 1 : (rt > MM_TILE_MAX_ROWS ? MM_TILE_MAX_ROWS : rt);
        return sw_errorf(SW_ERR_OOM_HOST,
                         "cpu_matmul: tensor '%s': could not allocate %llu bytes of "
                         "per-thread scratch (host memory)",
                         w->name ? w->name : "?",
                         (unsigned long long)(rt * job.ne0 * sizeof(float)));
    }
    return SW_OK;
}

sw_status cpu_get_rows(const tensor_view *w, const int32_t *ids, uint32_t n, float *out) {
    const cpu_qkernel *k = NULL;
    uint64_t row_bytes = 0;
    sw_status st = mm_check_weight(w, "cpu_get_rows", &k, &row_bytes);
    if (st != SW_OK)
        return st;
    if (n == 0)
        return SW_OK;
    if (ids == NULL || out == NULL)
        return sw_errorf(SW_ERR_ARG, "cpu_get_rows: NULL %s", ids == NULL ? "ids" : "out");
    for (uint32_t t = 0; t < n; t++)
        if (ids[t] < 0 || (uint64_t)ids[t] >= w->ne[1])
            return sw_errorf(SW_ERR_ARG,
                             "cpu_get_rows: tensor '%s': id %ld at index %u is outside "
                             "[0, %llu)", w->name ? w->name : "?", (long)ids[t], t,
                             (unsigned long long)w->ne[1]);
    const uint8_t *base = w->data;
    for (uint32_t t = 0; t < n; t++)
        k->dequant(base + (uint64_t)ids[t] * row_bytes, out + (uint64_t)t * w->ne[0], w->ne[0]);
    return SW_OK;
}
