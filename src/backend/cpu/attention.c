/*
 * attention.c — cpu_attention: softmax(q·Kᵀ)·V per (token, head) over the
 * keys each query may see (causal, optional sliding window, optional ring
 * indexing of the cache), with optional soft-capping of the scores.
 *
 * Masked keys are never visited, which is exactly a -inf mask. Scores use
 * the canonical dot of qdot.h (the cache type's dot of the kernel set:
 * F16/BF16 keys are widened exactly, so the bits are the f32 dot's over
 * the widened keys), soft-capped as x = tanh(x / cap) * cap with vmath.h's
 * tanh (a row at a time, vectorized); the softmax subtracts the max,
 * exponentiates in f32 (expf), sums in double and divides in f32 as torch
 * does; the probabilities are normalised in place, and the output
 * accumulates p·v over keys in position order in f32 through vmath.h's
 * wsum (same bits in every instruction set; F16/BF16 values widened
 * exactly, whole rows at a time, by the kernel set's dequantizer).
 *
 * Work comes in units: a token and one head, or, when the scratch has
 * room and there are enough of them to keep every thread busy (prefill),
 * a token and all the heads sharing a KV head, so that each key and value
 * row is read and widened once for the group. With the block scratch
 * (prefill, several tokens), a unit is up to ATTN_TB consecutive tokens of
 * one sequence and a KV group: keys and values are widened once for all
 * of them, a chunk at a time, and the scores come from the f32 tile kernel
 * (qdot.h: the canonical dot, several queries per key row loaded). Threads
 * take whole units; a head's result is the same in every form — the same
 * canonical dots, the same softmax, values accumulated in the same key
 * order — so nothing depends on the thread count or the unit.
 *
 * Sequences: query t belongs to sequence q_seq[t] (all 0 when q_seq is
 * NULL) and sees only that sequence's rows, which start at row
 * q_seq[t] * seq_rows of the cache.
 *
 * Scratch: the caller passes n_threads * L floats at least (L = kv_ring,
 * or n_ctx for a linear cache); with L * (heads per KV head) per thread,
 * units of a group. A unit of g heads uses g * S floats of its thread's
 * share, S = the largest number of keys visible to any query of this call;
 * S <= L always, because visibility is clamped to the ring (see
 * attn_range).
 */
#include <assert.h>
#include <math.h>
#include <string.h>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/qdot.h"
#include "backend/cpu/vmath.h"
#include "quant/types.h"

/* F16/BF16 values are widened into a buffer of this many floats (on the
 * stack), as many whole rows at a time as it holds. */
enum { ATTN_V_FLOATS = 4096 };

/* Query heads per KV head a unit takes at most (Gemma's groups: 1 to 8). */
enum { ATTN_MAX_GROUP = 16 };

/* A block unit: at most ATTN_TB tokens; keys and values widened
 * ATTN_KC_FLOATS at a time (16 KiB: in L1 while the block's queries pass
 * over them; 64 KiB chunks, read from L2, ran the weighted sums 40%
 * slower). */
enum { ATTN_TB = 8, ATTN_KC_FLOATS = 4096 };

typedef struct attn_job {
    const cpu_attn_args *a;
    const cpu_qkernel *kd;       /* keys: the cache type's dot (F32 too) */
    const cpu_qkernel *kv;       /* F16/BF16 cache: widens values; else NULL */
    const cpu_vmath *vm;         /* value accumulation */
    uint64_t row_bytes;          /* one cache row: n_head_kv * hd elements */
    uint64_t head_bytes;         /* one head's slice of a row: hd elements */
    uint64_t scratch_stride;     /* S floats per head of a unit */
    uint32_t ng;                 /* query heads per unit: 1, or a KV group */
    uint32_t tb;                 /* tokens per block unit; 0: no blocks */
    uint64_t block_stride;       /* floats of a->block per thread */
    cpu_tile_f32_fn tile;        /* block units' scores */
} attn_job;

/* Key/value of kv head kvh at cache row `row`. */
static const uint8_t *attn_row(const attn_job *j, const void *base, uint64_t row,
                               uint32_t kvh) {
    return (const uint8_t *)base + row * j->row_bytes + kvh * j->head_bytes;
}

/* Positions [*lo, *lo + n) visible to a query at pos; returns n. A ring of
 * kv_ring rows holds only the last kv_ring positions, so visibility is
 * clamped to those (a caller sizes the ring >= the window; a smaller ring
 * is a planning error, caught by the assert in debug builds). */
