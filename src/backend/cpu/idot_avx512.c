/*
 * idot_avx512.c — idot.h's integer dots with AVX-512 (F, BW, VL, DQ) and
 * VNNI, for the kernels where the wider registers and the fused integer
 * multiply-adds pay: the 32-element types' stored rows (their unpacked
 * rows have a layout of their own, idot_avx512_tile32.c's), the unpacked K rows of prefill as tiles of rows x tokens, in both
 * forms, and the unpacking of Q4_K/Q5_K rows. The stored rows of decode
 * are idot_avx512_krows.c's, idot_avx512_q6rows.c's and (the 32-element
 * types) idot_avx512_rows32.c's; the stored K rows of a few tokens
 * (`dot`) and Q6_K's unpacking keep the AVX2 kernels: idot.c starts this
 * set from AVX2's table and replaces the entries below
 * (cpu_idot_avx512_patch) and theirs.
 *
 * A 512-bit register holds two of idot.h's 8-lane sets side by side, so
 * every lane still performs the canonical operations in the canonical
 * order and the results equal the portable kernels bit for bit:
 *   32-element types: blocks b and b+1 (b even) fill the low and the high
 *     half; the halves are the sets acc[0] and acc[1]. vpdpbusd sums the
 *     four u8 x s8 products of each lane at once, exactly (the signed
 *     weights enter as |w| with the activations negated where w < 0; the
 *     prefill tile, idot_avx512_tile32.c, biases the activations instead).
 *   K types, coarse form: chunks 2p and 2p+1 of a super-block fill the
 *     halves; the integer sums of the halves are added (exact in any order)
 *     before the block's two float steps, which two tokens share in one
 *     register. Each lane's four products are summed with vpdpbusd (K
 *     values at most 63: at most 4 * 63 * 127 = 32004, an int16), two
 *     chunk pairs' lanes paired as int16 and both scales applied with one
 *     vpdpwssd; integer sums are exact in any grouping, so this is the
 *     canonical s[l].
 *   K types, fine form: chunks 2p and 2p+1 are the sets c % 2 = 0 and 1,
 *     each with its own scale; the values meet the activations through
 *     vpmaddubsw (pairs cannot saturate: 2 * 63 * 127 < 32767) and the
 *     sub-block scales through vpmaddwd; the offset step touches the low
 *     half only.
 */
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "backend/cpu/idot.h"
#include "quant/types.h"

void cpu_idot_avx512_patch(cpu_idot table[], int fine);
void cpu_idot_avx512_tile32_patch(cpu_idot table[]);

#define CPU_TARGET "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni"
#include "backend/cpu/target_begin.h"

#include "backend/cpu/idot_avx512_x.h"

/* lo in the low 256 bits, hi in the high ones */
IA_INLINE __m512i iz_join(__m256i lo, __m256i hi) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}
IA_INLINE __m512 iz_joinf(float lo, float hi) {
    return _mm512_insertf32x8(_mm512_set1_ps(lo), _mm256_set1_ps(hi), 1);
}

/* The permutation that puts lane 2p in lanes 0..7 and lane 2p+1 in
 * lanes 8..15: chunk pair p's two scales. */
IA_INLINE __m512i iz_pair_idx(int p) {
    return iz_join(_mm256_set1_epi32(2 * p), _mm256_set1_epi32(2 * p + 1));
}

/* The low and high halves as the sets acc[0] and acc[1]: R8 of idot.h. */
IA_INLINE float iz_r8(__m512 acc) {
    return ia_r8(_mm512_castps512_ps256(acc), _mm512_extractf32x8_ps(acc, 1));
}

/* ---- 32-element types ------------------------------------------------ */

/* Blocks b, b+1 (values w, scales dw as halves) into acc, for nx tokens. */
IA_INLINE void iz_pair32(__m512i w, __m512 dw, uint64_t b, int nx, const int8_t *const *q,
                         const float *const *dx, __m512 *acc) {
    const __m512i aw = _mm512_abs_epi8(w);
    const __mmask64 neg = _mm512_movepi8_mask(w);
    const __m512i zero = _mm512_setzero_si512();
    IA_UNROLL
    for (int t = 0; t < nx; t++) {
        const __m512i x = _mm512_loadu_si512(q[t] + 32 * b);
        const __m512i s = _mm512_dpbusd_epi32(zero, aw, _mm512_mask_sub_epi8(x, neg, zero, x));
        const __m512 d = _mm512_mul_ps(dw, iz_pair_bcast(dx[t] + b));
        acc[t] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(s), acc[t]);
    }
}

