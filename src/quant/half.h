/*
 * half.h — IEEE binary16 (f16) and bfloat16 (bf16) <-> f32, bit-exact.
 *
 * The reference is numpy (the gguf Python package's dequantizers use it):
 * f16 -> f32 is exact for all 65536 inputs, subnormals and signed zeros
 * included, and keeps NaN payloads unquieted (0x7c01 -> 0x7f802000).
 * f32 -> f16 rounds to nearest even like numpy's astype(float16): overflow
 * gives inf, a NaN keeps its top payload bits and stays a NaN. bf16 is the
 * top half of an f32; f32 -> bf16 matches gguf's BF16.quantize (NaN forced
 * quiet, then round to nearest even). Pure integer code: no FP environment.
 */
#ifndef SW_QUANT_HALF_H
#define SW_QUANT_HALF_H

#include <stdint.h>
#include <string.h>

static inline float half_bits_to_f32(uint32_t bits) {
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline uint32_t half_f32_to_bits(float f) {
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    return bits;
}

/* f16 bits -> f32 bits. Subnormal halves (value man * 2^-24) become normal
 * f32s: shift the mantissa up to its hidden bit and lower the exponent. */
static inline uint32_t half_f16_to_f32_bits(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0x1f) /* inf or NaN: payload kept as is */
        return sign | 0x7f800000u | (man << 13);
    if (exp != 0) /* normal: rebias 15 -> 127 */
        return sign | ((exp + 112u) << 23) | (man << 13);
    if (man == 0)
        return sign;
    uint32_t e = 113; /* biased f32 exponent of 2^-14 */
    while ((man & 0x400u) == 0) {
        man <<= 1;
        e--;
    }
    return sign | (e << 23) | ((man & 0x3ffu) << 13);
}

static inline float half_f16_to_f32(uint16_t h) {
    return half_bits_to_f32(half_f16_to_f32_bits(h));
}

/* Shifts m right by `shift` (1..31), rounding to nearest, ties to even. */
static inline uint32_t half_shift_rne(uint32_t m, uint32_t shift) {
    uint32_t q = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1u);
    uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (q & 1u)))
        q++;
    return q;
}

/* f32 -> f16 bits, round to nearest even. A mantissa carry out of the top
 * rolls into the exponent, which is what makes 65520 round to inf and the
 * largest subnormal round up to the smallest normal. */
static inline uint16_t half_f32_to_f16(float f) {
    uint32_t u = half_f32_to_bits(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) { /* NaN: keep the top payload bits, stay NaN */
        uint32_t h = 0x7c00u | ((a & 0x7fffffu) >> 13);
        return (uint16_t)(sign | (h == 0x7c00u ? 0x7c01u : h));
    }
    if (a >= 0x47800000u) /* >= 2^16, or inf: beyond any rounding */
        return (uint16_t)(sign | 0x7c00u);
    if (a >= 0x38800000u) { /* f16 normal range (>= 2^-14) */
        uint32_t rebased = a - (112u << 23); /* exponent rebias 127 -> 15 */
        return (uint16_t)(sign | half_shift_rne(rebased, 13));
    }
    if (a <= 0x33000000u) /* <= 2^-25: rounds to zero (ties to even) */
        return (uint16_t)sign;
    /* subnormal result: units of 2^-24 */
    uint32_t e = a >> 23;
    uint32_t m = (a & 0x7fffffu) | 0x800000u;
    return (uint16_t)(sign | half_shift_rne(m, 126u - e));
}

/* Reads a little-endian f16 at p (any alignment) and widens it. */
static inline float half_load_f16(const uint8_t *p) {
    return half_f16_to_f32((uint16_t)(p[0] | (p[1] << 8)));
}

static inline float half_bf16_to_f32(uint16_t b) {
    return half_bits_to_f32((uint32_t)b << 16);
}

/* f32 -> bf16 as gguf (and ggml) do it: a NaN is made quiet first so that
 * truncation cannot turn it into inf. */
static inline uint16_t half_f32_to_bf16(float f) {
    uint32_t u = half_f32_to_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u);
    return (uint16_t)(((uint64_t)u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

#endif
