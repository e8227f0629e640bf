/*
 * matmul.c — cpu_matmul (y = x·Wᵀ over weights in their stored type),
 * its workspace, and cpu_get_rows (embedding gather).
 *
 * Threads split output rows (contiguous ranges), never a dot product, and
 * every dot uses one canonical order, so y[t][r] depends only on row r and
 * token t: not on the thread count, n_tokens, the path taken or the ISA.
 *
 * Block types with an integer kernel (idot.h: Q4_0, Q5_0, Q8_0, Q4_1,
 * Q5_1, Q4_K, Q5_K, Q6_K), unless the workspace is exact (--cpu-dots f32):
 *   the tokens are quantized to 8 bits per block (qact.h) a chunk at a
 *   time into the workspace (mm_qchunk_tokens), then dotted in
 *   integers: one token as one kernel call over the thread's whole row
 *   range; more tokens a block of rows at a time, each group of up to 4
 *   tokens passing over the block while it is in L1, each block unpacked
 *   (idot.h: int8 values for the 32-element types, bytes and ready scale
 *   registers for the K types) once so the groups pay only multiply-adds.
 * BF16 weights with a bf16 workspace (--cpu-dots bf16; rows of whole
 * 32-element blocks): the tokens are rounded to bf16 a chunk at a time
 * into the workspace and dotted by bdot.h's kernels straight from the
 * stored rows (nothing to unpack): one token as one call over the
 * thread's rows, more a block of rows at a time against the whole chunk.
 * Every other type (and all of them when exact), f32 activations:
 *   direct  (one token, or rows that are not whole 16-lane chunks): fused
 *           dequantize-and-dot on the stored row, a block at a time (one
 *           token: the thread's rows in one `rows` call where the type has
 *           one, F16 and BF16, which prefetches and runs rows side by side);
 *   tiled   (2 or more tokens): a tile of rows is dequantized once into
 *           the thread's slice of the caller's workspace, then dotted with
 *           every token by the register-blocked tile kernel of qdot.h.
 * The workspace is made once by the caller (cpu_mm_scratch_create), so no
 * call allocates.
 */
#include <stdlib.h>

#include "backend/cpu/bdot.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/idot.h"
#include "backend/cpu/qact.h"
#include "backend/cpu/qdot.h"
#include "quant/types.h"
#include "util/error.h"

enum {
    MM_TILED_MIN_TOKENS = 2,      /* one token streams its rows once anyway */
    MM_TILE_BYTES = 64 * 1024,    /* f32 rows dequantized per tile (L2-resident) */
    MM_TILE_MIN_ROWS = 8,         /* a full block of the tile kernel's widest shape */
    MM_TILE_ROW_UNIT = 24,        /* whole blocks of 3, 4 and 8 rows */
    MM_TILE_MAX_ROWS = 96,
    MM_TOKENS_PER_DOT = 8,        /* outputs gathered per direct-path call */
    MM_MIN_PARALLEL_MACS = 1 << 16, /* smaller jobs run on the caller alone */
    MM_QCHUNK_TOKENS = 64,        /* the workspace holds this many of the widest rows */
    MM_QCHUNK_BYTES = 512 * 1024, /* a round's quantized tokens, kept in L2 */
    MM_QROW_BLOCK_BYTES = 16 * 1024, /* weight rows dotted with a group of tokens */
    MM_QROW_BLOCK_MIN_ROWS = 6,   /* whole tiles of either shape (2 or 3 rows) */
    MM_QTILE_TOKENS = 16,         /* tokens per tile call, between prefetches */
    MM_QPAR_QUANT_ELEMS = 1 << 15, /* quantize on all threads from this many elements */
    MM_STACK_QROW_BYTES = 16 * 1024 /* one token without a workspace: on the stack */
};

/* ---- the workspace ---------------------------------------------------- */

/* What the workspace's activation buffer holds: all n_tokens rows of x
 * (ne0 elements each) prepared in form `form` (a cpu_qact_fmt, or
 * MM_FORM_BF16), or nothing (x == NULL). Only a call whose tokens fit in
 * one chunk leaves it set; every other call that writes the buffer clears
 * it. */
typedef struct mm_held {
    const float *x;
    uint64_t ne0;
    uint32_t n_tokens;
    int form;
} mm_held;

enum { MM_FORM_BF16 = -1 };

struct cpu_mm_scratch {
    int n_threads;
    uint64_t max_ne0;
    uint64_t slice_floats; /* per thread; a multiple of 16 (64 bytes) */
    float *data;           /* (n_threads, slice_floats), 64-byte aligned */
    uint8_t *act;          /* MM_QCHUNK_TOKENS quantized rows of act_stride */
    uint64_t act_stride;
    bool exact;            /* f32 activations only */
    bool bf16;             /* bf16 weights take bf16 activations */
    mm_held held;          /* what act holds, for CPU_MM_X_AGAIN */
    uint64_t rows_prepared; /* activation rows quantized or rounded so far */
};

