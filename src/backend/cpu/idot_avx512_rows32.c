/*
 * idot_avx512_rows32.c — the decode step's stored rows of the 32-element
 * types (idot.h's `rows`: one token against many rows; Q4_0, Q5_0 and
 * Q8_0, whose coarse and fine forms are one kernel) with AVX-512 VNNI
 * (internal to backend/cpu). On Gemma 3 270M's Q4_K_M file these are the
 * tied LM head (Q8_0) and every 640-wide matrix (Q5_0): most of a decode
 * step. The kernels of idot_avx512.c, which serve a few tokens at a time,
 * read them at 3-8 GB/s on an Intel Xeon core (no prefetch; the sign
 * trick's three operations per pair of blocks); these at the pace of the
 * K rows (idot_avx512_krows.c) or faster: from L2 44 GB/s (Q8_0) and 24
 * (Q5_0, Q4_0) against Q4_K's 22, the LM head from DRAM at the core's
 * prefetched read rate (bench/results/, decode_kernels_2026-12-06_intel_xeon).
 *
 * Blocks b and b+1 (b even) fill the low and the high half of a 512-bit
 * register: idot.h's sets acc[0] and acc[1], so each lane performs the
 * canonical steps in the canonical order. The weights enter unsigned,
 * u = w + B (B = 128 for Q8_0: the byte with its top bit flipped; 16 for
 * Q5_0 and 8 for Q4_0: the stored value), and vpdpbusd sums each lane's
 * four u * q exactly, starting from -B * (q's four values summed): those
 * lane sums depend on the token only, so they are computed once per call
 * (izr_bias) and each lane's sum is exactly the canonical s[l] (|sum| <
 * 2^18). Then dw * dx[b] (the same IEEE product as the scalar one; four
 * blocks' f16 scales converted at once) and one FMA per pair. The rows
 * stream with the K rows' software prefetch (idot_x86.h's
 * IA_PREFETCH_BYTES ahead; on an Intel Xeon core, the LM head's 178 MB:
 * 4 KiB a few per cent slower, 9 and 16 KiB alike, at the core's
 * prefetched read rate). Bit for bit the portable kernels' results
 * (tests/test_idot.c).
 */
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "backend/cpu/idot.h"
#include "quant/types.h"

void cpu_idot_avx512_rows32_patch(cpu_idot table[]);
const cpu_idot *cpu_idot_table_avx2(void);

#define CPU_TARGET "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni"
#include "backend/cpu/target_begin.h"

#include "backend/cpu/idot_avx512_x.h"

/* The widest row whose activation lane sums this kernel keeps on the stack
 * (32 KiB); wider rows take AVX2's kernel, the same bits. Gemma's widest
 * input is 21504 (31B's MLP). */
enum { IZR_MAX_N = 32768 };

enum { IZR_Q4_0, IZR_Q5_0, IZR_Q8_0 };
#define IZR_BYTES(k) ((k) == IZR_Q8_0 ? 34u : (k) == IZR_Q5_0 ? 22u : 18u)
#define IZR_SHIFT(k) ((k) == IZR_Q8_0 ? 7 : (k) == IZR_Q5_0 ? 4 : 3) /* log2 B */

/* c[g] = -B * (q[4g] + q[4g+1] + q[4g+2] + q[4g+3]), g < n / 4. */
static void izr_bias(int kind, const int8_t *q, uint64_t n, int32_t *c) {
    const __m512i ones = _mm512_set1_epi8(1), zero = _mm512_setzero_si512();
    for (uint64_t i = 0; i < n; i += 64) {
        const int last = n - i < 64; /* 32 left */
        const __m512i x = _mm512_maskz_loadu_epi8(last ? 0xffffffffu : ~(__mmask64)0, q + i);
        const __m512i s = _mm512_dpbusd_epi32(zero, ones, x);
        _mm512_mask_storeu_epi32(c + i / 4, last ? 0x00ff : 0xffff,
                                 _mm512_sub_epi32(zero, _mm512_slli_epi32(s, IZR_SHIFT(kind))));
    }
}

/* The unsigned values u = w + B of blocks b0 and b1 = b0 + bytes (the low
 * and the high half), or of b0 alone (`last`: the high half, unused, a
 * copy of the low one).
 * Q4_0 and Q5_0: the nibbles of iz_nibble_pair, and Q5_0's fifth bits
 * (iz_fifth_bits). */