/* Block b alone (the last of an odd count) into the low half. */
IA_INLINE void iz_last32(__m256i w, float dw, uint64_t b, int nx, const int8_t *const *q,
                         const float *const *dx, __m512 *acc) {
    const __m256i aw = _mm256_abs_epi8(w);
    const __mmask32 neg = _mm256_movepi8_mask(w);
    const __m256i zero = _mm256_setzero_si256();
    const __m256 dwv = _mm256_set1_ps(dw);
    IA_UNROLL
    for (int t = 0; t < nx; t++) {
        const __m256i x = ia_load(q[t] + 32 * b);
        const __m256i s = _mm256_dpbusd_epi32(zero, aw, _mm256_mask_sub_epi8(x, neg, zero, x));
        const __m256 a0 = ia_step(_mm512_castps512_ps256(acc[t]), ia_scale(dwv, dx[t] + b), s);
        acc[t] = _mm512_insertf32x8(acc[t], a0, 0);
    }
}

IA_INLINE void iz_dot32(ia_w32_fn wfn, ia_s32_fn sfn, uint32_t bb, int nx, const uint8_t *row,
                        const uint8_t *xq, uint64_t xs, uint64_t n, float *out) {
    const int8_t *q[CPU_IDOT_MAX_X];
    const float *dx[CPU_IDOT_MAX_X];
    __m512 acc[CPU_IDOT_MAX_X];
    IA_UNROLL
    for (int t = 0; t < nx; t++) {
        q[t] = (const int8_t *)(xq + (uint64_t)t * xs);
        dx[t] = cpu_qact_scales(xq + (uint64_t)t * xs, n);
        acc[t] = _mm512_setzero_ps();
    }
    const uint64_t nb = n / 32;
    uint64_t b = 0;
    for (; b + 1 < nb; b += 2) {
        const uint8_t *b0 = row + b * bb, *b1 = b0 + bb;
        iz_pair32(iz_join(wfn(b0), wfn(b1)), iz_joinf(sfn(b0), sfn(b1)), b, nx, q, dx, acc);
    }
    if (b < nb)
        iz_last32(wfn(row + b * bb), sfn(row + b * bb), b, nx, q, dx, acc);
    IA_UNROLL
    for (int t = 0; t < nx; t++)
        out[t] = iz_r8(acc[t]);
}

/* ---- pieces of the K tiles ---------------------------------------------- */

/* The integer halves of a and b side by side, as iz_fold2. */
IA_INLINE __m512i iz_fold2i(__m512i a, __m512i b) {
    return _mm512_add_epi32(_mm512_shuffle_i64x2(a, b, 0x44), _mm512_shuffle_i64x2(a, b, 0xee));
}

/* y[t*ys + r] = lane t of o, for the tile's nt tokens. */
IA_INLINE void iz_put_row(float *y, uint64_t ys, int r, int nt, __m128 o) {
    float v[4];
    _mm_storeu_ps(v, o);
    IA_UNROLL
    for (int t = 0; t < nt; t++)
        y[(uint64_t)t * ys + (uint64_t)r] = v[t];
}

/* R8 of four tokens' accumulators, each [acc[0] | acc[1]]. */
IA_INLINE __m128 iz_r8x4(__m512 a0, __m512 a1, __m512 a2, __m512 a3) {
    return iz_r8_s4(iz_fold2(a0, a1), iz_fold2(a2, a3));
}

/* A cpu_idot_tile_fn `name` from a tile function part(rows, rbytes, NR,
 * xq, xs, NT, n, y, ys): tiles of MR rows (2, a literal) x 4
 * tokens, each smaller shape at the edges a constant instance of its own
 * (every (rows, tokens) pair is a case: nr * 4 + nt is unique). */
