/*
 * attention.c — cpu_attention: softmax(q·Kᵀ)·V per (token, head) over the
 * keys each query may see (causal, optional sliding window, optional ring
 * indexing of the cache), with optional soft-capping of the scores.
 *
 * Masked keys are never visited, which is exactly a -inf mask. Scores use
 * the canonical dot of qdot.h (for F16/BF16 caches, the stored-type dot of
 * the same kernel set, which widens each key exactly and so gives the bits
 * of the f32 dot over the widened keys); the softmax subtracts the max, exponentiates
 * in f32 (expf), sums in double and divides in f32 as torch does; the
 * probabilities are normalised in place, and the output accumulates p·v
 * over keys in position order in f32 through vmath.h's wsum (same bits in
 * every instruction set; F16/BF16 values widened exactly, a chunk at a
 * time, by the kernel set's dequantizer). Threads take whole (token,
 * head) pairs, so results do not depend on the thread count.
 *
 * Sequences: query t belongs to sequence q_seq[t] (all 0 when q_seq is
 * NULL) and sees only that sequence's rows, which start at row
 * q_seq[t] * seq_rows of the cache.
 *
 * Scratch: the caller passes n_threads * L floats (L = kv_ring, or n_ctx
 * for a linear cache). Thread ith uses scratch[ith * S, ith * S + S), where
 * S = the largest number of keys visible to any query of this call; S <= L
 * always, because visibility is clamped to the ring (see attn_range).
 */
#include <assert.h>
#include <math.h>
#include <string.h>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/qdot.h"
#include "backend/cpu/vmath.h"
#include "quant/types.h"

/* Values of an F16/BF16 cache row are widened this many at a time. */
enum { ATTN_V_CHUNK = 256 };

typedef struct attn_job {
    const cpu_attn_args *a;
    cpu_dot_f32_fn dot;          /* F32 cache */
    const cpu_qkernel *kv;       /* F16/BF16 cache: widen + canonical dot; else NULL */
    const cpu_vmath *vm;         /* value accumulation */
    uint64_t row_bytes;          /* one cache row: n_head_kv * hd elements */
    uint64_t head_bytes;         /* one head's slice of a row: hd elements */
    uint64_t scratch_stride;     /* S floats per thread */
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

/* Scores of query q against n keys from position lo into s[]; returns max. */
static float attn_scores(const attn_job *j, const float *q, uint32_t kvh, uint64_t base,
                         int64_t lo, int64_t n, float *s) {
    const cpu_attn_args *a = j->a;
    const uint64_t hd = a->head_dim;
    float mx = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        uint64_t row = attn_cache_row(a, base, (uint64_t)(lo + i));
        const uint8_t *k = attn_row(j, a->k, row, kvh);
        float v;
        if (j->kv == NULL)
            v = j->dot(q, (const float *)(const void *)k, hd);
        else
            j->kv->dot(k, q, 0, 1, hd, &v);
        if (a->softcap != 0.0f)
            v = tanhf(v / a->softcap) * a->softcap;
        s[i] = v;
        mx = v > mx ? v : mx;
    }
    return mx;
}

/* o += w * v for one F16/BF16 value row, widened a chunk at a time. */
static void attn_add_value(const attn_job *j, const uint8_t *v, float w, float *o) {
    const uint64_t hd = j->a->head_dim;
    float buf[ATTN_V_CHUNK];
    const uint64_t elem = j->head_bytes / hd;
    for (uint64_t d0 = 0; d0 < hd; d0 += ATTN_V_CHUNK) {
        uint64_t m = hd - d0 < ATTN_V_CHUNK ? hd - d0 : ATTN_V_CHUNK;
        j->kv->dequant(v + d0 * elem, buf, m);
        j->vm->wsum(buf, 0, &w, 1, o + d0, m);
    }
}

static void attn_one(const attn_job *j, uint32_t t, uint32_t h, float *s) {
    const cpu_attn_args *a = j->a;
    const uint64_t hd = a->head_dim;
    const uint64_t qi = ((uint64_t)t * a->n_head + h) * hd;
    const uint32_t kvh = h / (a->n_head / a->n_head_kv);
    float *o = a->out + qi;
    memset(o, 0, hd * sizeof *o);
    int64_t lo = 0;
    const int64_t n = attn_range(a, a->q_pos[t], &lo);
    if (n <= 0)
        return;
    const uint64_t base = a->q_seq ? (uint64_t)a->q_seq[t] * a->seq_rows : 0;
    const float mx = attn_scores(j, a->q + qi, kvh, base, lo, n, s);
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) {
        s[i] = expf(s[i] - mx);
        sum += (double)s[i];
    }
    const float sumf = (float)sum;
    for (int64_t i = 0; i < n; i++)
        s[i] = s[i] / sumf;
    if (j->kv == NULL) {
        /* F32 cache: the rows of [lo, lo + n) are contiguous but for one
         * wrap of the ring; each run is one weighted sum, vectorized over
         * the head's dims with the keys in order (the same bits as one
         * key at a time). */
        const uint64_t stride = j->row_bytes / sizeof(float);
        for (int64_t i = 0; i < n;) {
            const uint64_t row = attn_cache_row(a, base, (uint64_t)(lo + i));
            int64_t run = n - i;
            if (a->kv_ring > 0 && (int64_t)(a->kv_ring - (row - base)) < run)
                run = (int64_t)(a->kv_ring - (row - base));
            const float *v = (const float *)(const void *)attn_row(j, a->v, row, kvh);
            j->vm->wsum(v, stride, s + i, (uint64_t)run, o, hd);
            i += run;
        }
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        uint64_t row = attn_cache_row(a, base, (uint64_t)(lo + i));
        attn_add_value(j, attn_row(j, a->v, row, kvh), s[i], o);
    }
}

/* Thread ith takes pairs i = t*n_head + h with i % nth == ith: interleaving
 * balances causal prefill, where later tokens see more keys. */
static void attn_task(void *arg, int ith, int nth) {
    const attn_job *j = arg;
    const cpu_attn_args *a = j->a;
    float *s = a->scratch + (uint64_t)ith * j->scratch_stride;
    const uint64_t n_items = (uint64_t)a->n_tokens * a->n_head;
    for (uint64_t i = (uint64_t)ith; i < n_items; i += (uint64_t)nth)
        attn_one(j, (uint32_t)(i / a->n_head), (uint32_t)(i % a->n_head), s);
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
    attn_job j = {.a = a, .dot = cpu_dot_f32_get(isa),
                  .kv = a->kv_type == SW_TYPE_F32 ? NULL : cpu_qkernel_get(isa, a->kv_type),
                  .vm = cpu_vmath_get(isa),
                  .row_bytes = (uint64_t)a->n_head_kv * a->head_dim * elem,
                  .head_bytes = (uint64_t)a->head_dim * elem, .scratch_stride = 0};
    for (uint32_t t = 0; t < a->n_tokens; t++) {
        int64_t lo = 0;
        int64_t n = attn_range(a, a->q_pos[t], &lo);
        if (n > (int64_t)j.scratch_stride)
            j.scratch_stride = (uint64_t)n;
    }
    if ((uint64_t)a->n_tokens * a->n_head == 1)
        attn_task(&j, 0, 1);
    else
        cpu_pool_run(pool, attn_task, &j);
}