/* Bytes of one quantized activation row of up to max_ne0 elements, either
 * format (CPU_QACT_32, a scale per 32, is the larger). The bf16 path puts
 * fewer, longer rows in the same buffer (mm_bmatmul). */
static uint64_t mm_act_stride(uint64_t max_ne0) { return cpu_qact_stride(CPU_QACT_32, max_ne0); }

/* Rows per tile for rows of ne0 elements: about MM_TILE_BYTES of f32, in
 * whole blocks of MM_TILE_ROW_UNIT where that fits (the tile kernel's
 * blocks are 3, 4 or 8 rows; narrower tail blocks are slower). */
static uint64_t mm_tile_rows(uint64_t ne0) {
    uint64_t rt = MM_TILE_BYTES / (ne0 * sizeof(float));
    if (rt >= MM_TILE_ROW_UNIT)
        rt = rt / MM_TILE_ROW_UNIT * MM_TILE_ROW_UNIT;
    rt = rt < MM_TILE_MIN_ROWS ? MM_TILE_MIN_ROWS : rt;
    return rt > MM_TILE_MAX_ROWS ? MM_TILE_MAX_ROWS : rt;
}

/* The slice holds MM_QROW_BLOCK_MIN_ROWS unpacked rows of any width it
 * takes (at most CPU_IDOT_UK_BYTES per 256 elements). */
_Static_assert(MM_TILE_MIN_ROWS * sizeof(float) * 256 >= MM_QROW_BLOCK_MIN_ROWS * CPU_IDOT_UK_BYTES,
               "a thread slice holds a minimal block of unpacked rows");

/* Floats per thread slice for rows of up to max_ne0 elements, or 0 on
 * overflow. A tile takes at most max(MM_TILE_BYTES, MM_TILE_MIN_ROWS
 * rows) for any ne0 <= max_ne0 (see mm_tile_rows). */
static uint64_t mm_slice_floats(uint64_t max_ne0) {
    if (max_ne0 > (UINT64_MAX / sizeof(float) - 64) / MM_TILE_MIN_ROWS)
        return 0;
    uint64_t f = MM_TILE_MIN_ROWS * max_ne0;
    if (f < MM_TILE_BYTES / sizeof(float))
        f = MM_TILE_BYTES / sizeof(float);
    return (f + 15) / 16 * 16;
}

uint64_t cpu_mm_scratch_bytes(int n_threads, uint64_t max_ne0) {
    const uint64_t f = mm_slice_floats(max_ne0);
    const uint64_t limit = (SIZE_MAX - sizeof(cpu_mm_scratch)) / 2;
    if (n_threads < 1 || max_ne0 == 0 || f == 0 ||
        f > limit / sizeof(float) / (uint64_t)n_threads ||
        max_ne0 > limit / 2 / MM_QCHUNK_TOKENS)
        return 0;
    return f * sizeof(float) * (uint64_t)n_threads + MM_QCHUNK_TOKENS * mm_act_stride(max_ne0) +
           sizeof(cpu_mm_scratch);
}

sw_status cpu_mm_scratch_create(int n_threads, uint64_t max_ne0, cpu_mm_scratch **out) {
    if (out == NULL)
        return sw_errorf(SW_ERR_ARG, "cpu_mm_scratch_create: out is NULL");
    *out = NULL;
    const uint64_t bytes = cpu_mm_scratch_bytes(n_threads, max_ne0);
    if (bytes == 0)
        return sw_errorf(SW_ERR_ARG, "cpu_mm_scratch_create: %d threads, rows of %llu elements: "
                         "need at least 1 thread and 1 element, within size_t",
                         n_threads, (unsigned long long)max_ne0);
    cpu_mm_scratch *ws = calloc(1, sizeof *ws);
    const uint64_t act_bytes = MM_QCHUNK_TOKENS * mm_act_stride(max_ne0);
    const size_t data_bytes = (size_t)(bytes - sizeof *ws - act_bytes);
    float *data = ws != NULL ? aligned_alloc(64, data_bytes) : NULL;
    uint8_t *act = data != NULL ? aligned_alloc(64, (size_t)act_bytes) : NULL;
    if (act == NULL) {
        free(data);
        free(ws);
        return sw_errorf(SW_ERR_OOM_HOST, "cpu_mm_scratch_create: out of host memory: "
                         "requested %llu bytes of matmul workspace (%d threads, rows of %llu)",
                         (unsigned long long)bytes, n_threads, (unsigned long long)max_ne0);
    }
    *ws = (cpu_mm_scratch){.n_threads = n_threads, .max_ne0 = max_ne0,
                           .slice_floats = mm_slice_floats(max_ne0), .data = data,
                           .act = act, .act_stride = mm_act_stride(max_ne0)};
    *out = ws;
    return SW_OK;
}