IA_INLINE __m512i izr_values(int kind, int last, const uint8_t *b0) {
    const uint8_t *b1 = b0 + IZR_BYTES(kind);
    /* the halves from two broadcast loads and a blend (either vector port;
     * an insert takes the shuffle port, as the scales' permutes do) */
    if (kind == IZR_Q8_0) {
        const __m512i w0 = _mm512_broadcast_i64x4(ia_load(b0 + 2));
        const __m512i w = last ? w0
                               : _mm512_mask_blend_epi64(0xf0, w0,
                                                         _mm512_broadcast_i64x4(ia_load(b1 + 2)));
        return _mm512_xor_si512(w, _mm512_set1_epi8((char)0x80));
    }
    const uint32_t qs = kind == IZR_Q5_0 ? 6 : 2;
    const __m512i u = iz_nibble_pair(b0 + qs, b1 + qs, last);
    return kind == IZR_Q4_0 ? u : iz_fifth_bits(u, b0 + 2, b1 + 2, last);
}

/* The products dw[b + j] * dx[b + j], j < nb (4, 2 or 1), of blocks
 * b .. b+nb-1 from blk (0 in the lanes past nb): the products of ia_scale,
 * lane for lane, four blocks' f16 scales converted at once. */
IA_INLINE __m128 izr_scales(int kind, int nb, const uint8_t *blk, const float *dxb) {
    uint64_t h = 0;
    IA_UNROLL
    for (int j = 0; j < nb; j++) {
        uint16_t v;
        memcpy(&v, blk + (uint64_t)j * IZR_BYTES(kind), sizeof v);
        h |= (uint64_t)v << 16 * j;
    }
    const __m128 dx = nb == 4   ? _mm_loadu_ps(dxb)
                      : nb == 2 ? _mm_castsi128_ps(_mm_loadl_epi64((const __m128i *)dxb))
                                : _mm_load_ss(dxb);
    return _mm_mul_ps(_mm_cvtph_ps(_mm_cvtsi64_si128((long long)h)), dx);
}

/* Lane 2j of p in the low half, lane 2j+1 in the high half: the scales of
 * block pair j. */
IA_INLINE __m512 izr_halves(__m128 p, int j) {
    const __m512i idx =
        _mm512_inserti64x4(_mm512_set1_epi32(2 * j), _mm256_set1_epi32(2 * j + 1), 1);
    return _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(p));
}

/* Blocks b, b+1 (or b alone, `last`) of a row, with their scales d, into
 * acc = [set 0 | set 1]. */
IA_INLINE __m512 izr_pair(int kind, int last, const uint8_t *blk, const int8_t *qb,
                          const int32_t *cb, __m512 d, __m512 acc) {
    if (!last)
        ia_prefetch_ahead(blk, 2 * IZR_BYTES(kind));
    const __m512i u = izr_values(kind, last, blk);
    const __mmask64 km = last ? 0xffffffffu : ~(__mmask64)0;
    const __mmask16 kf = last ? 0x00ff : 0xffff;
    const __m512i s = _mm512_dpbusd_epi32(_mm512_maskz_loadu_epi32(kf, cb), u,
                                          _mm512_maskz_loadu_epi8(km, qb));
    return last ? _mm512_mask3_fmadd_ps(d, _mm512_cvtepi32_ps(s), acc, kf)
                : _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(s), acc);
}

/* Rows at a time: each row's sets are one chain of FMAs (idot.h's order);
 * IZR_NR rows interleaved run as many chains side by side and share the
 * activations' loads. With the software prefetch, two streams do not
 * trouble the hardware prefetcher (idot_avx512_krows.c's note, without
 * it): on an Intel Xeon core two rows at a time read the LM head a few
 * per cent faster than one, and equal it from cache. */
enum { IZR_NR = 2 };

