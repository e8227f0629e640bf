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
 * row is read and widened once for the group. Threads take whole units;
 * a head's result is the same in either, so nothing depends on the thread
 * count or the unit.
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

typedef struct attn_job {
    const cpu_attn_args *a;
    const cpu_qkernel *kd;       /* keys: the cache type's dot (F32 too) */
    const cpu_qkernel *kv;       /* F16/BF16 cache: widens values; else NULL */
    const cpu_vmath *vm;         /* value accumulation */
    uint64_t row_bytes;          /* one cache row: n_head_kv * hd elements */
    uint64_t head_bytes;         /* one head's slice of a row: hd elements */
    uint64_t scratch_stride;     /* S floats per head of a unit */
    uint32_t ng;                 /* query heads per unit: 1, or a KV group */
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
    for (uint32_t h = 0; h < j->ng; h++) {
        float *sh = s + h * S;
        double sum = 0.0;
        for (int64_t i = 0; i < n; i++) {
            sh[i] = expf(sh[i] - mx[h]);
            sum += (double)sh[i];
        }
        const float sumf = (float)sum;
        for (int64_t i = 0; i < n; i++)
            sh[i] = sh[i] / sumf;
    }
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

/* Thread ith takes units i with i % nth == ith (unit i: token i / per,
 * heads (i % per) * ng ..): interleaving balances causal prefill, where
 * later tokens see more keys. */
static void attn_task(void *arg, int ith, int nth) {
    const attn_job *j = arg;
    const cpu_attn_args *a = j->a;
    float *s = a->scratch + (uint64_t)ith * j->scratch_stride * j->ng;
    const uint32_t per = a->n_head / j->ng;
    const uint64_t n_units = (uint64_t)a->n_tokens * per;
    for (uint64_t i = (uint64_t)ith; i < n_units; i += (uint64_t)nth)
        attn_unit(j, (uint32_t)(i / per), (uint32_t)(i % per) * j->ng, s);
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
    if ((uint64_t)a->n_tokens * a->n_head / j.ng == 1)
        attn_task(&j, 0, 1);
    else
        cpu_pool_run(pool, attn_task, &j);
}
