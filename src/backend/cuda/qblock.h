/*
 * qblock.h — reading weights in their stored type, one "slot" at a time:
 * the per-element math of every CUDA matmul, embedding gather and tile
 * dequantization, shared by host and device (hd.h) and tested on the CPU
 * against quant/dequant.c bit for bit (tests/test_cuda_math.c).
 *
 * A row of a weight is a sequence of blocks (quant/types.h); a block is cut
 * into slots of 8 weights, which a GPU thread decodes together: elements
 * e0..e0+3 and e1..e1+3 of the block. The two runs follow each format's
 * byte layout, so a slot reads few, adjacent bytes (Q4_K: one 4-byte word
 * of quants gives a low-nibble run and a high-nibble run 32 elements
 * apart). Float types are cut into 8-element pseudo-blocks of one slot.
 *
 * Window property (the GEMM's K tiles rely on it, the host test checks
 * it): the 16 slots [16w, 16w + 16) of a row cover exactly its elements
 * [128w, 128w + 128) for every type here.
 *
 * Each weight is computed with the reference's float operations in its
 * order (Q4_K: (d*sc)*q - (dmin*m)), through hd_mul/hd_sub so the device
 * never fuses them: a slot's weights equal quant_dequantize()'s bits.
 */
#ifndef SW_BACKEND_CUDA_QBLOCK_H
#define SW_BACKEND_CUDA_QBLOCK_H

#include "backend/cuda/hd.h"

/* The ggml type ids (quant/types.h), repeated as plain constants for
 * device code; the host test checks they agree. */
enum {
    QB_F32 = 0, QB_F16 = 1, QB_Q4_0 = 2, QB_Q4_1 = 3, QB_Q5_0 = 6, QB_Q5_1 = 7,
    QB_Q8_0 = 8, QB_Q2_K = 10, QB_Q3_K = 11, QB_Q4_K = 12, QB_Q5_K = 13, QB_Q6_K = 14,
    QB_BF16 = 30
};

/* Elements and bytes of a (pseudo-)block of `type`; 0 elements: not a type
 * the CUDA kernels read. */
SW_HD void qb_geometry(uint32_t type, uint32_t *elems, uint32_t *bytes) {
    uint32_t e = 0, b = 0;
    switch (type) {
    case QB_F32: e = 8, b = 32; break;
    case QB_F16: case QB_BF16: e = 8, b = 16; break;
    case QB_Q4_0: e = 32, b = 18; break;
    case QB_Q4_1: e = 32, b = 20; break;
    case QB_Q5_0: e = 32, b = 22; break;
    case QB_Q5_1: e = 32, b = 24; break;
    case QB_Q8_0: e = 32, b = 34; break;
    case QB_Q2_K: e = 256, b = 84; break;
    case QB_Q3_K: e = 256, b = 110; break;
    case QB_Q4_K: e = 256, b = 144; break;
    case QB_Q5_K: e = 256, b = 176; break;
    case QB_Q6_K: e = 256, b = 210; break;
    default: break;
    }
    *elems = e;
    *bytes = b;
}

/* ---- float types: 8 consecutive elements ------------------------------- */

SW_HD void qb_f32(const uint8_t *b, float w[8]) {
    uint32_t u[8];
    hd_u32x4(b, u);
    hd_u32x4(b + 16, u + 4);
    for (int i = 0; i < 8; i++)
        w[i] = hd_float(u[i]);
}

/* f16 (bf16 when `brain`): 16 bytes, two elements per word. */
SW_HD void qb_half8(const uint8_t *b, float w[8], int brain) {
    uint32_t u[4];
    hd_u32x4(b, u);
    for (int i = 0; i < 4; i++) {
        const uint32_t lo = u[i] & 0xffffu, hi = u[i] >> 16;
        w[2 * i] = brain ? hd_bf16(lo) : hd_f16(lo);
        w[2 * i + 1] = brain ? hd_bf16(hi) : hd_f16(hi);
    }
}

