/*
 * kmath.h — the per-element math of the CUDA kernels besides weight
 * decoding (qblock.h), shared by host and device (hd.h) and tested on the
 * CPU against the cpu backend (tests/test_cuda_math.c):
 *   - tanh, GeGLU and soft-capping: the cpu backend's own f32 tanh
 *     (backend/cpu/vmath.h, constants from backend/vmath_consts.h)
 *     operation for operation, so the device gives the cpu backend's bits;
 *   - RoPE: the rotation of one pair at one position, from a per-dimension
 *     step the host computes exactly as cpu_rope does;
 *   - attention: which cache rows a query sees (causal, sliding window,
 *     ring) and the online-softmax update;
 *   - the cache row of a (sequence, position);
 *   - Gemma 4's router: one token's top-k experts and their weights, the
 *     cpu backend's selection and rounding step for step.
 */
#ifndef SW_BACKEND_CUDA_KMATH_H
#define SW_BACKEND_CUDA_KMATH_H

#include <math.h>

#include "backend/vmath_consts.h"
#include "backend/cuda/hd.h"

/* ---- tanh and what is built on it -------------------------------------- */

/* e^z for |z| up to ~20: z = n ln2 + r, E(r) * 2^n (vmath_body.inc's vm_exp). */
SW_HD float km_exp(float z) {
    const float t = hd_add(hd_mul(z, VM_LOG2E), VM_MAGIC);
    const float nf = hd_sub(t, VM_MAGIC);
    float r = hd_sub(z, hd_mul(nf, VM_LN2_HI));
    r = hd_sub(r, hd_mul(nf, VM_LN2_LO));
    float p = VM_E6;
    p = hd_add(hd_mul(p, r), VM_E5);
    p = hd_add(hd_mul(p, r), VM_E4);
    p = hd_add(hd_mul(p, r), VM_E3);
    p = hd_add(hd_mul(p, r), VM_E2);
    p = hd_add(hd_mul(p, r), VM_E1);
    p = hd_add(hd_mul(p, r), VM_E0);
    const uint32_t scale = (hd_bits(t) - VM_MAGIC_BITS + 127u) << 23;
    return hd_mul(p, hd_float(scale));
}

/* The cpu backend's tanh (vmath.h): odd polynomial below 0.625, else
 * 1 - 2 / (e^2a + 1) with a clamped at 10; the sign bit OR-ed back. */
SW_HD float km_tanh(float y) {
    const uint32_t sign = hd_bits(y) & VM_SIGN_BIT;
    const float a = hd_float(hd_bits(y) & ~VM_SIGN_BIT);
    const float u = hd_mul(y, y);
    float p = VM_P5;
    p = hd_add(hd_mul(p, u), VM_P4);
    p = hd_add(hd_mul(p, u), VM_P3);
    p = hd_add(hd_mul(p, u), VM_P2);
    p = hd_add(hd_mul(p, u), VM_P1);
    p = hd_add(hd_mul(p, u), VM_P0);
    const float small = hd_add(y, hd_mul(y, hd_mul(u, p)));
    const float ac = a > VM_TANH_CLAMP ? VM_TANH_CLAMP : a;
    const float e = km_exp(hd_add(ac, ac));
    const float big = hd_sub(1.0f, hd_div(2.0f, hd_add(e, 1.0f)));
    /* NaN: a < SMALL is false, and big is NaN too */
    return hd_float(hd_bits(a < VM_TANH_SMALL ? small : big) | sign);
}

/* gelu_tanh(g) * up in PyTorch's order: ((0.5 g)(1 + tanh(b (g + k g^3)))) up. */
SW_HD float km_geglu(float g, float up) {
    const float cube = hd_mul(hd_mul(g, g), g);
    const float inner = hd_mul(VM_GELU_BETA, hd_add(g, hd_mul(VM_GELU_KAPPA, cube)));
    return hd_mul(hd_mul(hd_mul(0.5f, g), hd_add(1.0f, km_tanh(inner))), up);
}

/* cap * tanh(x / cap), as tanh(x / cap) * cap (Hugging Face's order). */
SW_HD float km_softcap(float x, float cap) { return hd_mul(km_tanh(hd_div(x, cap)), cap); }

/* ---- RoPE ------------------------------------------------------------------ */

/* The angle step of pair i (i < head_dim / 2), as cpu_rope computes it:
 * (1 / base^(2i / hd)) * freq_scale. Host only (libm's powf). */
static inline float km_rope_step(uint32_t i, uint32_t head_dim, float base, float freq_scale) {
    const float inv_freq = 1.0f / powf(base, (float)(2 * i) / (float)head_dim);
    return inv_freq * freq_scale;
}

/* Rotates the pair (*a, *b) by step * pos. cos and sin are taken in
 * double and rounded, so both sides get the correctly rounded f32 values
 * (nearly always what the cpu backend's cosf/sinf give). */
SW_HD void km_rope_pair(float *a, float *b, float step, int32_t pos) {
    const float theta = hd_mul(step, (float)pos);
    const float c = (float)cos((double)theta), s = (float)sin((double)theta);
    const float x = *a, y = *b;
    *a = hd_sub(hd_mul(x, c), hd_mul(y, s));
    *b = hd_add(hd_mul(y, c), hd_mul(x, s));
}

/* ---- the KV cache and what a query sees ------------------------------------ */

/* The cache row of position pos of sequence seq (rows per sequence, ring
 * size or 0): seq * rows + (ring ? pos % ring : pos). */
