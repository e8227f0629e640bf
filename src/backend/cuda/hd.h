/*
 * hd.h — the base of the CUDA kernels' per-element math: helpers that
 * compile as plain C11 (the host tests), as C++ and as CUDA device code,
 * so every formula a kernel applies is written once and tested on the CPU
 * against the portable reference (tests/test_cuda_math.c).
 *
 * SW_HD marks a function usable on both sides. Float arithmetic that must
 * round like the CPU reference goes through hd_mul/hd_add/hd_sub/hd_div:
 * on the device they are the round-to-nearest intrinsics, which nvcc never
 * fuses into an FMA (its default would), and on the host plain operators
 * (the build passes -ffp-contract=off). Half-precision conversions are
 * bit-exact re-statements of quant/half.h's, checked against it.
 * Loads are little-endian and as wide as the formats' alignment allows
 * (see hd_u16 below): quantized blocks of 18, 22, 34 or 210 bytes sit at
 * even addresses only.
 */
#ifndef SW_BACKEND_CUDA_HD_H
#define SW_BACKEND_CUDA_HD_H

#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
#define SW_HD static inline __host__ __device__
#else
#define SW_HD static inline
#endif

#if defined(__CUDA_ARCH__)
SW_HD float hd_mul(float a, float b) { return __fmul_rn(a, b); }
SW_HD float hd_add(float a, float b) { return __fadd_rn(a, b); }
SW_HD float hd_sub(float a, float b) { return __fsub_rn(a, b); }
SW_HD float hd_div(float a, float b) { return __fdiv_rn(a, b); }
SW_HD uint32_t hd_bits(float f) { return __float_as_uint(f); }
SW_HD float hd_float(uint32_t u) { return __uint_as_float(u); }
#else
SW_HD float hd_mul(float a, float b) { return a * b; }
SW_HD float hd_add(float a, float b) { return a + b; }
SW_HD float hd_sub(float a, float b) { return a - b; }
SW_HD float hd_div(float a, float b) { return a / b; }
SW_HD uint32_t hd_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}
SW_HD float hd_float(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
#endif

/* Little-endian loads. On the host, byte by byte (any address); on the
 * device, one load of the width, so p must be aligned to it: every block
 * of every type starts at an even address (block sizes are even and a
 * device tensor starts on a 256-byte boundary), Q4_K/Q5_K blocks on a
 * 4-byte one (144 and 176 bytes), float rows' 8-element slots on a
 * 16-byte one. cuda_ops.cu refuses a weight that is not 16-byte aligned. */
#if defined(__CUDA_ARCH__)
SW_HD uint32_t hd_u16(const uint8_t *p) { return *(const unsigned short *)p; }
SW_HD uint32_t hd_u32a(const uint8_t *p) { return *(const uint32_t *)p; }
SW_HD void hd_u32x4(const uint8_t *p, uint32_t w[4]) {
    const uint4 v = *(const uint4 *)p;
    w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
}
#else
SW_HD uint32_t hd_u16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
SW_HD uint32_t hd_u32a(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
SW_HD void hd_u32x4(const uint8_t *p, uint32_t w[4]) {
    for (int i = 0; i < 4; i++)
        w[i] = hd_u32a(p + 4 * i);
}
#endif

/* 4 bytes at an even address, as two 16-bit loads. */
SW_HD uint32_t hd_u32(const uint8_t *p) { return hd_u16(p) | hd_u16(p + 2) << 16; }

/* IEEE binary16 bits to f32, subnormals, infinities and NaN payloads kept. */
SW_HD float hd_f16(uint32_t h) {
    uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0x1fu)
        return hd_float(sign | 0x7f800000u | man << 13);
    if (exp != 0)
        return hd_float(sign | (exp + 112u) << 23 | man << 13);
    if (man == 0)
        return hd_float(sign);
    uint32_t e = 113; /* biased f32 exponent of 2^-14, lowered per leading zero */
    while ((man & 0x400u) == 0) {
        man <<= 1;
        e--;
    }
    return hd_float(sign | e << 23 | (man & 0x3ffu) << 13);
}

SW_HD float hd_bf16(uint32_t b) { return hd_float(b << 16); }

SW_HD float hd_load_f16(const uint8_t *p) { return hd_f16(hd_u16(p)); }

/* m >> shift rounded to nearest, ties to even (shift >= 1). */
SW_HD uint32_t hd_shift_rne(uint32_t m, uint32_t shift) {
    uint32_t q = m >> shift, rem = m & ((1u << shift) - 1u), halfway = 1u << (shift - 1);
    return q + (rem > halfway || (rem == halfway && (q & 1u)));
}

/* f32 to binary16, nearest even; overflow to infinity, NaN stays NaN. */
SW_HD uint32_t hd_to_f16(float f) {
    uint32_t u = hd_bits(f), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    if (a > 0x7f800000u) {
        uint32_t h = 0x7c00u | (a & 0x7fffffu) >> 13;
        return sign | (h == 0x7c00u ? 0x7c01u : h);
    }
    if (a >= 0x47800000u)
        return sign | 0x7c00u;
    if (a >= 0x38800000u)
        return sign | hd_shift_rne(a - (112u << 23), 13);
    if (a <= 0x33000000u)
        return sign;
    return sign | hd_shift_rne((a & 0x7fffffu) | 0x800000u, 126u - (a >> 23));
}

/* f32 to bfloat16, nearest even; NaN stays NaN (quiet bit set). */
SW_HD uint32_t hd_to_bf16(float f) {
    uint32_t u = hd_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (u >> 16) | 0x40u;
    return (uint32_t)(((uint64_t)u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

#endif
