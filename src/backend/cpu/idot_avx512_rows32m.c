/*
 * idot_avx512_rows32m.c — the 32-element types with a min (Q4_1, Q5_1;
 * their coarse and fine forms are one kernel) with AVX-512 VNNI (internal
 * to backend/cpu): the decode step's stored rows (idot.h's `rows`: one
 * token against many rows), and prefill's unpacked rows (`unpacked_dot`,
 * idot.h's U32M layout, 1 to 4 tokens a row; no tile: prefill takes the
 * unpacked dot per 4 tokens). idot_avx512_rows32.c's kernel for Q4_0/Q5_0
 * is the model: on an Intel Xeon core, the AVX2 kernels these replace read
 * L2-resident rows at 18 GB/s (Q4_1) and 14 (Q5_1) against these 42 and
 * 34, and prefill ran at 55 GFLOP/s against 72.
 *
 * Blocks b and b+1 (b even) fill the low and the high half of a 512-bit
 * register: idot.h's sets acc[0] and acc[1], each lane performing the
 * canonical steps in the canonical order. The values are unsigned, so
 * vpdpbusd gives each lane's s[l] directly (exact: at most 4 * 31 * 127).
 * The mins' part goes by 8 blocks, as idot.h defines it: the 8 blocks'
 * (d, m) pairs are converted from f16 at once and multiplied by the
 * token's scales (the products of the scalar form, lane for lane), and
 * one FMA takes the 8 blocks' activation sums, computed once per call
 * from qact.h's block sums (izm_sums). The rows stream with
 * idot_x86.h's software prefetch distance, two rows at a time as in
 * rows32, each row's prefetch running into the next pair of rows at its
 * end. Bit for bit the portable kernels' results (tests/test_idot.c).
 */
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "backend/cpu/idot.h"
#include "quant/types.h"

void cpu_idot_avx512_rows32m_patch(cpu_idot table[]);
const cpu_idot *cpu_idot_table_avx2(void);

#define CPU_TARGET "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni"
#include "backend/cpu/target_begin.h"

#include "backend/cpu/idot_avx512_x.h"

/* The widest row whose activation block sums this kernel keeps on the
 * stack (4 KiB); wider rows take AVX2's kernel, the same bits. Gemma's
 * widest input is 21504 (31B's MLP). */
enum { IZM_MAX_N = 32768 };

enum { IZM_Q4_1, IZM_Q5_1 };
#define IZM_BYTES(k) ((k) == IZM_Q5_1 ? 24u : 20u)

/* xs[b] = bs[2b] + bs[2b+1] as f32 (exact), b < nb, then zeros up to a
 * multiple of 8: each block's activation sum, for every row. */
static void izm_sums(const int16_t *bs, uint64_t nb, float *xs) {
    const __m512i ones = _mm512_set1_epi16(1);
    uint64_t b = 0;
    for (; b + 16 <= nb; b += 16) {
        const __m512i v = _mm512_loadu_si512((const void *)(bs + 2 * b));
        _mm512_storeu_ps(xs + b, _mm512_cvtepi32_ps(_mm512_madd_epi16(v, ones)));
    }
    for (; b < nb; b++)
        xs[b] = (float)(bs[2 * b] + bs[2 * b + 1]);
    for (; b % 8 != 0; b++)
        xs[b] = 0.0f;
}

/* The unsigned values of blocks b0 and b1 = b0 + bytes (the low and the
 * high half), or of b0 alone (`last`: the high half a copy, unused):
 * iz_nibble_pair's nibbles, with Q5_1's fifth bits (iz_fifth_bits). */
IA_INLINE __m512i izm_values(int kind, int last, const uint8_t *b0) {
    const uint8_t *b1 = b0 + IZM_BYTES(kind);
    const uint32_t qs = kind == IZM_Q5_1 ? 8 : 4;
    const __m512i u = iz_nibble_pair(b0 + qs, b1 + qs, last);
    return kind == IZM_Q4_1 ? u : iz_fifth_bits(u, b0 + 4, b1 + 4, last);
}