SW_HD uint64_t km_kv_row(int32_t seq, int32_t pos, uint32_t rows, uint32_t ring) {
    const uint64_t p = (uint64_t)pos;
    return (uint64_t)seq * rows + (ring ? p % ring : p);
}

/* Whether token (seq, pos) names a row of a cache of n_seq x rows. */
SW_HD int km_kv_valid(int32_t seq, int32_t pos, uint32_t n_seq, uint32_t rows, uint32_t ring) {
    return seq >= 0 && (uint32_t)seq < n_seq && pos >= 0 && (ring > 0 || (uint32_t)pos < rows);
}

/* The positions a query at pos sees: [*lo, pos], count returned (0 when
 * pos < 0). Causal; window > 0 keeps pos - p < window; a ring of `ring`
 * rows holds only the last `ring` positions. */
SW_HD int64_t km_attn_range(int32_t pos, uint32_t window, uint32_t ring, int64_t *lo) {
    *lo = 0;
    if (pos < 0)
        return 0;
    int64_t first = 0;
    if (window > 0 && (int64_t)pos - (int64_t)window + 1 > first)
        first = (int64_t)pos - (int64_t)window + 1;
    if (ring > 0 && (int64_t)pos - first + 1 > (int64_t)ring)
        first = (int64_t)pos - (int64_t)ring + 1;
    *lo = first;
    return (int64_t)pos - first + 1;
}

/* Online softmax: the running max m and sum l (of exp(s - m)) meet new
 * scores whose largest is chunk_max (one key: its score). Returns the
 * factor that rescales what was accumulated so far (0 the first time) and
 * updates *m; the caller scales l (and the weighted values) by it and adds
 * the new exp(s - *m). */
SW_HD float km_softmax_rescale(float *m, float chunk_max) {
    const float next = chunk_max > *m ? chunk_max : *m;
    const float scale = *m == -INFINITY ? 0.0f : expf(hd_sub(*m, next));
    *m = next;
    return scale;
}

/* Flash-decoding: a query's n visible keys cut into n_splits contiguous
 * parts; part z is [*i0, *i1) (empty for the parts past the end). Parts
 * are whole multiples of `align` keys (the warps of a block) but the
 * last. */
SW_HD void km_attn_split(int64_t n, uint32_t n_splits, uint32_t z, uint32_t align,
                         int64_t *i0, int64_t *i1) {
    int64_t per = (n + (int64_t)n_splits - 1) / (int64_t)n_splits;
    per = (per + (int64_t)align - 1) / (int64_t)align * (int64_t)align;
    const int64_t a = per * (int64_t)z;
    *i0 = a < n ? a : n;
    *i1 = a + per < n ? a + per : n;
}

/* Joining partial softmaxes (count of them: maxima m[], sums l[] of
 * exp(s - m)): f[i] = exp(m[i] - M) (0 for an empty part, m = -inf) with
 * M the largest m, and the joint sum L = sum l[i] f[i], in order. The
 * joint output is sum o_i f[i] / L. */
SW_HD float km_softmax_join(const float *m, const float *l, uint32_t count, float *f) {
    float M = -INFINITY, L = 0.0f;
    for (uint32_t i = 0; i < count; i++)
        M = m[i] > M ? m[i] : M;
    for (uint32_t i = 0; i < count; i++) {
        f[i] = m[i] == -INFINITY ? 0.0f : expf(hd_sub(m[i], M));
        L = hd_add(L, hd_mul(l[i], f[i]));
    }
    return L;
}

/* ---- Gemma 4's router ---------------------------------------------------- */

/* One token's scores s (n_expert) -> the k largest in descending order,
 * ties to the lower id (id[k]), their softmax probabilities over all
 * experts renormalised to sum 1, times scale[id] (w[k]); as cpu_moe_route,
 * with the same f32 steps. k <= n_expert. */
SW_HD void km_moe_route_row(const float *s, const float *scale, uint32_t n_expert, uint32_t k,
                            int32_t *id, float *w) {
    float mx = s[0];
    for (uint32_t e = 1; e < n_expert; e++)
        mx = s[e] > mx ? s[e] : mx;
    float sum = 0.0f;
    for (uint32_t e = 0; e < n_expert; e++)
        sum = hd_add(sum, expf(hd_sub(s[e], mx)));
    for (uint32_t j = 0; j < k; j++) {
        int32_t best = -1;
        for (uint32_t e = 0; e < n_expert; e++) {
            int taken = 0;
            for (uint32_t i = 0; i < j; i++)
                taken |= id[i] == (int32_t)e;
            if (!taken && (best < 0 || s[e] > s[best]))
                best = (int32_t)e;
        }
        id[j] = best;
        w[j] = hd_div(expf(hd_sub(s[best], mx)), sum);
    }
    float top = 0.0f;
    for (uint32_t j = 0; j < k; j++)
        top = hd_add(top, w[j]);
    for (uint32_t j = 0; j < k; j++)
        w[j] = hd_mul(hd_div(w[j], top), scale[id[j]]);
}

/* The slot of a token's ids (k, distinct) holding the rank-th smallest:
 * experts are added in ascending id, as the cpu backend adds them. */
SW_HD uint32_t km_moe_slot_by_rank(const int32_t *id, uint32_t k, uint32_t rank) {
    for (uint32_t j = 0; j < k; j++) {
        uint32_t below = 0;
        for (uint32_t i = 0; i < k; i++)
            below += id[i] < id[j];
        if (below == rank)
            return j;
    }
    return 0;
}

#endif
