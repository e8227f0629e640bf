/*
 * quantize_k.c — f32 → Q4_K (quantize.h): a plain min/max quantizer.
 *
 * Layout (144 bytes per 256 values, see dequant_k.c): f16 d, f16 dmin,
 * 12 bytes of 6-bit scales and mins for 8 sub-blocks of 32, 128 bytes of
 * 4-bit values; value = d*sc*q - dmin*m. Each sub-block's range
 * [min(0, lo), hi] is split into 15 steps; no search for the best scale
 * (llama.cpp's make_qkx2 does one). Used for synthetic weights, where any
 * valid encoding serves, and decoded exactly by the dequantizer.
 */
#include <math.h>

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