SW_HD void qb_f16(const uint8_t *b, float w[8]) { qb_half8(b, w, 0); }
SW_HD void qb_bf16(const uint8_t *b, float w[8]) { qb_half8(b, w, 1); }

/* ---- 32-element blocks: slot s of 4 ------------------------------------- */

/* Byte i (< 4) of a little-endian word. */
SW_HD uint32_t qb_byte(uint32_t word, int i) { return (word >> (8 * i)) & 0xffu; }

/* Q4_0: d, then 16 bytes; byte j holds element j (low) and j + 16 (high). */
SW_HD void qb_q4_0(const uint8_t *b, uint32_t s, float w[8]) {
    const float d = hd_load_f16(b);
    const uint32_t qs = hd_u32(b + 2 + 4 * s);
    for (int i = 0; i < 4; i++) {
        const uint32_t q = qb_byte(qs, i);
        w[i] = hd_mul(d, (float)((int)(q & 15) - 8));
        w[4 + i] = hd_mul(d, (float)((int)(q >> 4) - 8));
    }
}

SW_HD void qb_q4_1(const uint8_t *b, uint32_t s, float w[8]) {
    const float d = hd_load_f16(b), m = hd_load_f16(b + 2);
    const uint32_t qs = hd_u32(b + 4 + 4 * s);
    for (int i = 0; i < 4; i++) {
        const uint32_t q = qb_byte(qs, i);
        w[i] = hd_add(hd_mul(d, (float)(q & 15)), m);
        w[4 + i] = hd_add(hd_mul(d, (float)(q >> 4)), m);
    }
}

/* Q5_0/Q5_1: as Q4_0/Q4_1 with bit 4 of element j in bit j of qh. */
SW_HD void qb_q5(const uint8_t *qh_bytes, const uint8_t *qs, uint32_t s, int q[8]) {
    const uint32_t qh = hd_u32(qh_bytes), word = hd_u32(qs + 4 * s);
    for (uint32_t i = 0; i < 4; i++) {
        const uint32_t j = 4 * s + i, byte = qb_byte(word, (int)i);
        q[i] = (int)((byte & 15) | ((qh >> j) & 1u) << 4);
        q[4 + i] = (int)((byte >> 4) | ((qh >> (j + 16)) & 1u) << 4);
    }
}

SW_HD void qb_q5_0(const uint8_t *b, uint32_t s, float w[8]) {
    int q[8];
    const float d = hd_load_f16(b);
    qb_q5(b + 2, b + 6, s, q);
    for (int i = 0; i < 8; i++)
        w[i] = hd_mul(d, (float)(q[i] - 16));
}

SW_HD void qb_q5_1(const uint8_t *b, uint32_t s, float w[8]) {
    int q[8];
    const float d = hd_load_f16(b), m = hd_load_f16(b + 2);
    qb_q5(b + 4, b + 8, s, q);
    for (int i = 0; i < 8; i++)
        w[i] = hd_add(hd_mul(d, (float)q[i]), m);
}

/* Q8_0: d, then 32 signed bytes; slot s is elements 8s .. 8s + 7. */
SW_HD void qb_q8_0(const uint8_t *b, uint32_t s, float w[8]) {
    const float d = hd_load_f16(b);
    const uint32_t lo = hd_u32(b + 2 + 8 * s), hi = hd_u32(b + 6 + 8 * s);
    for (int i = 0; i < 4; i++) {
        w[i] = hd_mul(d, (float)(int8_t)qb_byte(lo, i));
        w[4 + i] = hd_mul(d, (float)(int8_t)qb_byte(hi, i));
    }
}

/* ---- 256-element K blocks: slot s of 32 --------------------------------- */

/* Sub-block j's 6-bit scale and min from Q4_K/Q5_K's 12 scale bytes. */
SW_HD void qb_scale_min_k4(const uint8_t *sc, uint32_t j, int *scale, int *min) {
    if (j < 4) {
        *scale = sc[j] & 63;
        *min = sc[j + 4] & 63;
    } else {
        *scale = (sc[j + 4] & 15) | (sc[j - 4] >> 6) << 4;
        *min = (sc[j + 4] >> 4) | (sc[j] >> 6) << 4;
    }
}