/* h with int32 lane j from v (j a constant: the blend's mask an
 * immediate, no mask register) */
IA_INLINE __m256i izm_lane(__m256i h, __m256i v, int j) {
    switch (j) {
    case 0: return _mm256_blend_epi32(h, v, 0x01);
    case 1: return _mm256_blend_epi32(h, v, 0x02);
    case 2: return _mm256_blend_epi32(h, v, 0x04);
    case 3: return _mm256_blend_epi32(h, v, 0x08);
    case 4: return _mm256_blend_epi32(h, v, 0x10);
    case 5: return _mm256_blend_epi32(h, v, 0x20);
    case 6: return _mm256_blend_epi32(h, v, 0x40);
    default: return _mm256_blend_epi32(h, v, 0x80);
    }
}

/* The permutes' indices (from memory: built in registers they took the
 * shuffle port in the loop). A block's d | m << 16 is dword 5j (Q4_1) or
 * 6j (Q5_1) of a group of 8; the sources below are dwords 0..15 (a),
 * 20..35 (b, Q4_1) or 18..33 (b) and 27..42 (c, Q5_1), all within the
 * group. */
static const _Alignas(64) int32_t izm_dm_idx[3][16] = {
    {0, 5, 10, 15, 16, 21, 26, 31, 0, 0, 0, 0, 0, 0, 0, 0},  /* Q4_1: a, b */
    {0, 6, 12, 16, 22, 28, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},   /* Q5_1: a, b */
    {0, 1, 2, 3, 4, 5, 25, 31, 0, 0, 0, 0, 0, 0, 0, 0},     /* Q5_1: then c */
};

/* The 8 blocks' d | m << 16 from blk in int32 lane j: loads and one
 * (Q4_1) or two (Q5_1) two-source permutes, in place of 8 broadcasts and
 * blends (L2-resident rows ran about 10% faster). */
IA_INLINE __m256i izm_dm8(int kind, const uint8_t *blk) {
    const __m512i a = _mm512_loadu_si512((const void *)blk);
    const __m512i *idx = (const __m512i *)(const void *)izm_dm_idx;
    if (kind == IZM_Q4_1) {
        const __m512i b = _mm512_loadu_si512((const void *)(blk + 80));
        return _mm512_castsi512_si256(_mm512_permutex2var_epi32(a, idx[0], b));
    }
    const __m512i b = _mm512_loadu_si512((const void *)(blk + 72));
    const __m512i c = _mm512_loadu_si512((const void *)(blk + 108));
    const __m512i ab = _mm512_permutex2var_epi32(a, idx[1], b);
    return _mm512_castsi512_si256(_mm512_permutex2var_epi32(ab, idx[2], c));
}

/* [d0*dx0, m0*dx0, d1*dx1, m1*dx1, ...] for blocks b .. b+nm-1 (nm <= 8)
 * from blk, dxb = dx + b; 0 past nm. */
IA_INLINE __m512 izm_scales(int kind, int nm, const uint8_t *blk, const float *dxb) {
    /* block j's d | m << 16 in int32 lane j: izm_dm8 for a whole group;
     * a row's last few by broadcasts from memory and immediate blends
     * (the permute's loads could pass the row's end) */
    __m256i h = _mm256_setzero_si256();
    if (nm == 8) {
        h = izm_dm8(kind, blk);
    } else {
        IA_UNROLL8
        for (int j = 0; j < nm; j++) {
            int32_t v;
            memcpy(&v, blk + (uint64_t)j * IZM_BYTES(kind), sizeof v);
            h = izm_lane(h, _mm256_set1_epi32(v), j);
        }
    }
    const __m512 dm = _mm512_cvtph_ps(h);
    const __m512 dx = nm == 8 ? _mm512_castps256_ps512(_mm256_loadu_ps(dxb))
                              : _mm512_maskz_loadu_ps((__mmask16)((1u << nm) - 1), dxb);
    const __m512i dup = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
    return _mm512_mul_ps(dm, _mm512_permutexvar_ps(dup, dx));
}