void cpu_mm_scratch_set_exact(cpu_mm_scratch *ws, bool exact) {
    if (ws != NULL)
        ws->exact = exact;
}

void cpu_mm_scratch_set_bf16(cpu_mm_scratch *ws, bool bf16) {
    if (ws != NULL)
        ws->bf16 = bf16;
}

uint64_t cpu_mm_scratch_rows_prepared(const cpu_mm_scratch *ws) {
    return ws != NULL ? ws->rows_prepared : 0;
}

void cpu_mm_scratch_destroy(cpu_mm_scratch *ws) {
    if (ws == NULL)
        return;
    free(ws->data);
    free(ws->act);
    free(ws);
}

/* ---- the row loops ---------------------------------------------------- */

typedef struct mm_job {
    const cpu_qkernel *k;      /* the weight type's kernels */
    cpu_tile_f32_fn tile;      /* dots over the dequantized tile */
    const uint8_t *w;
    uint64_t row_bytes, ne0, n_rows;
    const float *x;            /* [n_tokens][ne0] */
    float *y;                  /* [n_tokens][n_rows] */
    uint32_t n_tokens;
    cpu_mm_scratch *ws;        /* NULL: the direct path */
} mm_job;

/* Thread ith's share [*a, *b) of n items split over nth threads
 * (contiguous, in order). */
static void mm_share(uint64_t n, int ith, int nth, uint64_t *a, uint64_t *b) {
    *a = n * (uint64_t)ith / (uint64_t)nth;
    *b = n * (uint64_t)(ith + 1) / (uint64_t)nth;
}

/* Whether ws's activation buffer already holds x's n_tokens rows in
 * `form`; then a CPU_MM_X_AGAIN call skips preparing them. */
static bool mm_holds(const cpu_mm_scratch *ws, const float *x, uint64_t ne0, uint32_t n_tokens,
                     int form) {
    return ws != NULL && ws->held.x == x && ws->held.ne0 == ne0 &&
           ws->held.n_tokens == n_tokens && ws->held.form == form;
}

/* Records what the buffer holds after a call that prepared n_tokens rows
 * of x in chunks of `chunk`: all of them when they fit one chunk, else
 * only the last chunk's (recorded as nothing). */
static void mm_hold(cpu_mm_scratch *ws, const float *x, uint64_t ne0, uint32_t n_tokens,
                    int form, uint32_t chunk) {
    if (ws != NULL)
        ws->held = n_tokens <= chunk ? (mm_held){x, ne0, n_tokens, form} : (mm_held){0};
}

/* One chunk of tokens of an activation path: `prep` (quantize or round
 * the activations, a share of the tokens per thread; NULL when the buffer
 * already holds them) on all threads once there are prep_elems >=
 * MM_QPAR_QUANT_ELEMS, then `dots` (a share of the rows per thread) on
 * all threads unless the job is smaller than MM_MIN_PARALLEL_MACS. */
static void mm_run_chunk(cpu_pool *pool, cpu_task_fn prep, cpu_task_fn dots, void *job,
                         uint64_t prep_elems, double macs) {
    if (prep != NULL && prep_elems >= MM_QPAR_QUANT_ELEMS)
        cpu_pool_run(pool, prep, job);
    else if (prep != NULL)
        prep(job, 0, 1);
    if (macs < MM_MIN_PARALLEL_MACS)
        dots(job, 0, 1);
    else
        cpu_pool_run(pool, dots, job);
}

