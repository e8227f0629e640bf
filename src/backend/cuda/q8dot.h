/*
 * q8dot.h — the CUDA decode path's integer dot products, written once for
 * the host and the device (hd.h): activations quantized to 8 bits per
 * block, and weight rows of the integer types (Q4_0, Q5_0, Q8_0; Q4_1,
 * Q5_1 with a min; Q4_K, Q5_K, Q6_K) dotted with them in integers, floats
 * entering once per block. Everything here re-states the cpu backend's
 * definitions — backend/cpu/qact.h (the activations' bytes) and
 * backend/cpu/idot.h (the canonical dot: 8 lanes, two accumulator sets,
 * the min types' third set by block, the R8 combine, the coarse and fine
 * forms) — so that the GPU's default matmuls give the cpu default's bits;
 * tests/test_cuda_q8.c checks both on the CPU.
 *
 * The pieces a kernel composes:
 *   q8_quant_*      one activation block: max |x|, the scale, the q's, and
 *                   the int16 sums of each 16 (the K types' offset term,
 *                   the min types' block sums);
 *   q8_s32          block b's integer lane sum s[l] of a 32-element type;
 *   q8_block_min    block b's min term of Q4_1/Q5_1, into accm[b % 8];
 *   q8_k_chunk      chunk c's lane partial sc(c,l) * sum u*q of a K type;
 *   q8_k_offset     lane l's offset term m[l] of a K type;
 *   q8_r8, q8_r8m   the final combine of the 16 (24) accumulators.
 * Integer sums are exact in any order; the float steps are fmaf chains
 * per (set, lane) whose order q8_row_dot fixes (the host's composition,
 * which the kernels in matvec_q8.cu follow with one thread per chain).
 */
#ifndef SW_BACKEND_CUDA_Q8DOT_H
#define SW_BACKEND_CUDA_Q8DOT_H

#include <math.h>

#include "backend/cuda/qblock.h"

enum { Q8_LANES = 8 };

#if defined(__CUDA_ARCH__)
/* Four signed byte products added to c: the dp4a instruction. */
SW_HD int q8_dp4a(uint32_t a, uint32_t b, int c) { return __dp4a((int)a, (int)b, c); }
SW_HD float q8_fma(float a, float b, float c) { return __fmaf_rn(a, b, c); }
#else
SW_HD int q8_dp4a(uint32_t a, uint32_t b, int c) {
    for (int i = 0; i < 4; i++)
        c += (int)(int8_t)(uint8_t)(a >> (8 * i)) * (int)(int8_t)(uint8_t)(b >> (8 * i));
    return c;
}
SW_HD float q8_fma(float a, float b, float c) { return fmaf(a, b, c); }
#endif

/* ---- activations: the cpu's qact bytes ------------------------------------ */

/* Bytes from one quantized row to the next (cpu_qact_stride): q[n], then
 * f32 d[n / blk], then int16 bsum[n / 16], rounded up to 64. */
SW_HD uint64_t q8_row_stride(uint32_t blk, uint64_t n) {
    const uint64_t b = n + 4 * (n / blk) + 2 * (n / 16);
    return (b + 63) / 64 * 64;
}

SW_HD float q8_fabs(float x) { return hd_float(hd_bits(x) & 0x7fffffffu); }
SW_HD int q8_finite(float a) { return (hd_bits(a) & 0x7f800000u) != 0x7f800000u; }

/* A block's scale from max |x| (amax) and whether all was finite; *id gets
 * the factor q = round(x * id) uses, 0 when every q is 0. As qact.c: a
 * non-finite block has a NaN scale and zero q's; a block too small for
 * 127 / amax to be finite, zero q's and scale 0. */
SW_HD float q8_block_scale(float amax, int finite, float *id) {
    *id = 0.0f;
    if (!finite)
        return hd_float(0x7fc00000u);
    if (amax == 0.0f)
        return 0.0f;
    const float f = hd_div(127.0f, amax);
    if (!q8_finite(f))
        return 0.0f;
    *id = f;
    return hd_div(amax, 127.0f);
}

/* One q: x * id rounded to nearest even by adding and removing 1.5 * 2^23
 * (qact.c's way; exact for |v| <= 127.5). */
SW_HD int q8_round(float x, float id) {
    const float magic = 12582912.0f;
    return (int)hd_sub(hd_add(hd_mul(x, id), magic), magic);
}

/* A whole row on one thread (the host's reference; the device kernel
 * reduces max and sums across a warp, which are exact in any order). */