/* nr rows (rb bytes apart) from `rows`: out[0 .. nr-1]. */
IA_INLINE void izr_row_group(int kind, int nr, const uint8_t *rows, uint64_t rb, const int8_t *q,
                             const int32_t *c, const float *dx, uint64_t n, float *out) {
    const uint32_t bb = IZR_BYTES(kind);
    const uint64_t nb = n / 32;
    __m512 acc[IZR_NR];
    IA_UNROLL
    for (int i = 0; i < nr; i++)
        acc[i] = _mm512_setzero_ps();
    uint64_t b = 0;
    for (; b + 3 < nb; b += 4) { /* two pairs: four blocks' scales at once */
        IA_UNROLL
        for (int i = 0; i < nr; i++) {
            const uint8_t *blk = rows + (uint64_t)i * rb + bb * b;
            const __m128 p = izr_scales(kind, 4, blk, dx + b);
            acc[i] = izr_pair(kind, 0, blk, q + 32 * b, c + 8 * b, izr_halves(p, 0), acc[i]);
            acc[i] = izr_pair(kind, 0, blk + 2 * bb, q + 32 * b + 64, c + 8 * b + 16,
                              izr_halves(p, 1), acc[i]);
        }
    }
    const int tail = (int)(nb - b); /* 0 to 3 blocks */
    IA_UNROLL
    for (int i = 0; i < nr; i++) {
        const uint8_t *blk = rows + (uint64_t)i * rb + bb * b;
        if (tail >= 2)
            acc[i] = izr_pair(kind, 0, blk, q + 32 * b, c + 8 * b,
                              izr_halves(izr_scales(kind, 2, blk, dx + b), 0), acc[i]);
        if (tail % 2 == 1) {
            const uint64_t bl = b + (uint64_t)tail - 1;
            acc[i] = izr_pair(kind, 1, blk + bb * (uint64_t)(tail - 1), q + 32 * bl, c + 8 * bl,
                              izr_halves(izr_scales(kind, 1, blk + bb * (uint64_t)(tail - 1),
                                                    dx + bl), 0), acc[i]);
        }
    }
    IA_UNROLL
    for (int i = 0; i < nr; i++)
        out[i] = ia_r8(_mm512_castps512_ps256(acc[i]), _mm512_extractf32x8_ps(acc[i], 1));
}

IA_INLINE void izr_rows(int kind, const uint8_t *rows, uint64_t rb, uint64_t n_rows,
                        const uint8_t *xq, uint64_t n, float *out) {
    if (n > IZR_MAX_N) {
        const uint32_t type = kind == IZR_Q8_0   ? SW_TYPE_Q8_0
                              : kind == IZR_Q5_0 ? SW_TYPE_Q5_0
                                                 : SW_TYPE_Q4_0;
        cpu_idot_table_avx2()[type].rows(rows, rb, n_rows, xq, n, out);
        return;
    }
    _Alignas(64) int32_t c[IZR_MAX_N / 4];
    const int8_t *q = (const int8_t *)xq;
    const float *dx = cpu_qact_scales(xq, n);
    izr_bias(kind, q, n, c);
    uint64_t r = 0;
    for (; r + IZR_NR <= n_rows; r += IZR_NR)
        izr_row_group(kind, IZR_NR, rows + r * rb, rb, q, c, dx, n, out + r);
    for (; r < n_rows; r++)
        izr_row_group(kind, 1, rows + r * rb, rb, q, c, dx, n, out + r);
}

static void izr_rows_q4_0(const uint8_t *rows, uint64_t rb, uint64_t n_rows, const uint8_t *xq,
                          uint64_t n, float *out) {
    izr_rows(IZR_Q4_0, rows, rb, n_rows, xq, n, out);
}
static void izr_rows_q5_0(const uint8_t *rows, uint64_t rb, uint64_t n_rows, const uint8_t *xq,
                          uint64_t n, float *out) {
    izr_rows(IZR_Q5_0, rows, rb, n_rows, xq, n, out);
}
static void izr_rows_q8_0(const uint8_t *rows, uint64_t rb, uint64_t n_rows, const uint8_t *xq,
                          uint64_t n, float *out) {
    izr_rows(IZR_Q8_0, rows, rb, n_rows, xq, n, out);
}

/* Replaces the 32-element types' `rows` in the AVX-512 table (idot.c,
 * after cpu_idot_avx512_patch; both forms: the types are per 32). */
void cpu_idot_avx512_rows32_patch(cpu_idot table[]) {
    table[SW_TYPE_Q4_0].rows = izr_rows_q4_0;
    table[SW_TYPE_Q5_0].rows = izr_rows_q5_0;
    table[SW_TYPE_Q8_0].rows = izr_rows_q8_0;
}

#include "backend/cpu/target_end.h"
#else
/* ISO C wants at least one declaration in a translation unit. */
typedef int idot_avx512_rows32_unavailable;
#endif
