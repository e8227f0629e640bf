/*
 * dequant_k.c — the K-quant dequantizers: 256-element super-blocks split
 * into 16 or 32-element sub-blocks, each with its own integer scale.
 *
 * Float order follows gguf/quants.py exactly, so results are bit-identical:
 * the per-sub-block factors are rounded first (dl = d*sc, ml = dmin*m) and
 * each element is then dl*q - ml (Q2_K, Q4_K, Q5_K) or dl*q (Q3_K, Q6_K).
 * Q8_K (f32 d, int8 qs[256], int16 bsums[16]) is y = d*q; bsums are only
 * used by dot products and are ignored here.
 */
#include "quant/dequant.h"

#include "quant/half.h"

enum { QK = 256 };

/* Q2_K (84 bytes): scales[16] (low nibble scale, high nibble min), qs[64]
 * (2-bit values), d, dmin. Output i takes bits 2*s of qs[32*h + l], where
 * i = 128*h + 32*s + l; its sub-block is i/16. */
void dequant_q2_k(const uint8_t *src, float *dst, uint64_t n_blocks) {
    float dl[16], ml[16];
    for (uint64_t b = 0; b < n_blocks; b++, src += 84, dst += QK) {
        const uint8_t *scales = src, *qs = src + 16;
        const float d = half_load_f16(src + 80);
        const float dmin = half_load_f16(src + 82);
        for (int k = 0; k < 16; k++) {
            dl[k] = d * (float)(scales[k] & 15);
            ml[k] = dmin * (float)(scales[k] >> 4);
        }
        for (int i = 0; i < QK; i++) {
            int h = i / 128, s = (i % 128) / 32, l = i % 32;
            int q = (qs[32 * h + l] >> (2 * s)) & 3;
            dst[i] = dl[i / 16] * (float)q - ml[i / 16];
        }
    }
}

/* Q3_K's 16 signed 6-bit scales: low 4 bits from nibbles of s[0..7] (low
 * nibbles first), high 2 bits from 2-bit fields of s[8..11]; bias 32. */
static void unpack_scales_q3_k(const uint8_t s[12], int sc[16]) {
    for (int k = 0; k < 16; k++) {
        int lo = k < 8 ? (s[k] & 15) : (s[k - 8] >> 4);
        int hi = (s[8 + k % 4] >> (2 * (k / 4))) & 3;
        sc[k] = (lo | hi << 4) - 32;
    }
}

/* Q3_K (110 bytes): hmask[32], qs[64], scales[12], d. Output i (as in
 * Q2_K for the low 2 bits) subtracts 4 when bit i/32 of hmask[i%32] is
 * clear: q = low2 - 4*(1 - hbit). */
void dequant_q3_k(const uint8_t *src, float *dst, uint64_t n_blocks) {
    int sc[16];
    float dl[16];
    for (uint64_t b = 0; b < n_blocks; b++, src += 110, dst += QK) {
        const uint8_t *hmask = src, *qs = src + 32;
        const float d = half_load_f16(src + 108);
        unpack_scales_q3_k(src + 96, sc);
        for (int k = 0; k < 16; k++)
            dl[k] = d * (float)sc[k];
        for (int i = 0; i < QK; i++) {
            int h = i / 128, s = (i % 128) / 32, l = i % 32;
            int lo = (qs[32 * h + l] >> (2 * s)) & 3;
            int hbit = (hmask[l] >> (i / 32)) & 1;
            dst[i] = dl[i / 16] * (float)(lo - (hbit ? 0 : 4));
        }
    }
}

/* Q4_K/Q5_K's 8 unsigned 6-bit scales and mins packed in 12 bytes:
 * j<4: sc = s[j]&63, mn = s[j+4]&63; j>=4: low 4 bits from s[j+4]'s
 * nibbles, high 2 bits from the top bits of s[j-4] (sc) and s[j] (mn). */