/* Q4_K/Q5_K: quants byte 32c + l holds element 64c + l (low nibble,
 * sub-block 2c) and 64c + 32 + l (high, sub-block 2c + 1); slot s is
 * c = s / 8, l = 4 (s % 8) .. + 3. qh (Q5_K) is NULL for Q4_K. */
SW_HD void qb_k4(const uint8_t *b, const uint8_t *qh, const uint8_t *qs, uint32_t s,
                 float w[8]) {
    const float d = hd_load_f16(b), dmin = hd_load_f16(b + 2);
    const uint32_t c = s / 8, l = 4 * (s % 8);
    const uint32_t qword = hd_u32a(qs + 32 * c + l), hword = qh != NULL ? hd_u32a(qh + l) : 0;
    for (uint32_t half = 0; half < 2; half++) {
        const uint32_t j = 2 * c + half;
        int sc, mn;
        qb_scale_min_k4(b + 4, j, &sc, &mn);
        const float dl = hd_mul(d, (float)sc), ml = hd_mul(dmin, (float)mn);
        for (uint32_t i = 0; i < 4; i++) {
            uint32_t q = (qb_byte(qword, (int)i) >> (4 * half)) & 15;
            if (qh != NULL)
                q |= ((qb_byte(hword, (int)i) >> j) & 1u) << 4;
            w[4 * half + i] = hd_sub(hd_mul(dl, (float)q), ml);
        }
    }
}

SW_HD void qb_q4_k(const uint8_t *b, uint32_t s, float w[8]) { qb_k4(b, NULL, b + 16, s, w); }
SW_HD void qb_q5_k(const uint8_t *b, uint32_t s, float w[8]) { qb_k4(b, b + 16, b + 48, s, w); }

/* Q6_K: element 128h + r takes nibble r / 64 of ql[64h + r % 64] and bits
 * 2 (r / 32) of qh[32h + r % 32], scale 16 at a time; slot s is h = s / 16,
 * r = 4 (s % 16) .. + 3 and 64 + that. */
SW_HD void qb_q6_k(const uint8_t *b, uint32_t s, float w[8]) {
    const float d = hd_load_f16(b + 208);
    const uint32_t h = s / 16, t = s % 16;
    const uint32_t lw = hd_u32(b + 64 * h + 4 * t), hw = hd_u32(b + 128 + 32 * h + (4 * t) % 32);
    for (uint32_t half = 0; half < 2; half++) {
        const uint32_t r0 = 64 * half + 4 * t, e = 128 * h + r0;
        const float dl = hd_mul(d, (float)(int8_t)b[192 + e / 16]);
        for (uint32_t i = 0; i < 4; i++) {
            const uint32_t r = r0 + i;
            const uint32_t lo = (qb_byte(lw, (int)i) >> (4 * (r / 64))) & 15;
            const uint32_t hi = (qb_byte(hw, (int)i) >> (2 * (r / 32))) & 3;
            w[4 * half + i] = hd_mul(dl, (float)((int)(lo | hi << 4) - 32));
        }
    }
}

/* Q2_K and Q3_K: element by element (rare in Gemma files); slot s is
 * elements 8s .. 8s + 7. */
SW_HD float qb_q2_k_elem(const uint8_t *b, uint32_t e) {
    const float d = hd_load_f16(b + 80), dmin = hd_load_f16(b + 82);
    const uint32_t sc = b[e / 16], h = e / 128, sh = (e % 128) / 32, l = e % 32;
    const uint32_t q = (b[16 + 32 * h + l] >> (2 * sh)) & 3;
    const float dl = hd_mul(d, (float)(sc & 15)), ml = hd_mul(dmin, (float)(sc >> 4));
    return hd_sub(hd_mul(dl, (float)q), ml);
}