/* Dots rows [r0, r1) with all tokens straight from the stored bytes. */
static void mm_rows_direct(const mm_job *j, uint64_t r0, uint64_t r1) {
    float o[MM_TOKENS_PER_DOT];
    if (j->n_tokens == 1 && j->k->rows != NULL) { /* decode: all rows in one call */
        j->k->rows(j->w + r0 * j->row_bytes, j->row_bytes, r1 - r0, j->x, j->ne0, j->y + r0);
        return;
    }
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

/* Tiled path for rows [r0, r1), in the slice s of the workspace: each
 * tile of rows is dequantized once and dotted with every token. */
static void mm_rows_tiled(const mm_job *j, float *s, uint64_t r0, uint64_t r1) {
    const uint64_t rt = mm_tile_rows(j->ne0);
    for (uint64_t r = r0; r < r1; r += rt) {
        const uint64_t m = r1 - r < rt ? r1 - r : rt;
        for (uint64_t i = 0; i < m; i++)
            j->k->dequant(j->w + (r + i) * j->row_bytes, s + i * j->ne0, j->ne0);
        j->tile(s, j->ne0, (uint32_t)m, j->x, j->ne0, j->n_tokens, j->ne0, j->y + r, j->n_rows);
    }
}

/* ---- the integer path (block-quantized weights) ----------------------- */

typedef struct mm_qjob {
    const cpu_idot *k;
    const uint8_t *w;
    uint64_t row_bytes, ne0, n_rows;
    const float *x;            /* the tokens to quantize: [n_tokens][ne0] */
    uint8_t *xq;               /* quantized, rows xq_stride apart */
    uint64_t xq_stride;
    float *y;                  /* [n_tokens][n_rows], at the chunk's first token */
    uint32_t n_tokens;
    cpu_mm_scratch *ws;        /* slices for unpacked rows; NULL: none */
} mm_qjob;

/* Prefetches bytes [a, b) of p into the caches, a line at a time. */
static void mm_prefetch(const uint8_t *p, uint64_t a, uint64_t b) {
    for (uint64_t i = a; i < b; i += 64)
        __builtin_prefetch(p + i, 0, 2);
}

/* y for rows [rs, re) (at base, rbytes apart) and tokens [t0, t0 + nt):
 * the kernel's tile where it has one, else its dot per row and group of
 * up to CPU_IDOT_MAX_X tokens. */
static void mm_qdots(const mm_qjob *j, cpu_idot_fn dot, cpu_idot_tile_fn tile,
                     const uint8_t *base, uint64_t rbytes, uint64_t rs, uint64_t re,
                     uint32_t t0, uint32_t nt) {
    const uint8_t *xq = j->xq + (uint64_t)t0 * j->xq_stride;
    if (tile != NULL) {
        tile(base, rbytes, (uint32_t)(re - rs), xq, j->xq_stride, nt, j->ne0,
             j->y + (uint64_t)t0 * j->n_rows + rs, j->n_rows);
        return;
    }
    float o[CPU_IDOT_MAX_X];
    for (uint32_t g = 0; g < nt; g += CPU_IDOT_MAX_X) {
        const uint32_t ng = nt - g < CPU_IDOT_MAX_X ? nt - g : CPU_IDOT_MAX_X;
        for (uint64_t r = rs; r < re; r++) {
            dot(base + (r - rs) * rbytes, xq + (uint64_t)g * j->xq_stride, j->xq_stride, ng,
                j->ne0, o);
            for (uint32_t t = 0; t < ng; t++)
                j->y[(uint64_t)(t0 + g + t) * j->n_rows + r] = o[t];
        }
    }
}

/* Rows [rs, re) with all tokens, MM_QTILE_TOKENS at a time; between
 * those, a share of the next row block's stored bytes (up to r1) is
 * prefetched, so its unpacking finds them in cache rather than waiting on
 * memory (the weights stream from RAM once per token chunk, and the
 * unpacking would otherwise stall on every line). */
static void mm_qblock(const mm_qjob *j, cpu_idot_fn dot, cpu_idot_tile_fn tile,
                      const uint8_t *base, uint64_t rbytes, uint64_t rs, uint64_t re,
                      uint64_t r1) {
    const uint8_t *next = j->w + re * j->row_bytes;
    const uint64_t rb = re - rs, nn = (r1 - re < rb ? r1 - re : rb) * j->row_bytes;
    const uint32_t parts = (j->n_tokens + MM_QTILE_TOKENS - 1) / MM_QTILE_TOKENS;
    for (uint32_t i = 0, t0 = 0; t0 < j->n_tokens; i++, t0 += MM_QTILE_TOKENS) {
        const uint32_t nt = j->n_tokens - t0 < MM_QTILE_TOKENS ? j->n_tokens - t0
                                                                : MM_QTILE_TOKENS;
        mm_qdots(j, dot, tile, base, rbytes, rs, re, t0, nt);
        mm_prefetch(next, nn * i / parts, nn * (i + 1) / parts);
    }
}

/* Rows [r0, r1) with all tokens of the job: a block of rows at a time
 * (small enough to stay in L1 while every group of up to
 * CPU_IDOT_MAX_X tokens passes over it). With more tokens than one group
 * and a type that has an unpacked form, the block is first unpacked into
 * the thread's slice `s`, so each weight is decoded once, not once per
 * group. */
static void mm_qrows(const mm_qjob *j, uint8_t *s, uint64_t r0, uint64_t r1) {
    if (j->n_tokens == 1) { /* decode: all rows in one call; y is [n_rows] */
        j->k->rows(j->w + r0 * j->row_bytes, j->row_bytes, r1 - r0, j->xq, j->ne0, j->y + r0);
        return;
    }
    const bool unpack = s != NULL && j->k->unpack != NULL && j->n_tokens > CPU_IDOT_MAX_X;
    const uint64_t rbytes =
        unpack ? j->ne0 / j->k->unpack_elems * j->k->unpack_bytes : j->row_bytes;
    uint64_t rb = MM_QROW_BLOCK_BYTES / rbytes;
    /* at least whole tiles even where they overflow L1 (rows wider than
     * about 6000: the down projection's): a tile of one row loads each
     * activation for one dot, and ran 25-60% slower than two or three */
    if (rb < MM_QROW_BLOCK_MIN_ROWS)
        rb = MM_QROW_BLOCK_MIN_ROWS;
    if (j->n_tokens <= CPU_IDOT_MAX_X)
        rb = 1;
    const cpu_idot_fn dot = unpack ? j->k->unpacked_dot : j->k->dot;
    const cpu_idot_tile_fn tile = unpack ? j->k->unpacked_tile : NULL;
    for (uint64_t rs = r0; rs < r1; rs += rb) {
        const uint64_t re = r1 - rs < rb ? r1 : rs + rb;
        const uint8_t *base = j->w + rs * j->row_bytes;
        if (unpack) {
            for (uint64_t r = rs; r < re; r++)
                j->k->unpack(j->w + r * j->row_bytes, j->ne0, s + (r - rs) * rbytes);
            base = s;
        }
        mm_qblock(j, dot, tile, base, rbytes, rs, re, r1);
    }
}

static void mm_qtask(void *arg, int ith, int nth) {
    const mm_qjob *j = arg;
    uint64_t r0, r1;
    mm_share(j->n_rows, ith, nth, &r0, &r1);
    uint8_t *s = j->ws != NULL ? (uint8_t *)(j->ws->data + (uint64_t)ith * j->ws->slice_floats)
                               : NULL;
    if (r0 < r1)
        mm_qrows(j, s, r0, r1);
}

/* Thread ith quantizes its share of the job's tokens. */
static void mm_qquant_task(void *arg, int ith, int nth) {
    const mm_qjob *j = arg;
    uint64_t t0, t1;
    mm_share(j->n_tokens, ith, nth, &t0, &t1);
    if (t0 < t1)
        cpu_qact_quantize(j->k->fmt, j->x + t0 * j->ne0, j->ne0, (uint32_t)(t1 - t0),
                          j->xq + t0 * j->xq_stride);
}

/* Tokens per round of the integer path for quantized rows of `stride`
 * bytes: as many as fit MM_QCHUNK_BYTES (the round's rows stay in L2
 * while each block of weight rows passes over them) and the workspace's
 * buffer, which holds MM_QCHUNK_TOKENS of the widest rows, so the
 * narrower inputs over the hidden size (Q, K, V, gate, up) take several
 * times as many. Each round unpacks every weight row again and streams it
 * from memory again: fewer rounds, less of both. Never fewer tokens than
 * the buffer's MM_QCHUNK_TOKENS, where they fit. */
static uint32_t mm_qchunk_tokens(const cpu_mm_scratch *ws, uint64_t stride) {
    const uint64_t fit = MM_QCHUNK_TOKENS * ws->act_stride / stride;
    uint64_t c = MM_QCHUNK_BYTES / stride;
    c = c < MM_QCHUNK_TOKENS ? MM_QCHUNK_TOKENS : c;
    c = c > fit ? fit : c;
    return c > UINT32_MAX ? UINT32_MAX : (uint32_t)c;
}

/* The integer path: tokens a chunk at a time, each chunk quantized into
 * the workspace (or, for one token without one, onto the stack), then
 * dotted with the rows split over the threads. With `again`, tokens the
 * workspace already holds quantized in this kernel's form (the previous
 * matmul's same input: Q, K and V; gate and up) are not quantized again. */
static sw_status mm_qmatmul(cpu_pool *pool, cpu_mm_scratch *ws, const tensor_view *w,
                            const cpu_idot *k, uint64_t row_bytes, const float *x, float *y,
                            uint32_t n_tokens, bool again) {
    _Alignas(64) uint8_t stack_row[MM_STACK_QROW_BYTES];
    const uint64_t ne0 = w->ne[0], stride = cpu_qact_stride(k->fmt, ne0);
    uint8_t *buf = stack_row;
    uint32_t chunk = 1;
    if (ws != NULL) {
        buf = ws->act;
        chunk = mm_qchunk_tokens(ws, stride);
    } else if (n_tokens > 1 || stride > sizeof stack_row) {
        return sw_errorf(SW_ERR_ARG, "cpu_matmul: tensor '%s', %u token(s) of %llu elements: "
                         "no workspace; make one with cpu_mm_scratch_create",
                         w->name ? w->name : "?", n_tokens, (unsigned long long)ne0);
    }
    const bool held = again && mm_holds(ws, x, ne0, n_tokens, (int)k->fmt);
    for (uint32_t t0 = 0; t0 < n_tokens; t0 += chunk) {
        const uint32_t nt = n_tokens - t0 < chunk ? n_tokens - t0 : chunk;
        mm_qjob job = {.k = k, .w = w->data, .row_bytes = row_bytes, .ne0 = ne0,
                       .n_rows = w->ne[1], .x = x + (uint64_t)t0 * ne0, .xq = buf,
                       .xq_stride = stride,
                       .y = y + (uint64_t)t0 * w->ne[1], .n_tokens = nt, .ws = ws};
        mm_run_chunk(pool, held ? NULL : mm_qquant_task, mm_qtask, &job, (uint64_t)nt * ne0,
                     (double)ne0 * (double)job.n_rows * nt);
        if (ws != NULL && !held)
            ws->rows_prepared += nt;
    }
    mm_hold(ws, x, ne0, n_tokens, (int)k->fmt, chunk);
    return SW_OK;
}

/* ---- the bf16 path (bf16 weights, bf16 activations) ------------------ */

typedef struct mm_bjob {
    const cpu_bdot *k;
    const uint8_t *w;
    uint64_t row_bytes, ne0, n_rows;
    const float *x;            /* the tokens to round: [n_tokens][ne0] */
    uint16_t *xb;              /* rounded, rows xb_stride elements apart */
    uint64_t xb_stride;
    float *y;                  /* [n_tokens][n_rows], at the chunk's first token */
    uint32_t n_tokens;
} mm_bjob;

static void mm_bround_task(void *arg, int ith, int nth) {
    const mm_bjob *j = arg;
    uint64_t t0, t1;
    mm_share(j->n_tokens, ith, nth, &t0, &t1);
    for (uint64_t t = t0; t < t1; t++)
        cpu_bf16_round(j->x + t * j->ne0, j->ne0, j->xb + t * j->xb_stride);
}

/* Rows split over the threads; more than one token a block of rows (in
 * L1/L2 while the chunk's tokens pass) at a time. */
static void mm_btask(void *arg, int ith, int nth) {
    const mm_bjob *j = arg;
    uint64_t r0, r1;
    mm_share(j->n_rows, ith, nth, &r0, &r1);
    if (r0 >= r1)
        return;
    if (j->n_tokens == 1) {
        j->k->rows(j->w + r0 * j->row_bytes, j->row_bytes, r1 - r0, j->xb, j->ne0, j->y + r0);
        return;
    }
    uint64_t rb = MM_QROW_BLOCK_BYTES / j->row_bytes;
    rb = rb < 4 ? 4 : rb / 4 * 4; /* whole 4-row tiles */
    for (uint64_t rs = r0; rs < r1; rs += rb) {
        const uint64_t re = r1 - rs < rb ? r1 : rs + rb;
        j->k->tile(j->w + rs * j->row_bytes, j->row_bytes, (uint32_t)(re - rs), j->xb,
                   j->xb_stride, j->n_tokens, j->ne0, j->y + rs, j->n_rows);
    }
}

/* The bf16 path: tokens a chunk at a time, rounded into the workspace's
 * activation buffer (MM_QCHUNK_TOKENS rows of 8-bit activations, at least
 * 1.125 bytes per element, so it holds at least 32 bf16 rows: the plan's
 * workspace bytes are the same in every mode), then dotted with the rows
 * split over the threads. */
static void mm_bmatmul(cpu_pool *pool, cpu_mm_scratch *ws, const tensor_view *w,
                       uint64_t row_bytes, const float *x, float *y, uint32_t n_tokens,
                       bool again) {
    const uint64_t ne0 = w->ne[0], stride = (2 * ne0 + 63) / 64 * 64; /* bytes */
    uint64_t chunk = MM_QCHUNK_TOKENS * ws->act_stride / stride;
    chunk = chunk > MM_QCHUNK_TOKENS ? MM_QCHUNK_TOKENS : chunk;
    const bool held = again && mm_holds(ws, x, ne0, n_tokens, MM_FORM_BF16);
    for (uint32_t t0 = 0; t0 < n_tokens; t0 += (uint32_t)chunk) {
        const uint32_t nt = n_tokens - t0 < chunk ? n_tokens - t0 : (uint32_t)chunk;
        mm_bjob job = {.k = cpu_bdot_get(cpu_isa_best()), .w = w->data, .row_bytes = row_bytes,
                       .ne0 = ne0, .n_rows = w->ne[1], .x = x + (uint64_t)t0 * ne0,
                       .xb = (uint16_t *)(void *)ws->act, .xb_stride = stride / 2,
                       .y = y + (uint64_t)t0 * w->ne[1], .n_tokens = nt};
        mm_run_chunk(pool, held ? NULL : mm_bround_task, mm_btask, &job, (uint64_t)nt * ne0,
                     (double)ne0 * (double)job.n_rows * nt);
        if (!held)
            ws->rows_prepared += nt;
    }
    mm_hold(ws, x, ne0, n_tokens, MM_FORM_BF16, (uint32_t)chunk);
}

static void mm_task(void *arg, int ith, int nth) {
    const mm_job *j = arg;
    uint64_t r0, r1;
    mm_share(j->n_rows, ith, nth, &r0, &r1);
    if (r0 == r1)
        return;
    if (j->ws == NULL)
        mm_rows_direct(j, r0, r1);
    else
        mm_rows_tiled(j, j->ws->data + (uint64_t)ith * j->ws->slice_floats, r0, r1);
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

/* Whether ws serves the tiled path for this pool and weight. */
static sw_status mm_check_scratch(const cpu_mm_scratch *ws, const cpu_pool *pool,
                                  const tensor_view *w, uint32_t n_tokens) {
    const char *name = w->name ? w->name : "?";
    if (ws == NULL)
        return sw_errorf(SW_ERR_ARG, "cpu_matmul: tensor '%s', %u tokens: no workspace; "
                         "make one with cpu_mm_scratch_create", name, n_tokens);
    if (ws->n_threads < cpu_pool_size(pool))
        return sw_errorf(SW_ERR_ARG, "cpu_matmul: tensor '%s': workspace has slices for %d "
                         "thread(s), the pool has %d; create it with cpu_pool_size(pool)",
                         name, ws->n_threads, cpu_pool_size(pool));
    if (w->ne[0] > ws->max_ne0)
        return sw_errorf(SW_ERR_ARG, "cpu_matmul: tensor '%s': rows of %llu elements exceed "
                         "the workspace's %llu; create it with max_ne0 >= %llu", name,
                         (unsigned long long)w->ne[0], (unsigned long long)ws->max_ne0,
                         (unsigned long long)w->ne[0]);
    return SW_OK;
}

sw_status cpu_matmul_as(cpu_pool *pool, cpu_mm_scratch *ws, const tensor_view *w,
                        const float *x, float *y, uint32_t n_tokens, unsigned flags) {
    const bool fine = (flags & CPU_MM_FINE) != 0, again = (flags & CPU_MM_X_AGAIN) != 0;
    const cpu_qkernel *k = NULL;
    uint64_t row_bytes = 0;
    sw_status st = mm_check_weight(w, "cpu_matmul", &k, &row_bytes);
    if (st != SW_OK)
        return st;
    if (n_tokens == 0 || w->ne[1] == 0)
        return SW_OK;
    if (x == NULL || y == NULL)
        return sw_errorf(SW_ERR_ARG, "cpu_matmul: NULL %s", x == NULL ? "x" : "y");
    const cpu_idot *ik = ws != NULL && ws->exact ? NULL
                         : fine ? cpu_idot_get_fine(cpu_isa_best(), w->type)
                                : cpu_idot_get(cpu_isa_best(), w->type);
    if (ik != NULL) {
        if (ws != NULL && (st = mm_check_scratch(ws, pool, w, n_tokens)) != SW_OK)
            return st;
        return mm_qmatmul(pool, ws, w, ik, row_bytes, x, y, n_tokens, again);
    }
    if (ws != NULL && ws->bf16 && !ws->exact && w->type == SW_TYPE_BF16 &&
        w->ne[0] % CPU_BDOT_BLOCK == 0) {
        if ((st = mm_check_scratch(ws, pool, w, n_tokens)) != SW_OK)
            return st;
        mm_bmatmul(pool, ws, w, row_bytes, x, y, n_tokens, again);
        return SW_OK;
    }
    const bool tiled = n_tokens >= MM_TILED_MIN_TOKENS && w->ne[0] % CPU_DOT_LANES == 0;
    if (tiled && (st = mm_check_scratch(ws, pool, w, n_tokens)) != SW_OK)
        return st;
    mm_job job = {
        .k = k, .tile = cpu_tile_f32_get(cpu_isa_best()), .w = w->data,
        .row_bytes = row_bytes, .ne0 = w->ne[0], .n_rows = w->ne[1], .x = x, .y = y,
        .n_tokens = n_tokens, .ws = tiled ? ws : NULL,
    };
    if ((double)job.ne0 * (double)job.n_rows * n_tokens < MM_MIN_PARALLEL_MACS)
        mm_task(&job, 0, 1);
    else
        cpu_pool_run(pool, mm_task, &job);
    return SW_OK;
}

/* ---- one token against several matrices (decode's experts) ------------ */

typedef struct mm_mjob {
    const cpu_idot *k;
    const tensor_view *w;        /* n_mat views of one shape and type */
    const uint8_t *xq[CPU_MM_MULTI_MAX];
    float *const *y;
    uint64_t row_bytes, ne0, n_rows;
    uint32_t n_mat;
} mm_mjob;

/* Thread ith's share of every matrix's rows, one after another: each
 * contiguous run of one matrix's rows is one `rows` call, as mm_qrows
 * makes for one token (a row's result does not depend on its run). */
static void mm_mtask(void *arg, int ith, int nth) {
    const mm_mjob *j = arg;
    uint64_t r0, r1;
    mm_share(j->n_rows * j->n_mat, ith, nth, &r0, &r1);
    while (r0 < r1) {
        const uint64_t m = r0 / j->n_rows, r = r0 % j->n_rows;
        const uint64_t end = r1 < (m + 1) * j->n_rows ? r1 : (m + 1) * j->n_rows;
        j->k->rows((const uint8_t *)j->w[m].data + r * j->row_bytes, j->row_bytes, end - r0,
                   j->xq[m], j->ne0, j->y[m] + r);
        r0 = end;
    }
}

sw_status cpu_matmul_rows_multi(cpu_pool *pool, cpu_mm_scratch *ws, const tensor_view *w,
                                uint32_t n_mat, const float *const *x, float *const *y,
                                bool *done) {
    *done = false;
    if (n_mat == 0 || n_mat > CPU_MM_MULTI_MAX || n_mat > MM_QCHUNK_TOKENS || ws == NULL ||
        ws->exact)
        return SW_OK;
    const cpu_qkernel *qk = NULL;
    uint64_t row_bytes = 0;
    SW_TRY(mm_check_weight(&w[0], "cpu_matmul", &qk, &row_bytes));
    for (uint32_t i = 1; i < n_mat; i++)
        if (w[i].type != w[0].type || w[i].ne[0] != w[0].ne[0] || w[i].ne[1] != w[0].ne[1])
            return sw_errorf(SW_ERR_ARG, "cpu_matmul: '%s' and '%s' differ in shape or type",
                             w[0].name ? w[0].name : "?", w[i].name ? w[i].name : "?");
    const cpu_idot *ik = cpu_idot_get(cpu_isa_best(), w[0].type);
    if (ik == NULL)   /* cpu_matmul takes the bf16 or the f32 path: one by one */
        return SW_OK;
    SW_TRY(mm_check_scratch(ws, pool, &w[0], n_mat));
    const uint64_t ne0 = w[0].ne[0], stride = cpu_qact_stride(ik->fmt, ne0);
    mm_mjob job = {.k = ik, .w = w, .y = y, .row_bytes = row_bytes, .ne0 = ne0,
                   .n_rows = w[0].ne[1], .n_mat = n_mat};
    for (uint32_t i = 0; i < n_mat; i++) {   /* an input shared with the one before: once */
        if (i > 0 && x[i] == x[i - 1]) {
            job.xq[i] = job.xq[i - 1];
            continue;
        }
        uint8_t *q = ws->act + (uint64_t)i * stride;
        cpu_qact_quantize(ik->fmt, x[i], ne0, 1, q);
        job.xq[i] = q;
        ws->rows_prepared++;
    }
    ws->held = (mm_held){0};
    if ((double)ne0 * (double)job.n_rows * n_mat < MM_MIN_PARALLEL_MACS)
        mm_mtask(&job, 0, 1);
    else
        cpu_pool_run(pool, mm_mtask, &job);
    *done = true;
    return SW_OK;
}

sw_status cpu_matmul(cpu_pool *pool, cpu_mm_scratch *ws, const tensor_view *w, const float *x,
                     float *y, uint32_t n_tokens) {
    return cpu_matmul_as(pool, ws, w, x, y, n_tokens, 0);
}

sw_status cpu_matmul_fine(cpu_pool *pool, cpu_mm_scratch *ws, const tensor_view *w,
                          const float *x, float *y, uint32_t n_tokens) {
    return cpu_matmul_as(pool, ws, w, x, y, n_tokens, CPU_MM_FINE);
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