static int64_t attn_range(const cpu_attn_args *a, int32_t pos, int64_t *lo) {
    if (pos < 0)
        return 0;
    int64_t first = 0;
    if (a->window > 0 && (int64_t)pos - (int64_t)a->window + 1 > first)
        first = (int64_t)pos - (int64_t)a->window + 1;
    if (a->kv_ring > 0 && (int64_t)pos - first + 1 > (int64_t)a->kv_ring) {
        assert(!"kv ring smaller than the visible window");
        first = (int64_t)pos - (int64_t)a->kv_ring + 1;
    }
    *lo = first;
    return (int64_t)pos - first + 1;
}

/* Cache row of position p in the sequence whose rows start at `base`. */
static uint64_t attn_cache_row(const cpu_attn_args *a, uint64_t base, uint64_t p) {
    return base + (a->kv_ring > 0 ? p % a->kv_ring : p);
}

/* Scores of the unit's ng queries (q, hd apart) against n keys from
 * position lo into s + h*S; the max of each into mx[h]. Each key is read
 * (and, in F16/BF16, widened) once for all ng queries. */
static void attn_scores(const attn_job *j, const float *q, uint32_t kvh, uint64_t base,
                        int64_t lo, int64_t n, float *s, float *mx) {
    const cpu_attn_args *a = j->a;
    const uint64_t hd = a->head_dim, S = j->scratch_stride;
    float v[ATTN_MAX_GROUP];
    for (uint32_t h = 0; h < j->ng; h++)
        mx[h] = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        uint64_t row = attn_cache_row(a, base, (uint64_t)(lo + i));
        j->kd->dot(attn_row(j, a->k, row, kvh), q, hd, j->ng, hd, v);
        for (uint32_t h = 0; h < j->ng; h++)
            s[h * S + (uint64_t)i] = v[h];
    }
    for (uint32_t h = 0; h < j->ng; h++) {
        float *sh = s + h * S;
        if (a->softcap != 0.0f)
            j->vm->softcap(sh, (uint64_t)n, a->softcap);
        for (int64_t i = 0; i < n; i++)
            mx[h] = sh[i] > mx[h] ? sh[i] : mx[h];
    }
}

/* o_h += sum_i w_h[i] * v_i for the unit's heads (o_h = o + h*hd, w_h =
 * w + h*S) over n consecutive F16/BF16 value rows from `row` (no ring wrap
 * inside), widened ATTN_V_FLOATS at a time: whole rows, then one weighted
 * sum over them per head (the same bits as row by row), or, for a head
 * wider than the buffer, a row in pieces. */
static void attn_add_values(const attn_job *j, uint64_t row, uint32_t kvh, const float *w,
                            int64_t n, float *o) {
    const uint64_t hd = j->a->head_dim, S = j->scratch_stride;
    float buf[ATTN_V_FLOATS];
    if (hd > ATTN_V_FLOATS) {
        const uint64_t elem = j->head_bytes / hd;
        for (int64_t i = 0; i < n; i++) {
            const uint8_t *v = attn_row(j, j->a->v, row + (uint64_t)i, kvh);
            for (uint64_t d0 = 0; d0 < hd; d0 += ATTN_V_FLOATS) {
                const uint64_t m = hd - d0 < ATTN_V_FLOATS ? hd - d0 : ATTN_V_FLOATS;
                j->kv->dequant(v + d0 * elem, buf, m);
                for (uint32_t h = 0; h < j->ng; h++)
                    j->vm->wsum(buf, 0, &w[h * S + (uint64_t)i], 1, o + h * hd + d0, m);
            }
        }
        return;
    }
    const int64_t per = (int64_t)(ATTN_V_FLOATS / hd);
    for (int64_t i = 0; i < n; i += per) {
        const int64_t m = n - i < per ? n - i : per;
        for (int64_t r = 0; r < m; r++)
            j->kv->dequant(attn_row(j, j->a->v, row + (uint64_t)(i + r), kvh),
                           buf + (uint64_t)r * hd, hd);
        for (uint32_t h = 0; h < j->ng; h++)
            j->vm->wsum(buf, hd, w + h * S + (uint64_t)i, (uint64_t)m, o + h * hd, hd);
    }
}

/* The probabilities of n scores whose max is mx, in place: exponentials
 * in f32, their sum in double, each divided in f32 (torch's order). */
static void attn_softmax(float *sh, int64_t n, float mx) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) {
        sh[i] = expf(sh[i] - mx);
        sum += (double)sh[i];
    }
    const float sumf = (float)sum;
    for (int64_t i = 0; i < n; i++)
        sh[i] = sh[i] / sumf;
}