SW_HD void q8_quant_row(uint32_t blk, const float *x, uint64_t n, uint8_t *dst) {
    int8_t *q = (int8_t *)dst;
    float *d = (float *)(void *)(dst + n);
    int16_t *bs = (int16_t *)(void *)(dst + n + 4 * (n / blk));
    for (uint64_t b = 0; b < n / blk; b++) {
        float amax = 0.0f, id;
        int finite = 1;
        for (uint32_t i = 0; i < blk; i++) {
            const float a = q8_fabs(x[b * blk + i]);
            finite &= q8_finite(a);
            amax = a > amax ? a : amax;
        }
        d[b] = q8_block_scale(amax, finite, &id);
        for (uint32_t i = 0; i < blk; i++)
            q[b * blk + i] = (int8_t)(id == 0.0f ? 0 : q8_round(x[b * blk + i], id));
    }
    for (uint64_t g = 0; g < n / 16; g++) {
        int s = 0;
        for (int i = 0; i < 16; i++)
            s += q[16 * g + (uint64_t)i];
        bs[g] = (int16_t)s;
    }
}

/* ---- 32-element types ------------------------------------------------------ */

/* Whether the integer path reads `type`; *blk gets the activations' block
 * length of its coarse form (32 or 256). */
SW_HD int q8_type(uint32_t type, uint32_t *blk) {
    switch (type) {
    case QB_Q4_0: case QB_Q5_0: case QB_Q8_0: case QB_Q4_1: case QB_Q5_1: *blk = 32; return 1;
    case QB_Q4_K: case QB_Q5_K: case QB_Q6_K: *blk = 256; return 1;
    default: *blk = 0; return 0;
    }
}

SW_HD uint32_t q8_ones(void) { return 0x01010101u; }

/* Whether `type` has a min (Q4_1, Q5_1: weight d * u + m, u unsigned). */
SW_HD int q8_has_min(uint32_t type) { return type == QB_Q4_1 || type == QB_Q5_1; }

/* Block `b` (its bytes) of a 32-element type: lane l's integer sum
 * s = sum_{k<4} w[4l+k] * q[4l+k], q the block's activations (4-byte
 * aligned); *dw gets the block's scale. Offsets (Q4_0's 8, Q5_0's 16)
 * come off as offset * sum q, exactly; the min types' w are their
 * unsigned u (the min's part is q8_block_min's). Bytes after the f16 d:
 * the min types' f16 m, then the 5-bit types' 32 high bits, then the
 * 16 bytes of nibbles. */
SW_HD int q8_s32(uint32_t type, const uint8_t *b, uint32_t l, const int8_t *q, float *dw) {
    const uint32_t xq = hd_u32a((const uint8_t *)(q + 4 * l));
    *dw = hd_load_f16(b);
    if (type == QB_Q8_0)
        return q8_dp4a(hd_u32(b + 2 + 4 * l), xq, 0);
    const int min = q8_has_min(type), five = type == QB_Q5_0 || type == QB_Q5_1;
    const uint32_t j0 = 4 * (l % 4), hi = l / 4;          /* elements j0.. of byte run */
    const uint8_t *qh_bytes = b + 2 + 2 * min, *qs = qh_bytes + 4 * five;
    uint32_t u = (hd_u32(qs + j0) >> (4 * hi)) & 0x0f0f0f0fu;
    if (five) {
        const uint32_t qh = hd_u32(qh_bytes) >> (4 * l); /* bits of elements 4l.. */
        for (uint32_t k = 0; k < 4; k++)
            u |= ((qh >> k) & 1u) << (8 * k + 4);
    }
    if (min)
        return q8_dp4a(u, xq, 0); /* u <= 31: the signed bytes dp4a reads */
    const int off = five ? 16 : 8;
    return q8_dp4a(u, xq, 0) - off * q8_dp4a(q8_ones(), xq, 0);
}

/* Block b's activation sum xsum[b] (idot.h) of a row x of n elements
 * quantized per 32: bsum[2b] + bsum[2b+1], exact. */
SW_HD int q8_xsum(const uint8_t *x, uint64_t n, uint64_t b) {
    const int16_t *bs = (const int16_t *)(const void *)(x + n + 4 * (n / 32));
    return bs[2 * b] + bs[2 * b + 1];
}

/* Block b (its bytes blk) of Q4_1/Q5_1: the min's step of idot.h,
 * accm = fmaf(m * dx[b], (float)xsum[b], accm), into the given
 * accumulator (accm[b % 8] of the canonical dot). */