/* Block pair j's scales d*dx of izm_scales' p: block 2j's in the low
 * half, 2j+1's in the high half. */
static const _Alignas(64) int32_t izm_halves_idx[4][16] = {
    {0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2},
    {4, 4, 4, 4, 4, 4, 4, 4, 6, 6, 6, 6, 6, 6, 6, 6},
    {8, 8, 8, 8, 8, 8, 8, 8, 10, 10, 10, 10, 10, 10, 10, 10},
    {12, 12, 12, 12, 12, 12, 12, 12, 14, 14, 14, 14, 14, 14, 14, 14},
};
IA_INLINE __m512 izm_halves(__m512 p, int j) {
    /* the indices from memory: built in registers they took the shuffle
     * port in the loop */
    return _mm512_permutexvar_ps(_mm512_load_si512((const void *)izm_halves_idx[j]), p);
}

/* Blocks b, b+1 (or b alone, `last`) with their scales d into
 * acc = [set 0 | set 1]. */
IA_INLINE __m512 izm_pair(int kind, int last, const uint8_t *blk, const int8_t *qb, __m512 d,
                          __m512 acc) {
    const __m512i u = izm_values(kind, last, blk);
    const __mmask64 km = last ? 0xffffffffu : ~(__mmask64)0;
    const __m512i s =
        _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, _mm512_maskz_loadu_epi8(km, qb));
    return last ? _mm512_mask3_fmadd_ps(d, _mm512_cvtepi32_ps(s), acc, 0x00ff)
                : _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(s), acc);
}

/* Blocks b .. b+nm-1 (nm <= 8) of one row from blk: the scaled part into
 * acc, the mins' into accm (its lanes past nm untouched). */
IA_INLINE void izm_group(int kind, int nm, const uint8_t *blk, const uint8_t *pf,
                         const int8_t *qb, const float *xsb, const float *dxb, __m512 *acc,
                         __m256 *accm) {
    const uint32_t bb = IZM_BYTES(kind);
    /* a prefetch a line, the group's 160 or 192 bytes (not one per pair
     * as rows32's: L2-resident rows ran 10% faster with fewer) */
    if (nm == 8)
        for (uint32_t i = 0; i < 8 * bb; i += 64)
            _mm_prefetch((const char *)(pf + i), _MM_HINT_T0);
    const __m512 p = izm_scales(kind, nm, blk, dxb);
    IA_UNROLL
    for (int j = 0; j < nm / 2; j++)
        *acc = izm_pair(kind, 0, blk + 2 * (uint64_t)j * bb, qb + 64 * j, izm_halves(p, j), *acc);
    if (nm % 2 == 1)
        *acc = izm_pair(kind, 1, blk + (uint64_t)(nm - 1) * bb, qb + 32 * (nm - 1),
                        izm_halves(p, nm / 2), *acc);
    const __m512i odd = _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 15, 13, 11, 9, 7, 5, 3, 1);
    const __m256 mm = _mm512_castps512_ps256(_mm512_permutexvar_ps(odd, p));
    const __m256 xs = _mm256_loadu_ps(xsb); /* zeros past the row's blocks */
    *accm = nm == 8 ? _mm256_fmadd_ps(mm, xs, *accm)
                    : _mm256_mask3_fmadd_ps(mm, xs, *accm, (__mmask8)((1u << nm) - 1));
}

/* Rows at a time, as rows32: each row's chains are its own (idot.h's
 * order); two rows interleaved share the activations' loads. */
enum { IZM_NR = 2 };

/* Each row's prefetch distance: idot_x86.h's, shared by the rows read
 * side by side (the same distance in the stream; on an Intel Xeon core
 * 2, 4.5, 9 and 16 KiB per row were alike within the machine's noise). */