#define IZ_TILE_CASE(part, NR, NT)                                                      \
    case (NR) * 4 + (NT): part(rr, rbytes, NR, xt, xs, NT, n, yt + r0, ys); break;
#define IZ_TILE_ROWS(part, NR)                                                          \
    IZ_TILE_CASE(part, NR, 1) IZ_TILE_CASE(part, NR, 2) IZ_TILE_CASE(part, NR, 3)       \
    IZ_TILE_CASE(part, NR, 4)
#define IZ_TILE_CASES2(part) IZ_TILE_ROWS(part, 1) IZ_TILE_ROWS(part, 2)
#define IZ_TILE_DRIVER(name, part, MR)                                                  \
    static void name(const uint8_t *rows, uint64_t rbytes, uint32_t n_rows,             \
                     const uint8_t *xq, uint64_t xs, uint32_t n_x, uint64_t n, float *y, \
                     uint64_t ys) {                                                     \
        for (uint32_t t0 = 0; t0 < n_x; t0 += 4) {                                      \
            const uint32_t nt = n_x - t0 < 4 ? n_x - t0 : 4;                            \
            const uint8_t *xt = xq + (uint64_t)t0 * xs;                                 \
            float *yt = y + (uint64_t)t0 * ys;                                          \
            for (uint32_t r0 = 0; r0 < n_rows; r0 += (MR)) {                            \
                const uint8_t *rr = rows + (uint64_t)r0 * rbytes;                       \
                const int nr = n_rows - r0 < (MR) ? (int)(n_rows - r0) : (MR);          \
                switch (nr * 4 + (int)nt) { IZ_TILE_CASES##MR(part) }                   \
            }                                                                           \
        }                                                                               \
    }

/* ---- unpacked K rows (idot.h's CPU_IDOT_UK layout) -------------------- */

/* The scales of chunks 2p (low half) and 2p+1 (high half) per int16 lane,
 * from the row's 16 scales in both 256-bit halves of scz: sc[c] in the
 * first 128 bits of a chunk, sc[8 + c] in the second (idot.h's layout). */
IA_INLINE __m512i iz_chunk_scales(__m512i scz, int p) {
    const int c = 2 * p;
    const __m256i lo = _mm256_set1_epi16((short)((2 * c) | (2 * c + 1) << 8));
    const __m256i hi = _mm256_set1_epi16((short)((2 * c + 2) | (2 * c + 3) << 8));
    return _mm512_shuffle_epi8(scz, iz_join(lo, hi));
}

/* For chunks 4h .. 4h+3: int16 slot 2L + e (lane L of a 512-bit sum,
 * e = 0: chunk pair 2h, e = 1: pair 2h+1) takes the scale of lane L % 8 of
 * chunk 4h + 2e + L / 8, an index into the 16 int16 scales of idot.h's
 * layout (sc[c] for lanes 0..3, sc[8 + c] for lanes 4..7). */
static const _Alignas(64) int16_t iz_quad_scale_idx[2][32] = {
#define IZ_QS(h, L, e) (int16_t)(4 * (h) + 2 * (e) + (L) / 8 + 8 * ((L) % 8 >= 4))
#define IZ_QS2(h, L) IZ_QS(h, L, 0), IZ_QS(h, L, 1)
#define IZ_QS8(h, L0) IZ_QS2(h, L0), IZ_QS2(h, L0 + 1), IZ_QS2(h, L0 + 2), IZ_QS2(h, L0 + 3)
    {IZ_QS8(0, 0), IZ_QS8(0, 4), IZ_QS8(0, 8), IZ_QS8(0, 12)},
    {IZ_QS8(1, 0), IZ_QS8(1, 4), IZ_QS8(1, 8), IZ_QS8(1, 12)},
#undef IZ_QS8
#undef IZ_QS2
#undef IZ_QS
};

/* A K tile's four token slots: tokens 0 .. nt-1 of xq (xs apart), the
 * rest token 0 again (computed and dropped: the tile's shape stays
 * whole). */
IA_INLINE ia_xk iz_xk_tile(int fine, int nt, const uint8_t *xq, uint64_t xs, uint64_t n) {
    ia_xk x = ia_xk_of(fine, 4, xq, 0, n);
    IA_UNROLL
    for (int t = 1; t < nt; t++) {
        const ia_xk xr = ia_xk_of(fine, 1, xq + (uint64_t)t * xs, 0, n);
        x.q[t] = xr.q[0];
        x.dx[t] = xr.dx[0];
        x.bs[t] = xr.bs[0];
    }
    return x;
}

/* Coarse form over a tile: NR rows x 4 tokens (2 pairs) of unpacked K
 * rows. The integer sums run per (row, token), sharing each activation
 * load between the rows: per 128 elements two vpdpbusd (each lane's four
 * products) and two vpdpwssd, each with one chunk pair's scales in the
 * low int16 of every lane (iz_quad_scale_idx's, split once per row; an
 * interleave of the two sums into one vpdpwssd took one instruction
 * more per row and token); at a super-block's end each
 * pair of tokens shares one register, [token 2j | token 2j+1], for the
 * fold of the halves and the two float steps, so those run once for two
 * tokens. acc[r][j][set]: the sets acc[b % 2] of idot.h, pair j. */
IA_INLINE void iz_tile_uk_block(const uint8_t *rows, uint64_t rbytes, int nr, const ia_xk *x,
                                uint64_t b, int set, __m512 acc[2][2][2]) {
    __m512i s[2][4], scz[2];
    IA_UNROLL
    for (int r = 0; r < nr; r++) {
        scz[r] = _mm512_broadcast_i64x4(
            ia_load(rows + (uint64_t)r * rbytes + b * CPU_IDOT_UK_BYTES + CPU_IDOT_UK_SC));
        IA_UNROLL
        for (int t = 0; t < 4; t++)
            s[r][t] = _mm512_setzero_si512();
    }
    IA_UNROLL
    for (int h = 0; h < 2; h++) { /* chunks 4h .. 4h+3: pairs 2h and 2h+1 */
        __m512i u0[2], u1[2], sc0[2], sc1[2];
        IA_UNROLL
        for (int r = 0; r < nr; r++) {
            const uint8_t *ub = rows + (uint64_t)r * rbytes + b * CPU_IDOT_UK_BYTES;
            u0[r] = _mm512_loadu_si512(ub + 128 * h);
            u1[r] = _mm512_loadu_si512(ub + 128 * h + 64);
            const __m512i sc =
                _mm512_permutexvar_epi16(_mm512_loadu_si512(iz_quad_scale_idx[h]), scz[r]);
            /* each pair's scale in the low int16 of a lane, zero above */
            sc0[r] = _mm512_and_si512(sc, _mm512_set1_epi32(0xffff));
            sc1[r] = _mm512_srli_epi32(sc, 16);
        }
        IA_UNROLL
        for (int t = 0; t < 4; t++) {
            const int8_t *xb = x->q[t] + 256 * b + 128 * (uint64_t)h;
            const __m512i x0 = _mm512_loadu_si512(xb), x1 = _mm512_loadu_si512(xb + 64);
            IA_UNROLL
            for (int r = 0; r < nr; r++) {
                /* a lane's four products fit its low int16 (|p| <= 32004);
                 * the high int16, its sign, meets a zero scale */
                const __m512i zero = _mm512_setzero_si512();
                const __m512i p0 = _mm512_dpbusd_epi32(zero, u0[r], x0);
                const __m512i p1 = _mm512_dpbusd_epi32(zero, u1[r], x1);
                s[r][t] = _mm512_dpwssd_epi32(_mm512_dpwssd_epi32(s[r][t], p0, sc0[r]), p1,
                                              sc1[r]);
            }
        }
    }
    IA_UNROLL
    for (int j = 0; j < 2; j++) {
        const float *d0 = x->dx[2 * j] + b, *d1 = x->dx[2 * j + 1] + b;
        const __m512 dxp = _mm512_insertf32x8(_mm512_set1_ps(*d0), _mm256_set1_ps(*d1), 1);
        const __m512i bsp = iz_join(ia_load(x->bs[2 * j] + 16 * b),
                                    ia_load(x->bs[2 * j + 1] + 16 * b));
        IA_UNROLL
        for (int r = 0; r < nr; r++) {
            const uint8_t *blk = rows + (uint64_t)r * rbytes + b * CPU_IDOT_UK_BYTES;
            const __m512 d = _mm512_set1_ps(ia_s_u32(blk + CPU_IDOT_UK_D));
            const __m512 ms = _mm512_set1_ps(ia_s_u32(blk + CPU_IDOT_UK_MS));
            const __m512i mw = _mm512_broadcast_i64x4(ia_load(blk + CPU_IDOT_UK_MW));
            const __m512i sj = iz_fold2i(s[r][2 * j], s[r][2 * j + 1]);
            __m512 *a = &acc[r][j][set]; /* set == b % 2, a constant */
            *a = _mm512_fmadd_ps(_mm512_mul_ps(d, dxp), _mm512_cvtepi32_ps(sj), *a);
            const __m512i m = _mm512_madd_epi16(mw, bsp);
            *a = _mm512_fnmadd_ps(_mm512_mul_ps(ms, dxp), _mm512_cvtepi32_ps(m), *a);
        }
    }
}

/* NR rows x NT tokens (NT <= 4; the missing ones computed on token 0's
 * activations and dropped). */
IA_INLINE void iz_tile_uk_part(const uint8_t *rows, uint64_t rbytes, int nr, const uint8_t *xq,
                               uint64_t xs, int nt, uint64_t n, float *y, uint64_t ys) {
    const ia_xk xt = iz_xk_tile(0, nt, xq, xs, n);
    __m512 acc[2][2][2];
    IA_UNROLL
    for (int r = 0; r < 2; r++)
        IA_UNROLL
        for (int j = 0; j < 2; j++)
            acc[r][j][0] = acc[r][j][1] = _mm512_setzero_ps();
    const uint64_t nb = n / 256;
    uint64_t b = 0;
    for (; b + 1 < nb; b += 2) {
        iz_tile_uk_block(rows, rbytes, nr, &xt, b, 0, acc);
        iz_tile_uk_block(rows, rbytes, nr, &xt, b + 1, 1, acc);
    }
    if (b < nb)
        iz_tile_uk_block(rows, rbytes, nr, &xt, b, 0, acc);
    IA_UNROLL
    for (int r = 0; r < nr; r++) {
        iz_put_row(y, ys, r, nt,
                   iz_r8_s4(_mm512_add_ps(acc[r][0][0], acc[r][0][1]),
                            _mm512_add_ps(acc[r][1][0], acc[r][1][1])));
    }
}

/* Fine form over a tile: NR rows x 4 tokens, the 8 accumulators [set 0 |
 * set 1] independent chains (one row's 4 tokens alone wait on the FMA's
 * latency: each lane's steps are sequential by definition), each
 * activation load and block-sum load shared by the rows. */
IA_INLINE void iz_tile_uk_fine_block(const uint8_t *rows, uint64_t rbytes, int nr,
                                     const ia_xk *x, uint64_t b, __m512 acc[2][4]) {
    __m512i scz[2];
    __m256 ms[2];
    __m512 dd[2][4]; /* d * dx[8b + c] in lane c, per row and token */
    IA_UNROLL
    for (int r = 0; r < nr; r++) {
        const uint8_t *blk = rows + (uint64_t)r * rbytes + b * CPU_IDOT_UK_BYTES;
        scz[r] = _mm512_broadcast_i64x4(ia_load(blk + CPU_IDOT_UK_SC));
        ms[r] = _mm256_broadcast_ss((const float *)(const void *)(blk + CPU_IDOT_UK_MS));
        const __m256 d = _mm256_broadcast_ss((const float *)(const void *)(blk + CPU_IDOT_UK_D));
        IA_UNROLL
        for (int t = 0; t < 4; t++)
            dd[r][t] = _mm512_zextps256_ps512(_mm256_mul_ps(d, _mm256_loadu_ps(x->dx[t] + 8 * b)));
    }
    IA_UNROLL
    for (int p = 0; p < 4; p++) {
        __m512i u[2], sc[2];
        IA_UNROLL
        for (int r = 0; r < nr; r++) {
            u[r] = _mm512_loadu_si512(rows + (uint64_t)r * rbytes + b * CPU_IDOT_UK_BYTES +
                                      64 * (uint64_t)p);
            sc[r] = iz_chunk_scales(scz[r], p);
        }
        IA_UNROLL
        for (int t = 0; t < 4; t++) {
            const __m512i xv = _mm512_loadu_si512(x->q[t] + 256 * b + 64 * (uint64_t)p);
            IA_UNROLL
            for (int r = 0; r < nr; r++) {
                const __m512i pc = _mm512_madd_epi16(_mm512_maddubs_epi16(u[r], xv), sc[r]);
                acc[r][t] = _mm512_fmadd_ps(_mm512_permutexvar_ps(iz_pair_idx(p), dd[r][t]),
                                            _mm512_cvtepi32_ps(pc), acc[r][t]);
            }
        }
    }
    IA_UNROLL
    for (int t = 0; t < 4; t++) {
        const __m256 dxf = _mm256_loadu_ps(x->dx[t] + 8 * b);
        const __m256i bs = ia_load(x->bs[t] + 16 * b);
        IA_UNROLL
        for (int r = 0; r < nr; r++) {
            const uint8_t *blk = rows + (uint64_t)r * rbytes + b * CPU_IDOT_UK_BYTES;
            const __m256i m = _mm256_madd_epi16(ia_load(blk + CPU_IDOT_UK_MW), bs);
            acc[r][t] = _mm512_mask3_fnmadd_ps(_mm512_zextps256_ps512(_mm256_mul_ps(ms[r], dxf)),
                                               _mm512_zextps256_ps512(_mm256_cvtepi32_ps(m)),
                                               acc[r][t], (__mmask16)0x00ff);
        }
    }
}

/* NR rows x NT tokens of the fine form (NT <= 4; the missing ones computed
 * on token 0's activations and dropped). */
IA_INLINE void iz_tile_uk_fine_part(const uint8_t *rows, uint64_t rbytes, int nr,
                                    const uint8_t *xq, uint64_t xs, int nt, uint64_t n,
                                    float *y, uint64_t ys) {
    const ia_xk x = iz_xk_tile(1, nt, xq, xs, n);
    __m512 acc[2][4];
    IA_UNROLL
    for (int r = 0; r < 2; r++)
        IA_UNROLL
        for (int t = 0; t < 4; t++)
            acc[r][t] = _mm512_setzero_ps();
    for (uint64_t b = 0; b < n / 256; b++)
        iz_tile_uk_fine_block(rows, rbytes, nr, &x, b, acc);
    IA_UNROLL
    for (int r = 0; r < nr; r++) {
        iz_put_row(y, ys, r, nt, iz_r8x4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]));
    }
}

