/*
 * quantize_k.c — f32 → Q4_K and Q6_K (quantize.h): plain min/max and
 * max-abs quantizers.
 *
 * Layout (144 bytes per 256 values, see dequant_k.c): f16 d, f16 dmin,
 * 12 bytes of 6-bit scales and mins for 8 sub-blocks of 32, 128 bytes of
 * 4-bit values; value = d*sc*q - dmin*m. Each sub-block's range
 * [min(0, lo), hi] is split into 15 steps; no search for the best scale
 * (llama.cpp's make_qkx2 does one). Used for synthetic weights, where any
 * valid encoding serves, and decoded exactly by the dequantizer.
 *
 * Q6_K (210 bytes, see dequant_k.c): 16 sub-blocks of 16 with int8 scales
 * under an f16 d; value = d*sc*(q - 32), q in 0..63. Each sub-block's step
 * is rounded up (its largest magnitude then needs at most 31 steps), so
 * every value lands within half a step, plus the f16 rounding of d.
 */
#include <math.h>
#include <string.h>

#include "quant/half.h"
#include "quant/quantize.h"

static uint8_t clamp_u(float v, int hi) {
    int q = (int)lrintf(v);
    return (uint8_t)(q < 0 ? 0 : q > hi ? hi : q);
}

/* Packs 8 six-bit scales and mins the way get_scale_min_k4 unpacks them. */
static void pack_scales(const uint8_t sc[8], const uint8_t mn[8], uint8_t out[12]) {
    for (int j = 0; j < 4; j++) {
        out[j] = (uint8_t)((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
        out[j + 4] = (uint8_t)((mn[j] & 63) | ((mn[j + 4] >> 4) << 6));
        out[j + 8] = (uint8_t)((sc[j + 4] & 15) | ((mn[j + 4] & 15) << 4));
    }
}

static void quantize_block(const float *x, uint8_t *dst) {
    float scale[8], minv[8], max_scale = 0.0f, max_min = 0.0f;
    for (int j = 0; j < 8; j++) {
        float lo = 0.0f, hi = x[32 * j];
        for (int l = 0; l < 32; l++) {
            float v = x[32 * j + l];
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
        scale[j] = (hi - lo) / 15.0f;
        minv[j] = -lo;
        max_scale = scale[j] > max_scale ? scale[j] : max_scale;
        max_min = minv[j] > max_min ? minv[j] : max_min;
    }
    /* Store the super-block scales first so the rounding below uses the
     * values the dequantizer will see. */
    uint16_t d_bits = half_f32_to_f16(max_scale / 63.0f);
    uint16_t m_bits = half_f32_to_f16(max_min / 63.0f);
    float d = half_f16_to_f32(d_bits), dmin = half_f16_to_f32(m_bits);
    uint8_t sc[8], mn[8];
    for (int j = 0; j < 8; j++) {
        sc[j] = d > 0.0f ? clamp_u(scale[j] / d, 63) : 0;
        mn[j] = dmin > 0.0f ? clamp_u(minv[j] / dmin, 63) : 0;
    }
    dst[0] = (uint8_t)(d_bits & 0xff);
    dst[1] = (uint8_t)(d_bits >> 8);
    dst[2] = (uint8_t)(m_bits & 0xff);
    dst[3] = (uint8_t)(m_bits >> 8);
    pack_scales(sc, mn, dst + 4);
    uint8_t *qs = dst + 16;
    for (int j = 0; j < 8; j += 2) {
        float s0 = d * sc[j], s1 = d * sc[j + 1];
        float m0 = dmin * mn[j], m1 = dmin * mn[j + 1];
        for (int l = 0; l < 32; l++) {
            uint8_t lo = s0 > 0.0f ? clamp_u((x[32 * j + l] + m0) / s0, 15) : 0;
            uint8_t hi = s1 > 0.0f ? clamp_u((x[32 * (j + 1) + l] + m1) / s1, 15) : 0;
            qs[16 * j + l] = (uint8_t)(lo | (hi << 4));
        }
    }
}

void quantize_q4_k(const float *src, uint8_t *dst, uint64_t n_blocks) {
    for (uint64_t b = 0; b < n_blocks; b++)
        quantize_block(src + 256 * b, dst + 144 * b);
}

static void quantize_q6_block(const float *x, uint8_t *dst) {
    float step[16], max_step = 0.0f;
    for (int k = 0; k < 16; k++) {
        float amax = 0.0f;
        for (int l = 0; l < 16; l++)
            amax = fabsf(x[16 * k + l]) > amax ? fabsf(x[16 * k + l]) : amax;
        step[k] = amax / 31.0f;
        max_step = step[k] > max_step ? step[k] : max_step;
    }
    const uint16_t d_bits = half_f32_to_f16(max_step / 127.0f);
    const float d = half_f16_to_f32(d_bits);
    uint8_t *ql = dst, *qh = dst + 128;
    memset(dst, 0, 192); /* ql and qh are or'ed in below */
    for (int k = 0; k < 16; k++) {
        int sc = d > 0.0f ? (int)ceilf(step[k] / d) : 0;
        sc = sc > 127 ? 127 : sc;
        dst[192 + k] = (uint8_t)sc;
        const float s = d * (float)sc;
        for (int l = 0; l < 16; l++) {
            const int i = 16 * k + l, h = i / 128, r = i % 128;
            int q = s > 0.0f ? (int)lrintf(x[i] / s) : 0;
            q = (q < -32 ? -32 : q > 31 ? 31 : q) + 32;
            ql[64 * h + r % 64] |= (uint8_t)((q & 15) << (4 * (r / 64)));
            qh[32 * h + r % 32] |= (uint8_t)((q >> 4) << (2 * (r / 32)));
        }
    }
    dst[208] = (uint8_t)(d_bits & 0xff);
    dst[209] = (uint8_t)(d_bits >> 8);
}

void quantize_q6_k(const float *src, uint8_t *dst, uint64_t n_blocks) {
    for (uint64_t b = 0; b < n_blocks; b++)
        quantize_q6_block(src + 256 * b, dst + 210 * b);
}