enum { IZM_PREFETCH_ROW = IA_PREFETCH_BYTES / IZM_NR };

/* nr rows (rb bytes apart) from `rows`: out[0 .. nr-1]. */
IA_INLINE void izm_row_group(int kind, int nr, const uint8_t *rows, uint64_t rb, const int8_t *q,
                             const float *xs, const float *dx, uint64_t n, float *out) {
    const uint32_t bb = IZM_BYTES(kind);
    const uint64_t nb = n / 32;
    __m512 acc[IZM_NR];
    __m256 accm[IZM_NR];
    IA_UNROLL
    for (int i = 0; i < nr; i++) {
        acc[i] = _mm512_setzero_ps();
        accm[i] = _mm256_setzero_ps();
    }
    /* each row's prefetch IZM_PREFETCH_ROW bytes ahead of the group at
     * hand, and past the row's end into the row nr further on (the one a
     * call reads in its place next: with nr rows read side by side, a
     * distance within one stream, as idot_x86.h's, lands in the rows being
     * read) */
    const uint64_t row_len = bb * nb;
    uint64_t b = 0;
    for (; b + 8 <= nb; b += 8) {
        const uint64_t ahead = bb * b + IZM_PREFETCH_ROW;
        const uint64_t pf_off = ahead < row_len ? ahead : ahead - row_len + (uint64_t)nr * rb;
        IA_UNROLL
        for (int i = 0; i < nr; i++)
            izm_group(kind, 8, rows + (uint64_t)i * rb + bb * b, rows + (uint64_t)i * rb + pf_off,
                      q + 32 * b, xs + b, dx + b, &acc[i], &accm[i]);
    }
#define IZM_TAIL(NM_)                                                                   \
    for (int i = 0; i < nr; i++)                                                        \
        izm_group(kind, NM_, rows + (uint64_t)i * rb + bb * b, NULL, q + 32 * b, xs + b,    \
                  dx + b, &acc[i], &accm[i]);
    switch (nb - b) { /* the last 1 to 7 blocks, one instance per count */
    case 1: IZM_TAIL(1) break;
    case 2: IZM_TAIL(2) break;
    case 3: IZM_TAIL(3) break;
    case 4: IZM_TAIL(4) break;
    case 5: IZM_TAIL(5) break;
    case 6: IZM_TAIL(6) break;
    case 7: IZM_TAIL(7) break;
    default: break;
    }
#undef IZM_TAIL
    IA_UNROLL
    for (int i = 0; i < nr; i++) { /* R8((acc[0] + acc[1]) + accm) */
        const __m256 s = _mm256_add_ps(_mm512_castps512_ps256(acc[i]),
                                       _mm512_extractf32x8_ps(acc[i], 1));
        out[i] = ia_r8(s, accm[i]);
    }
}

IA_INLINE void izm_rows(int kind, const uint8_t *rows, uint64_t rb, uint64_t n_rows,
                        const uint8_t *xq, uint64_t n, float *out) {
    if (n > IZM_MAX_N) {
        const uint32_t type = kind == IZM_Q5_1 ? SW_TYPE_Q5_1 : SW_TYPE_Q4_1;
        cpu_idot_table_avx2()[type].rows(rows, rb, n_rows, xq, n, out);
        return;
    }
    _Alignas(64) float xs[IZM_MAX_N / 32];
    const int8_t *q = (const int8_t *)xq;
    const float *dx = cpu_qact_scales(xq, n);
    izm_sums(cpu_qact_bsums(CPU_QACT_32, xq, n), n / 32, xs);
    uint64_t r = 0;
    for (; r + IZM_NR <= n_rows; r += IZM_NR)
        izm_row_group(kind, IZM_NR, rows + r * rb, rb, q, xs, dx, n, out + r);
    for (; r < n_rows; r++)
        izm_row_group(kind, 1, rows + r * rb, rb, q, xs, dx, n, out + r);
}