SW_HD float q8_block_min(const uint8_t *blk, uint64_t b, const uint8_t *x, uint64_t n,
                         float accm) {
    const float dx = ((const float *)(const void *)(x + n))[b];
    return q8_fma(hd_mul(hd_load_f16(blk + 2), dx), (float)q8_xsum(x, n, b), accm);
}

/* ---- K types ---------------------------------------------------------------- */

/* The super-block's float scales: d (of s) and ms (of the offset m). */
SW_HD void q8_k_scales(uint32_t type, const uint8_t *b, float *d, float *ms) {
    if (type == QB_Q6_K) {
        *d = *ms = hd_load_f16(b + 208);
    } else {
        *d = hd_load_f16(b);
        *ms = hd_load_f16(b + 2);
    }
}

/* The 4 unsigned values u[32c + 4l .. + 3] of a K super-block, as bytes. */
SW_HD uint32_t q8_k_u4(uint32_t type, const uint8_t *b, uint32_t c, uint32_t l) {
    if (type == QB_Q6_K) {
        const uint32_t i = 32 * c + 4 * l, h = i / 128, r = i % 128;
        const uint32_t lo = (hd_u32(b + 64 * h + r % 64) >> (4 * (r / 64))) & 0x0f0f0f0fu;
        const uint32_t hi = (hd_u32(b + 128 + 32 * h + r % 32) >> (2 * (r / 32))) & 0x03030303u;
        return lo | hi << 4;
    }
    const uint8_t *qs = b + (type == QB_Q4_K ? 16 : 48);
    uint32_t u = (hd_u32a(qs + 32 * (c / 2) + 4 * l) >> (4 * (c % 2))) & 0x0f0f0f0fu;
    if (type == QB_Q5_K)
        u |= ((hd_u32a(b + 16 + 4 * l) >> c) & 0x01010101u) << 4;
    return u;
}

/* Sub-block scale sc(c, l): Q4_K/Q5_K's 6-bit scale of sub-block c,
 * Q6_K's int8 scale of the 16 elements holding 32c + 4l. */
SW_HD int q8_k_sc(uint32_t type, const uint8_t *b, uint32_t c, uint32_t l) {
    if (type == QB_Q6_K)
        return (int)(int8_t)b[192 + 2 * c + l / 4];
    int sc, mn;
    qb_scale_min_k4(b + 4, c, &sc, &mn);
    return sc;
}

/* Chunk c's lane-l partial: sc(c,l) * sum_{k<4} u[32c+4l+k] * q[32c+4l+k],
 * q the super-block's 256 activations. */
SW_HD int q8_k_chunk(uint32_t type, const uint8_t *b, uint32_t c, uint32_t l, const int8_t *q) {
    const uint32_t xq = hd_u32a((const uint8_t *)(q + 32 * c + 4 * l));
    return q8_k_sc(type, b, c, l) * q8_dp4a(q8_k_u4(type, b, c, l), xq, 0);
}

/* Lane l's offset term m[l] from the super-block's 16 activation sums:
 * Q4_K/Q5_K mn[l] * (bs[2l] + bs[2l+1]); Q6_K 32 * (sc[2l] bs[2l] +
 * sc[2l+1] bs[2l+1]). */
SW_HD int q8_k_offset(uint32_t type, const uint8_t *b, uint32_t l, const int16_t *bs) {
    const int s0 = bs[2 * l], s1 = bs[2 * l + 1];
    if (type == QB_Q6_K)
        return 32 * ((int)(int8_t)b[192 + 2 * l] * s0 + (int)(int8_t)b[193 + 2 * l] * s1);
    int sc, mn;
    qb_scale_min_k4(b + 4, l, &sc, &mn);
    return mn * (s0 + s1);
}

/* ---- the canonical order ------------------------------------------------------ */

/* R8 of 8 lane sums s[]: t_j = s[j] + s[j+4], (t0 + t2) + (t1 + t3). */
SW_HD float q8_r8_lanes(const float s[Q8_LANES]) {
    float t[4];
    for (int j = 0; j < 4; j++)
        t[j] = hd_add(s[j], s[j + 4]);
    return hd_add(hd_add(t[0], t[2]), hd_add(t[1], t[3]));
}

/* R8 of the two sets: s[l] = a0[l] + a1[l]. */
SW_HD float q8_r8(const float a0[Q8_LANES], const float a1[Q8_LANES]) {
    float s[Q8_LANES];
    for (int l = 0; l < Q8_LANES; l++)
        s[l] = hd_add(a0[l], a1[l]);
    return q8_r8_lanes(s);
}