/* One unit: token t, query heads h0 .. h0+ng-1 (one KV head's). */
static void attn_unit(const attn_job *j, uint32_t t, uint32_t h0, float *s) {
    const cpu_attn_args *a = j->a;
    const uint64_t hd = a->head_dim, S = j->scratch_stride;
    const uint64_t qi = ((uint64_t)t * a->n_head + h0) * hd;
    const uint32_t kvh = h0 / (a->n_head / a->n_head_kv);
    float *o = a->out + qi;
    memset(o, 0, j->ng * hd * sizeof *o);
    int64_t lo = 0;
    const int64_t n = attn_range(a, a->q_pos[t], &lo);
    if (n <= 0)
        return;
    const uint64_t base = a->q_seq ? (uint64_t)a->q_seq[t] * a->seq_rows : 0;
    float mx[ATTN_MAX_GROUP];
    attn_scores(j, a->q + qi, kvh, base, lo, n, s, mx);
    for (uint32_t h = 0; h < j->ng; h++)
        attn_softmax(s + h * S, n, mx[h]);
    /* The rows of [lo, lo + n) are contiguous but for one wrap of the
     * ring; each run is one weighted sum per head, vectorized over the
     * head's dims with the keys in order (the same bits as one key at a
     * time). */
    const uint64_t stride = j->row_bytes / sizeof(float);
    for (int64_t i = 0; i < n;) {
        const uint64_t row = attn_cache_row(a, base, (uint64_t)(lo + i));
        int64_t run = n - i;
        if (a->kv_ring > 0 && (int64_t)(a->kv_ring - (row - base)) < run)
            run = (int64_t)(a->kv_ring - (row - base));
        if (j->kv == NULL) {
            const float *v = (const float *)(const void *)attn_row(j, a->v, row, kvh);
            for (uint32_t h = 0; h < j->ng; h++)
                j->vm->wsum(v, stride, s + h * S + (uint64_t)i, (uint64_t)run, o + h * hd, hd);
        } else {
            attn_add_values(j, row, kvh, s + i, run, o);
        }
        i += run;
    }
}

/* ---- block units -------------------------------------------------------- */

/* How many tokens from t0 (at most max) share t0's sequence with
 * positions ascending by one: a block's queries, whose visible ranges
 * then differ by a few keys at either end. */
static uint32_t attn_run(const cpu_attn_args *a, uint32_t t0, uint32_t max) {
    uint32_t n = 1;
    while (n < max && (a->q_seq == NULL || a->q_seq[t0 + n] == a->q_seq[t0]) &&
           (int64_t)a->q_pos[t0 + n] == (int64_t)a->q_pos[t0 + n - 1] + 1)
        n++;
    return n;
}

/* Rows from position p on, at most kc and up to H, without a ring wrap. */
static int64_t attn_chunk(const cpu_attn_args *a, uint64_t base, uint64_t row, int64_t p,
                          int64_t H, int64_t kc) {
    int64_t m = H - p < kc ? H - p : kc;
    if (a->kv_ring > 0 && (int64_t)(a->kv_ring - (row - base)) < m)
        m = (int64_t)(a->kv_ring - (row - base));
    return m;
}

/* KV head kvh of m cache rows from `row` as f32 rows: the cache itself
 * for F32, else widened (exactly) into buf; *stride gets their stride in
 * floats. */
static const float *attn_widen(const attn_job *j, const void *cache, uint64_t row, int64_t m,
                               uint32_t kvh, float *buf, uint64_t *stride) {
    const uint64_t hd = j->a->head_dim;
    if (j->kv == NULL) {
        *stride = j->row_bytes / sizeof(float);
        return (const float *)(const void *)attn_row(j, cache, row, kvh);
    }
    for (int64_t r = 0; r < m; r++)
        j->kv->dequant(attn_row(j, cache, row + (uint64_t)r, kvh), buf + (uint64_t)r * hd, hd);
    *stride = hd;
    return buf;
}

/* A block unit: tokens t0 .. t0+nb-1 (attn_run's), query heads h0 ..
 * h0+ng-1. Every query's scores over the union [L, H) of the block's
 * ranges (a few it does not see are computed and never read) go to blk,
 * nb*ng rows of H - L; each query's softmax is over its own range, as in
 * attn_unit; values are added a chunk at a time, keys in order, which is
 * each output element's same chain of additions. blk holds those rows
 * and ATTN_KC_FLOATS for the widened chunk (cpu_attention checks). */