static void izm_rows_q4_1(const uint8_t *rows, uint64_t rb, uint64_t n_rows, const uint8_t *xq,
                          uint64_t n, float *out) {
    izm_rows(IZM_Q4_1, rows, rb, n_rows, xq, n, out);
}
static void izm_rows_q5_1(const uint8_t *rows, uint64_t rb, uint64_t n_rows, const uint8_t *xq,
                          uint64_t n, float *out) {
    izm_rows(IZM_Q5_1, rows, rb, n_rows, xq, n, out);
}

/* ---- prefill: unpacked rows (idot.h's U32M layout: f32 d, f32 m, u8
 * u[32] per block), 1 to CPU_IDOT_MAX_X tokens a row ---------------------- */

enum { IZU_BYTES = CPU_IDOT_U32M_BYTES };

/* The float at p in all 16 lanes; lanes 8..15 the one at hi unless
 * `last` (the high half unused). A broadcast from memory and a masked one:
 * no shuffle. */
IA_INLINE __m512 izu_halves(int last, const void *lo, const void *hi) {
    float l;
    memcpy(&l, lo, sizeof l);
    const __m512 v = _mm512_set1_ps(l);
    return last ? v
                : _mm512_mask_broadcastss_ps(v, 0xff00, _mm_castsi128_ps(_mm_loadu_si32(hi)));
}

/* Unpacked blocks b, b+1 (or b alone, `last`) for nx tokens into
 * acc[t] = [set 0 | set 1]. */
IA_INLINE void izu_pair(int last, const uint8_t *blk, uint64_t b, int nx, const ia_xk *x,
                        __m512 *acc) {
    const __m512i u = last ? _mm512_maskz_loadu_epi32(0x00ff, blk + 8)
                           : _mm512_inserti64x4(_mm512_castsi256_si512(ia_load(blk + 8)),
                                                ia_load(blk + IZU_BYTES + 8), 1);
    const __m512 dw = izu_halves(last, blk, blk + IZU_BYTES);
    IA_UNROLL
    for (int t = 0; t < nx; t++) {
        const __m512 dd = _mm512_mul_ps(dw, izu_halves(last, x->dx[t] + b, x->dx[t] + b + 1));
        const __m512i xv = last ? _mm512_maskz_loadu_epi32(0x00ff, x->q[t] + 32 * b)
                                : _mm512_loadu_si512((const void *)(x->q[t] + 32 * b));
        const __m512 s = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(_mm512_setzero_si512(), u, xv));
        acc[t] = last ? _mm512_mask3_fmadd_ps(dd, s, acc[t], 0x00ff)
                      : _mm512_fmadd_ps(dd, s, acc[t]);
    }
}

/* The mins of unpacked blocks blk, blk + IZU_BYTES, ... (nm <= 8; 0 past
 * nm). */
IA_INLINE __m256 izu_mins(const uint8_t *blk, int nm) {
    __m256i h = _mm256_setzero_si256();
    IA_UNROLL8
    for (int j = 0; j < nm; j++) {
        int32_t v;
        memcpy(&v, blk + (uint64_t)j * IZU_BYTES + 4, sizeof v);
        h = izm_lane(h, _mm256_set1_epi32(v), j);
    }
    return _mm256_castsi256_ps(h);
}

/* Blocks b .. b+nm-1 (nm <= 8) of an unpacked row: the scaled part into
 * acc, the mins' into am, for nx tokens (idot.h). A short group reads
 * the activations through zeroed copies: the lanes past it add 0 * 0. */