/* R8 of the min types: s[l] = (a0[l] + a1[l]) + am[l], am the mins' set. */
SW_HD float q8_r8m(const float a0[Q8_LANES], const float a1[Q8_LANES],
                   const float am[Q8_LANES]) {
    float s[Q8_LANES];
    for (int l = 0; l < Q8_LANES; l++)
        s[l] = hd_add(hd_add(a0[l], a1[l]), am[l]);
    return q8_r8_lanes(s);
}

/* Block (or super-block) b's steps into acc, coarse form: the set b % 2. */
SW_HD void q8_block_coarse(uint32_t type, const uint8_t *blk, uint64_t b, const uint8_t *xq,
                           uint64_t n, uint32_t ab, float acc[2][Q8_LANES]) {
    const int8_t *q = (const int8_t *)xq + b * ab;
    const float dx = ((const float *)(const void *)(xq + n))[b];
    float *a = acc[b % 2];
    if (ab == 32) {
        for (uint32_t l = 0; l < Q8_LANES; l++) {
            float dw;
            const int s = q8_s32(type, blk, l, q, &dw);
            a[l] = q8_fma(hd_mul(dw, dx), (float)s, a[l]);
        }
        return;
    }
    const int16_t *bs = (const int16_t *)(const void *)(xq + n + 4 * (n / 256)) + 16 * b;
    float d, ms;
    q8_k_scales(type, blk, &d, &ms);
    for (uint32_t l = 0; l < Q8_LANES; l++) {
        int s = 0;
        for (uint32_t c = 0; c < 8; c++)
            s += q8_k_chunk(type, blk, c, l, q);
        a[l] = q8_fma(hd_mul(d, dx), (float)s, a[l]);
        a[l] = q8_fma(-hd_mul(ms, dx), (float)q8_k_offset(type, blk, l, bs), a[l]);
    }
}

/* Super-block b of a K type, fine form (activations per 32): chunk c into
 * set c % 2 in order, then lane l's offset into set 0 with dx[8b + l]. */
SW_HD void q8_block_fine(uint32_t type, const uint8_t *blk, uint64_t b, const uint8_t *xq,
                         uint64_t n, float acc[2][Q8_LANES]) {
    const int8_t *q = (const int8_t *)xq + 256 * b;
    const float *dx = (const float *)(const void *)(xq + n) + 8 * b;
    const int16_t *bs = (const int16_t *)(const void *)(xq + n + 4 * (n / 32)) + 16 * b;
    float d, ms;
    q8_k_scales(type, blk, &d, &ms);
    for (uint32_t l = 0; l < Q8_LANES; l++) {
        for (uint32_t c = 0; c < 8; c++)
            acc[c % 2][l] = q8_fma(hd_mul(d, dx[c]), (float)q8_k_chunk(type, blk, c, l, q),
                                   acc[c % 2][l]);
        acc[0][l] = q8_fma(-hd_mul(ms, dx[l]), (float)q8_k_offset(type, blk, l, bs), acc[0][l]);
    }
}

/* ---- one chain per thread: what the kernels run ------------------------------ */

enum { Q8_MAX_X = 8 }; /* activation rows per call (MV_MAX_TOKENS) */

/* Loops over tokens and chunks unrolled on the device, where a kernel
 * passes compile-time counts: its accumulators then stay in registers. */
#if defined(__CUDA_ARCH__)
#define Q8_UNROLL _Pragma("unroll")
#else
#define Q8_UNROLL
#endif

/* The accumulator (set, l) of the canonical dot over a whole row, for
 * n_x <= Q8_MAX_X activation rows xq + t * xs at once (each block's
 * weights read once): coarse form, the blocks b = set, set + 2, ... in
 * order; fine form, every super-block's chunks set, set + 2, set + 4,
 * set + 6 and, for set 0, the offset. Sixteen of these (set < 2, l < 8)
 * joined by q8_r8 (for the min types, with q8_chain_min's eight by
 * q8_r8m) are q8_row_dot, bit for bit: the GPU runs one per thread. */