/* ---- unpacking K rows (idot.h's CPU_IDOT_UK layout) ------------------- */

/* Q4_K (qh_off 0) and Q5_K super-blocks of a row into unpacked blocks,
 * 64 stored bytes (two runs of 32: four chunks) per register: the low
 * nibbles are chunks 4j and 4j+2, the high ones 4j+1 and 4j+3, and
 * Q5_K's chunk c takes bit c of qh[l] as bit 4 (a 16-bit variable shift
 * per half). The same bytes as the AVX2 and portable unpacking. */
static void iz_unpack_k4(uint32_t bb, uint32_t qh_off, uint32_t qs_off, const uint8_t *row,
                         uint64_t n, uint8_t *dst) {
    const __m512i m4 = _mm512_set1_epi8(15), one = _mm512_set1_epi8(1);
    for (uint64_t b = 0; b < n / 256; b++, dst += CPU_IDOT_UK_BYTES) {
        const uint8_t *blk = row + b * bb, *qs = blk + qs_off;
        const __m512i hv = qh_off != 0 ? _mm512_broadcast_i64x4(ia_load(blk + qh_off))
                                       : _mm512_setzero_si512();
        for (int j = 0; j < 2; j++) {
            const __m512i v = _mm512_loadu_si512(qs + 64 * j);
            __m512i lo = _mm512_and_si512(v, m4);
            __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
            if (qh_off != 0) {
                const __m512i clo = iz_join(_mm256_set1_epi16((short)(4 * j)),
                                            _mm256_set1_epi16((short)(4 * j + 2)));
                const __m512i chi = _mm512_add_epi16(clo, _mm512_set1_epi16(1));
                lo = _mm512_or_si512(
                    lo, _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(hv, clo), one), 4));
                hi = _mm512_or_si512(
                    hi, _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(hv, chi), one), 4));
            }
            _mm512_storeu_si512(dst + 128 * j, _mm512_shuffle_i64x2(lo, hi, 0x44));
            _mm512_storeu_si512(dst + 128 * j + 64, _mm512_shuffle_i64x2(lo, hi, 0xee));
        }
        ia_k4_store_tail(blk, dst);
    }
}
static void iz_unpack_q4_k(const uint8_t *row, uint64_t n, uint8_t *dst) {
    iz_unpack_k4(144, 0, 16, row, n, dst);
}
static void iz_unpack_q5_k(const uint8_t *row, uint64_t n, uint8_t *dst) {
    iz_unpack_k4(176, 16, 48, row, n, dst);
}