static void attn_block(const attn_job *j, uint32_t t0, uint32_t nb, uint32_t h0, float *blk) {
    const cpu_attn_args *a = j->a;
    const uint64_t hd = a->head_dim;
    const uint32_t ng = j->ng, kvh = h0 / (a->n_head / a->n_head_kv);
    const uint64_t base = a->q_seq ? (uint64_t)a->q_seq[t0] * a->seq_rows : 0;
    int64_t lo[ATTN_TB], n[ATTN_TB], L = INT64_MAX, H = INT64_MIN;
    float *o[ATTN_TB];
    for (uint32_t i = 0; i < nb; i++) {
        o[i] = a->out + ((uint64_t)(t0 + i) * a->n_head + h0) * hd;
        memset(o[i], 0, ng * hd * sizeof *o[i]);
        n[i] = attn_range(a, a->q_pos[t0 + i], &lo[i]);
        if (n[i] > 0) {
            L = lo[i] < L ? lo[i] : L;
            H = lo[i] + n[i] > H ? lo[i] + n[i] : H;
        }
    }
    if (L >= H)
        return;
    const uint64_t W = (uint64_t)(H - L);
    const int64_t kc = (int64_t)(ATTN_KC_FLOATS / hd);
    /* on a cache line: every row load of the chunk would otherwise split
     * two (blk is 64-byte aligned, attn_task) */
    float *buf = blk + ((uint64_t)nb * ng * W + 15) / 16 * 16;
    for (int64_t p = L; p < H;) {
        const uint64_t row = attn_cache_row(a, base, (uint64_t)p);
        const int64_t m = attn_chunk(a, base, row, p, H, kc);
        uint64_t ks;
        const float *k = attn_widen(j, a->k, row, m, kvh, buf, &ks);
        for (uint32_t i = 0; i < nb; i++)
            if (n[i] > 0)
                j->tile(k, ks, (uint32_t)m, a->q + ((uint64_t)(t0 + i) * a->n_head + h0) * hd,
                        hd, ng, hd, blk + (uint64_t)i * ng * W + (uint64_t)(p - L), W);
        p += m;
    }
    for (uint32_t i = 0; i < nb; i++)
        for (uint32_t g = 0; g < ng && n[i] > 0; g++) {
            float *sh = blk + ((uint64_t)i * ng + g) * W + (uint64_t)(lo[i] - L);
            if (a->softcap != 0.0f)
                j->vm->softcap(sh, (uint64_t)n[i], a->softcap);
            float mx = -INFINITY;
            for (int64_t k = 0; k < n[i]; k++)
                mx = sh[k] > mx ? sh[k] : mx;
            attn_softmax(sh, n[i], mx);
        }
    for (int64_t p = L; p < H;) {
        const uint64_t row = attn_cache_row(a, base, (uint64_t)p);
        const int64_t m = attn_chunk(a, base, row, p, H, kc);
        uint64_t vs;
        const float *v = attn_widen(j, a->v, row, m, kvh, buf, &vs);
        for (uint32_t i = 0; i < nb; i++) {
            const int64_t s0 = p > lo[i] ? p : lo[i];
            const int64_t s1 = p + m < lo[i] + n[i] ? p + m : lo[i] + n[i];
            for (uint32_t g = 0; g < ng && n[i] > 0 && s0 < s1; g++)
                j->vm->wsum(v + (uint64_t)(s0 - p) * vs, vs,
                            blk + ((uint64_t)i * ng + g) * W + (uint64_t)(s0 - L),
                            (uint64_t)(s1 - s0), o[i] + g * hd, hd);
        }
        p += m;
    }
}

static float *attn_align64(float *p) {
    return p + ((64 - (uintptr_t)p % 64) % 64) / sizeof *p;
}

/* Thread ith takes units i with i % nth == ith (unit i: token i / per,
 * or block i / per of tb tokens, heads (i % per) * ng ..): interleaving
 * balances causal prefill, where later tokens see more keys. */
static void attn_task(void *arg, int ith, int nth) {
    const attn_job *j = arg;
    const cpu_attn_args *a = j->a;
    const uint32_t per = a->n_head / j->ng;
    if (j->tb > 0) {
        float *blk = attn_align64(a->block) + (uint64_t)ith * j->block_stride;
        const uint64_t n_units = (uint64_t)((a->n_tokens + j->tb - 1) / j->tb) * per;
        for (uint64_t i = (uint64_t)ith; i < n_units; i += (uint64_t)nth) {
            const uint32_t b0 = (uint32_t)(i / per) * j->tb, h0 = (uint32_t)(i % per) * j->ng;
            const uint32_t b1 = a->n_tokens - b0 < j->tb ? a->n_tokens : b0 + j->tb;
            for (uint32_t t = b0; t < b1;) {
                const uint32_t nb = attn_run(a, t, b1 - t);
                attn_block(j, t, nb, h0, blk);
                t += nb;
            }
        }
        return;
    }
    float *s = a->scratch + (uint64_t)ith * j->scratch_stride * j->ng;
    const uint64_t n_units = (uint64_t)a->n_tokens * per;
    for (uint64_t i = (uint64_t)ith; i < n_units; i += (uint64_t)nth)
        attn_unit(j, (uint32_t)(i / per), (uint32_t)(i % per) * j->ng, s);
}