SW_HD void q8_chain(uint32_t type, int fine, const uint8_t *row, const uint8_t *xq,
                    uint64_t xs, uint32_t n_x, uint64_t n, uint32_t set, uint32_t l,
                    float acc[Q8_MAX_X]) {
    uint32_t elems, bytes, ab;
    qb_geometry(type, &elems, &bytes);
    const int ok = q8_type(type, &ab);
    const int kfine = fine && ab == 256;
    const uint32_t xb = kfine ? 32 : ab;  /* the activations' block */
    const uint64_t nb = ok ? n / elems : 0;
    Q8_UNROLL
    for (uint32_t t = 0; t < n_x; t++)
        acc[t] = 0.0f;
    for (uint64_t b = kfine ? 0 : set; b < nb; b += kfine ? 1 : 2) {
        const uint8_t *blk = row + b * bytes;
        Q8_UNROLL
        for (uint32_t t = 0; t < n_x; t++) {
            const uint8_t *x = xq + t * xs;
            const int8_t *q = (const int8_t *)x + b * elems;
            const float *dx = (const float *)(const void *)(x + n);
            const int16_t *bs = (const int16_t *)(const void *)(x + n + 4 * (n / xb)) + 16 * b;
            if (ab == 32) {
                float dw;
                const int s = q8_s32(type, blk, l, q, &dw);
                acc[t] = q8_fma(hd_mul(dw, dx[b]), (float)s, acc[t]);
                continue;
            }
            float d, ms;
            q8_k_scales(type, blk, &d, &ms);
            if (!kfine) {
                int s = 0;
                Q8_UNROLL
                for (uint32_t c = 0; c < 8; c++)
                    s += q8_k_chunk(type, blk, c, l, q);
                acc[t] = q8_fma(hd_mul(d, dx[b]), (float)s, acc[t]);
                acc[t] = q8_fma(-hd_mul(ms, dx[b]), (float)q8_k_offset(type, blk, l, bs), acc[t]);
                continue;
            }
            Q8_UNROLL
            for (uint32_t c = set; c < 8; c += 2)
                acc[t] = q8_fma(hd_mul(d, dx[8 * b + c]), (float)q8_k_chunk(type, blk, c, l, q),
                                acc[t]);
            if (set == 0)
                acc[t] = q8_fma(-hd_mul(ms, dx[8 * b + l]), (float)q8_k_offset(type, blk, l, bs),
                                acc[t]);
        }
    }
}

/* The min types' accumulator accm[l] of the canonical dot over a whole
 * row, for n_x <= Q8_MAX_X activation rows xq + t * xs (per 32): the
 * blocks b = l, l + 8, ... in order (0 for a type without a min). Joined
 * with the sixteen q8_chain accumulators by q8_r8m: the GPU runs it on
 * the threads of set 0, which add it to their lane's sum. */
SW_HD void q8_chain_min(uint32_t type, const uint8_t *row, const uint8_t *xq, uint64_t xs,
                        uint32_t n_x, uint64_t n, uint32_t l, float accm[Q8_MAX_X]) {
    uint32_t elems, bytes;
    qb_geometry(type, &elems, &bytes);
    const uint64_t nb = q8_has_min(type) ? n / 32 : 0;
    Q8_UNROLL
    for (uint32_t t = 0; t < n_x; t++)
        accm[t] = 0.0f;
    for (uint64_t b = l; b < nb; b += Q8_LANES) {
        Q8_UNROLL
        for (uint32_t t = 0; t < n_x; t++)
            accm[t] = q8_block_min(row + b * bytes, b, xq + t * xs, n, accm[t]);
    }
}

/* The dot of an n-element row of `type` with one quantized activation row
 * xq (quantized per 32 when `fine` or for a 32-element type, else per
 * 256): idot.h's canonical integer dot, the same bits as the cpu's,
 * written serially block by block. */
SW_HD float q8_row_dot(uint32_t type, int fine, const uint8_t *row, const uint8_t *xq,
                       uint64_t n) {
    uint32_t elems, bytes, ab;
    qb_geometry(type, &elems, &bytes);
    if (!q8_type(type, &ab))
        return 0.0f;
    float acc[2][Q8_LANES], accm[Q8_LANES];
    for (int l = 0; l < Q8_LANES; l++)
        acc[0][l] = acc[1][l] = accm[l] = 0.0f;
    for (uint64_t b = 0; b < n / elems; b++) {
        if (fine && ab == 256)
            q8_block_fine(type, row + b * bytes, b, xq, n, acc);
        else
            q8_block_coarse(type, row + b * bytes, b, xq, n, ab, acc);
        if (q8_has_min(type))
            accm[b % 8] = q8_block_min(row + b * bytes, b, xq, n, accm[b % 8]);
    }
    return q8_has_min(type) ? q8_r8m(acc[0], acc[1], accm) : q8_r8(acc[0], acc[1]);
}

#endif