void unpack_scale_min_k4(const uint8_t s[12], int sc[8], int mn[8]) {
    for (int j = 0; j < 4; j++) {
        sc[j] = s[j] & 63;
        mn[j] = s[j + 4] & 63;
        sc[j + 4] = (s[j + 8] & 15) | (s[j] >> 6) << 4;
        mn[j + 4] = (s[j + 8] >> 4) | (s[j + 4] >> 6) << 4;
    }
}

/* Shared body of Q4_K and Q5_K: 8 sub-blocks of 32; sub-block 2c takes the
 * low nibbles of qs[32c..32c+31], 2c+1 the high nibbles; qh (Q5_K only,
 * else NULL) adds bit j of qh[l] as the value's bit 4. */
static void dequant_k4_block(const uint8_t *hdr, const uint8_t *qh, const uint8_t *qs,
                             float *dst) {
    int sc[8], mn[8];
    const float d = half_load_f16(hdr);
    const float dmin = half_load_f16(hdr + 2);
    unpack_scale_min_k4(hdr + 4, sc, mn);
    for (int j = 0; j < 8; j++) {
        const float dl = d * (float)sc[j];
        const float ml = dmin * (float)mn[j];
        const uint8_t *q4 = qs + 32 * (j / 2);
        const int shift = 4 * (j % 2);
        for (int l = 0; l < 32; l++) {
            int q = (q4[l] >> shift) & 15;
            if (qh != NULL)
                q |= ((qh[l] >> j) & 1) << 4;
            dst[32 * j + l] = dl * (float)q - ml;
        }
    }
}

/* Q4_K (144 bytes): d, dmin, scales[12], qs[128]. */
void dequant_q4_k(const uint8_t *src, float *dst, uint64_t n_blocks) {
    for (uint64_t b = 0; b < n_blocks; b++, src += 144, dst += QK)
        dequant_k4_block(src, NULL, src + 16, dst);
}

/* Q5_K (176 bytes): d, dmin, scales[12], qh[32], qs[128]. */
void dequant_q5_k(const uint8_t *src, float *dst, uint64_t n_blocks) {
    for (uint64_t b = 0; b < n_blocks; b++, src += 176, dst += QK)
        dequant_k4_block(src, src + 16, src + 48, dst);
}

/* Q6_K (210 bytes): ql[128], qh[64], int8 scales[16], d. Each half h of
 * 128 outputs uses ql[64h..], qh[32h..]: output r of the half takes nibble
 * r/64 of ql[r%64] and bits 2*(r/32) of qh[r%32]; q = value - 32, and the
 * sub-block (scale) is the output index / 16. */
void dequant_q6_k(const uint8_t *src, float *dst, uint64_t n_blocks) {
    float dl[16];
    for (uint64_t b = 0; b < n_blocks; b++, src += 210, dst += QK) {
        const float d = half_load_f16(src + 208);
        for (int k = 0; k < 16; k++)
            dl[k] = d * (float)(int8_t)src[192 + k];
        for (int i = 0; i < QK; i++) {
            int h = i / 128, r = i % 128;
            const uint8_t *ql = src + 64 * h, *qh = src + 128 + 32 * h;
            int lo = (ql[r % 64] >> (4 * (r / 64))) & 15;
            int hi = (qh[r % 32] >> (2 * (r / 32))) & 3;
            dst[i] = dl[i / 16] * (float)((lo | hi << 4) - 32);
        }
    }
}

/* Q8_K (292 bytes): f32 d, int8 qs[256], int16 bsums[16]; y = d*q. */
void dequant_q8_k(const uint8_t *src, float *dst, uint64_t n_blocks) {
    for (uint64_t b = 0; b < n_blocks; b++, src += 292, dst += QK) {
        const uint32_t bits = (uint32_t)src[0] | (uint32_t)src[1] << 8 |
                              (uint32_t)src[2] << 16 | (uint32_t)src[3] << 24;
        const float d = half_bits_to_f32(bits);
        for (int i = 0; i < QK; i++)
            dst[i] = d * (float)(int8_t)src[4 + i];
    }
}