/* ---- entry points, each with the token count a constant ---------------- */

#define IZ_ENTRY_DOT(name, call) IX_ENTRY_DOT(iz_##name, call)
#define IZ_ENTRY(name, call) IX_ENTRY(iz_##name, iz_rows_##name, call)
#define IZ_Q4_0_(NX_) iz_dot32(ia_w_q4_0, ia_f16, 18, NX_, row, xq, xs, n, out)
#define IZ_Q5_0_(NX_) iz_dot32(ia_w_q5_0, ia_f16, 22, NX_, row, xq, xs, n, out)
#define IZ_Q8_0_(NX_) iz_dot32(ia_w_q8_0, ia_f16, 34, NX_, row, xq, xs, n, out)
IZ_ENTRY(q4_0, IZ_Q4_0_)
IZ_ENTRY(q5_0, IZ_Q5_0_)
IZ_ENTRY(q8_0, IZ_Q8_0_)
IZ_TILE_DRIVER(iz_tile_uk, iz_tile_uk_part, 2)
IZ_TILE_DRIVER(iz_tile_uk_fine, iz_tile_uk_fine_part, 2)

/* Replaces, in a copy of AVX2's table (the fine one when `fine`), the
 * kernels this set has: same bits, same unpacked layouts. The K types'
 * unpacked_dot stays AVX2's: prefill goes through their tiles. */