SW_HD float qb_q3_k_elem(const uint8_t *b, uint32_t e) {
    const uint8_t *s = b + 96;
    const float d = hd_load_f16(b + 108);
    const uint32_t k = e / 16;
    const int lo4 = k < 8 ? (s[k] & 15) : (s[k - 8] >> 4);
    const int hi2 = (s[8 + k % 4] >> (2 * (k / 4))) & 3;
    const float dl = hd_mul(d, (float)((lo4 | hi2 << 4) - 32));
    const uint32_t h = e / 128, sh = (e % 128) / 32, l = e % 32;
    const int lo = (b[32 + 32 * h + l] >> (2 * sh)) & 3;
    const int hbit = (b[l] >> (e / 32)) & 1;
    return hd_mul(dl, (float)(lo - (hbit ? 0 : 4)));
}

/* ---- any type ------------------------------------------------------------- */

/* Slot s of the block at b: w[0..3] are elements *e0 .. + 3 of the block,
 * w[4..7] elements *e1 .. + 3. With `type` a compile-time constant (the
 * kernels' template argument) the switch folds away. */
SW_HD void qb_slot(uint32_t type, const uint8_t *b, uint32_t s, float w[8], uint32_t *e0,
                   uint32_t *e1) {
    switch (type) {
    case QB_F32: qb_f32(b, w); *e0 = 0, *e1 = 4; return;
    case QB_F16: qb_f16(b, w); *e0 = 0, *e1 = 4; return;
    case QB_BF16: qb_bf16(b, w); *e0 = 0, *e1 = 4; return;
    case QB_Q4_0: qb_q4_0(b, s, w); *e0 = 4 * s, *e1 = 16 + 4 * s; return;
    case QB_Q4_1: qb_q4_1(b, s, w); *e0 = 4 * s, *e1 = 16 + 4 * s; return;
    case QB_Q5_0: qb_q5_0(b, s, w); *e0 = 4 * s, *e1 = 16 + 4 * s; return;
    case QB_Q5_1: qb_q5_1(b, s, w); *e0 = 4 * s, *e1 = 16 + 4 * s; return;
    case QB_Q8_0: qb_q8_0(b, s, w); *e0 = 8 * s, *e1 = 8 * s + 4; return;
    case QB_Q4_K: qb_q4_k(b, s, w); *e0 = 64 * (s / 8) + 4 * (s % 8), *e1 = *e0 + 32; return;
    case QB_Q5_K: qb_q5_k(b, s, w); *e0 = 64 * (s / 8) + 4 * (s % 8), *e1 = *e0 + 32; return;
    case QB_Q6_K:
        qb_q6_k(b, s, w);
        *e0 = 128 * (s / 16) + 4 * (s % 16), *e1 = *e0 + 64;
        return;
    case QB_Q2_K:
    case QB_Q3_K:
        for (uint32_t i = 0; i < 8; i++)
            w[i] = type == QB_Q2_K ? qb_q2_k_elem(b, 8 * s + i) : qb_q3_k_elem(b, 8 * s + i);
        *e0 = 8 * s, *e1 = 8 * s + 4;
        return;
    default:
        for (int i = 0; i < 8; i++)
            w[i] = 0.0f;
        *e0 = 0, *e1 = 4;
        return;
    }
}

/* Slot g of a row (counting from the row's first element) at row: which
 * block, and the element offsets within the row. */
SW_HD void qb_row_slot(uint32_t type, const uint8_t *row, uint64_t g, float w[8],
                       uint64_t *e0, uint64_t *e1) {
    uint32_t elems, bytes, a, c;
    qb_geometry(type, &elems, &bytes);
    const uint64_t spb = elems / 8, blk = g / spb;
    qb_slot(type, row + blk * bytes, (uint32_t)(g % spb), w, &a, &c);
    *e0 = blk * elems + a;
    *e1 = blk * elems + c;
}

#endif