/* Each thread's share of the block scratch, in floats: whole cache lines
 * after the base is aligned to one. */
static uint64_t attn_block_share(const cpu_attn_args *a, uint64_t nth) {
    return a->block_floats > 16 ? (a->block_floats - 16) / nth / 16 * 16 : 0;
}

/* Block units where a thread's share holds tb tokens' scores over S + tb
 * - 1 keys (the widest union), padded to a cache line, and a widened
 * chunk: the most tokens per block that fit, 0 for none. */
static uint32_t attn_block_tokens(const cpu_attn_args *a, uint64_t S, uint32_t ng,
                                  uint64_t nth) {
    if (a->block == NULL || a->n_tokens < 2 || a->head_dim % CPU_DOT_LANES != 0 ||
        a->head_dim > ATTN_KC_FLOATS)
        return 0;
    const uint64_t share = attn_block_share(a, nth);
    for (uint32_t tb = ATTN_TB; tb >= 2; tb /= 2)
        if ((uint64_t)tb * ng * (S + tb - 1) + 15 + ATTN_KC_FLOATS <= share)
            return tb;
    return 0;
}

void cpu_attention(cpu_pool *pool, const cpu_attn_args *a) {
    /* Shapes come from the validated model config: programmer invariants. */
    assert(a != NULL && a->n_head_kv > 0 && a->n_head % a->n_head_kv == 0);
    if (a == NULL || a->n_tokens == 0 || a->n_head == 0 || a->n_head_kv == 0 ||
        a->n_head % a->n_head_kv != 0)
        return;
    /* Any other cache type is a programmer error (the engine sets it). */
    assert(a->kv_type == SW_TYPE_F32 || a->kv_type == SW_TYPE_F16 ||
           a->kv_type == SW_TYPE_BF16);
    const cpu_isa isa = cpu_isa_best();
    const uint64_t elem = a->kv_type == SW_TYPE_F32 ? 4 : 2;
    const cpu_qkernel *kd = cpu_qkernel_get(isa, a->kv_type);
    attn_job j = {.a = a, .kd = kd, .kv = a->kv_type == SW_TYPE_F32 ? NULL : kd,
                  .vm = cpu_vmath_get(isa),
                  .row_bytes = (uint64_t)a->n_head_kv * a->head_dim * elem,
                  .head_bytes = (uint64_t)a->head_dim * elem, .scratch_stride = 0, .ng = 1};
    for (uint32_t t = 0; t < a->n_tokens; t++) {
        int64_t lo = 0;
        int64_t n = attn_range(a, a->q_pos[t], &lo);
        if (n > (int64_t)j.scratch_stride)
            j.scratch_stride = (uint64_t)n;
    }
    /* A unit of a whole KV group reads each key and value once for all
     * its heads; taken when the scratch holds it and the units still
     * keep every thread busy (decode has one token: a unit per head). */
    const uint32_t group = a->n_head / a->n_head_kv;
    const uint64_t nth = (uint64_t)cpu_pool_size(pool);
    if (group > 1 && group <= ATTN_MAX_GROUP &&
        (uint64_t)a->n_tokens * a->n_head_kv >= 2 * nth &&
        nth * j.scratch_stride * group <= a->scratch_floats)
        j.ng = group;
    const uint32_t ngb = group <= ATTN_MAX_GROUP ? group : 1;
    j.tb = attn_block_tokens(a, j.scratch_stride, ngb, nth);
    if (j.tb > 0) {
        /* a KV group per unit while the units keep every thread busy */
        const uint64_t blocks = (a->n_tokens + j.tb - 1) / j.tb;
        j.ng = blocks * a->n_head_kv >= 2 * nth ? ngb : 1;
        j.block_stride = attn_block_share(a, nth);
        j.tile = cpu_tile_f32_get(isa);
    }
    const uint64_t units = j.tb > 0 ? (a->n_tokens + j.tb - 1) / j.tb * (a->n_head / j.ng)
                                    : (uint64_t)a->n_tokens * a->n_head / j.ng;
    if (units == 1)
        attn_task(&j, 0, 1);
    else
        cpu_pool_run(pool, attn_task, &j);
}