void cpu_idot_avx512_patch(cpu_idot table[], int fine) {
    static const struct {
        uint32_t type;
        cpu_idot_fn dot;
        cpu_idot_rows_fn rows;
    } t32[] = {{SW_TYPE_Q4_0, iz_q4_0, iz_rows_q4_0},
               {SW_TYPE_Q5_0, iz_q5_0, iz_rows_q5_0},
               {SW_TYPE_Q8_0, iz_q8_0, iz_rows_q8_0}};
    for (size_t i = 0; i < sizeof t32 / sizeof t32[0]; i++) {
        table[t32[i].type].dot = t32[i].dot;
        table[t32[i].type].rows = t32[i].rows;
    }
    cpu_idot_avx512_tile32_patch(table); /* their unpacked layout and tile */
    const uint32_t tk[] = {SW_TYPE_Q4_K, SW_TYPE_Q5_K, SW_TYPE_Q6_K};
    for (size_t i = 0; i < sizeof tk / sizeof tk[0]; i++)
        table[tk[i]].unpacked_tile = fine ? iz_tile_uk_fine : iz_tile_uk;
    table[SW_TYPE_Q4_K].unpack = iz_unpack_q4_k;
    table[SW_TYPE_Q5_K].unpack = iz_unpack_q5_k;
}

#include "backend/cpu/target_end.h"
#else
/* ISO C wants at least one declaration in a translation unit. */
typedef int idot_avx512_unavailable;
#endif