IA_INLINE void izu_group(int nm, const uint8_t *blk, uint64_t b, int nx, const ia_xk *x,
                         __m512 *acc, __m256 *am) {
    IA_UNROLL
    for (int j = 0; j < nm / 2; j++)
        izu_pair(0, blk + 2 * (uint64_t)j * IZU_BYTES, b + 2 * (uint64_t)j, nx, x, acc);
    if (nm % 2 == 1)
        izu_pair(1, blk + (uint64_t)(nm - 1) * IZU_BYTES, b + (uint64_t)nm - 1, nx, x, acc);
    const __m256 mv = izu_mins(blk, nm);
    IA_UNROLL
    for (int t = 0; t < nx; t++) {
        __m256 dxv;
        __m256i bsv;
        if (nm == 8) {
            dxv = _mm256_loadu_ps(x->dx[t] + b);
            bsv = ia_load(x->bs[t] + 2 * b);
        } else {
            const __mmask8 k = (__mmask8)((1u << nm) - 1);
            dxv = _mm256_maskz_loadu_ps(k, x->dx[t] + b);
            bsv = _mm256_maskz_loadu_epi32(k, x->bs[t] + 2 * b);
        }
        const __m256i xsum = _mm256_madd_epi16(bsv, _mm256_set1_epi16(1));
        am[t] = _mm256_fmadd_ps(_mm256_mul_ps(mv, dxv), _mm256_cvtepi32_ps(xsum), am[t]);
    }
}

IA_INLINE void izu_dot(int nx, const uint8_t *row, const uint8_t *xq, uint64_t xs, uint64_t n,
                       float *out) {
    const ia_xk x = ia_xk_of(1, nx, xq, xs, n); /* CPU_QACT_32's block sums */
    __m512 acc[CPU_IDOT_MAX_X];
    __m256 am[CPU_IDOT_MAX_X];
    IA_UNROLL
    for (int t = 0; t < nx; t++) {
        acc[t] = _mm512_setzero_ps();
        am[t] = _mm256_setzero_ps();
    }
    const uint64_t nb = n / 32;
    uint64_t b = 0;
    for (; b + 8 <= nb; b += 8)
        izu_group(8, row + b * IZU_BYTES, b, nx, &x, acc, am);
    const uint8_t *blk = row + b * IZU_BYTES;
    switch (nb - b) { /* the last 1 to 7 blocks, one instance per count */
    case 1: izu_group(1, blk, b, nx, &x, acc, am); break;
    case 2: izu_group(2, blk, b, nx, &x, acc, am); break;
    case 3: izu_group(3, blk, b, nx, &x, acc, am); break;
    case 4: izu_group(4, blk, b, nx, &x, acc, am); break;
    case 5: izu_group(5, blk, b, nx, &x, acc, am); break;
    case 6: izu_group(6, blk, b, nx, &x, acc, am); break;
    case 7: izu_group(7, blk, b, nx, &x, acc, am); break;
    default: break;
    }
    IA_UNROLL
    for (int t = 0; t < nx; t++) { /* R8((acc[0] + acc[1]) + accm) */
        const __m256 s = _mm256_add_ps(_mm512_castps512_ps256(acc[t]),
                                       _mm512_extractf32x8_ps(acc[t], 1));
        out[t] = ia_r8(s, am[t]);
    }
}

#define IZU_(NX_) izu_dot(NX_, row, xq, xs, n, out)
IX_ENTRY_DOT(izu_u32m, IZU_)

/* Replaces the min types' `rows` and `unpacked_dot` in the AVX-512 table
 * (idot.c; both forms: the types are per 32). Same unpacked layout as
 * AVX2's unpack, which stays. */
void cpu_idot_avx512_rows32m_patch(cpu_idot table[]) {
    table[SW_TYPE_Q4_1].rows = izm_rows_q4_1;
    table[SW_TYPE_Q5_1].rows = izm_rows_q5_1;
    table[SW_TYPE_Q4_1].unpacked_dot = izu_u32m;
    table[SW_TYPE_Q5_1].unpacked_dot = izu_u32m;
}

#include "backend/cpu/target_end.h"
#else
/* ISO C wants at least one declaration in a translation unit. */
typedef int idot_avx512_rows32m_unavailable;
#endif
