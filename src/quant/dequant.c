/*
 * dequant.c — quant_dequantize() dispatch, and the plain (F32, F16, BF16)
 * and 32-element block (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) dequantizers.
 * K-quants live in dequant_k.c.
 *
 * Each formula mirrors gguf/quants.py operation for operation, so outputs
 * are bit-identical to it: y = d*q for the symmetric types, (d*q) + m for
 * the _1 types, q converted to float before the multiply (exact: |q| < 2^8).
 */
#include "quant/dequant.h"

#include "quant/half.h"
#include "quant/types.h"
#include "util/error.h"

static uint32_t load_u32le(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

/* Bit copy, NaN payloads included (numpy views F32 data as is). */
void dequant_f32(const uint8_t *src, float *dst, uint64_t n_blocks) {
    for (uint64_t i = 0; i < n_blocks; i++)
        dst[i] = half_bits_to_f32(load_u32le(src + 4 * i));
}

void dequant_f16(const uint8_t *src, float *dst, uint64_t n_blocks) {
    for (uint64_t i = 0; i < n_blocks; i++)
        dst[i] = half_load_f16(src + 2 * i);
}

void dequant_bf16(const uint8_t *src, float *dst, uint64_t n_blocks) {
    for (uint64_t i = 0; i < n_blocks; i++) {
        const uint8_t *p = src + 2 * i;
        dst[i] = half_bf16_to_f32((uint16_t)(p[0] | (p[1] << 8)));
    }
}

/* Q4_0 (18 bytes): d, qs[16]. Low nibbles are elements 0..15, high 16..31. */
void dequant_q4_0(const uint8_t *src, float *dst, uint64_t n_blocks) {
    for (uint64_t b = 0; b < n_blocks; b++, src += 18, dst += 32) {
        const float d = half_load_f16(src);
        const uint8_t *qs = src + 2;
        for (int j = 0; j < 16; j++) {
            dst[j] = d * (float)((qs[j] & 15) - 8);
            dst[j + 16] = d * (float)((qs[j] >> 4) - 8);
        }
    }
}

/* Q4_1 (20 bytes): d, m, qs[16]; unsigned nibbles, y = d*q + m. */
void dequant_q4_1(const uint8_t *src, float *dst, uint64_t n_blocks) {
    for (uint64_t b = 0; b < n_blocks; b++, src += 20, dst += 32) {
        const float d = half_load_f16(src);
        const float m = half_load_f16(src + 2);
        const uint8_t *qs = src + 4;
        for (int j = 0; j < 16; j++) {
            dst[j] = d * (float)(qs[j] & 15) + m;
            dst[j + 16] = d * (float)(qs[j] >> 4) + m;
        }
    }
}

/* 5-bit values of one Q5 block: nibble j of qs plus bit j of qh. */
static void unpack_q5(const uint8_t *qh_bytes, const uint8_t *qs, int q[32]) {
    const uint32_t qh = load_u32le(qh_bytes);
    for (int j = 0; j < 16; j++) {
        q[j] = (qs[j] & 15) | (int)((qh >> j) & 1u) << 4;
        q[j + 16] = (qs[j] >> 4) | (int)((qh >> (j + 16)) & 1u) << 4;
    }
}

/* Q5_0 (22 bytes): d, qh[4], qs[16]; y = d*(q - 16). */
void dequant_q5_0(const uint8_t *src, float *dst, uint64_t n_blocks) {
    int q[32];
    for (uint64_t b = 0; b < n_blocks; b++, src += 22, dst += 32) {
        const float d = half_load_f16(src);
        unpack_q5(src + 2, src + 6, q);
        for (int j = 0; j < 32; j++)
            dst[j] = d * (float)(q[j] - 16);
    }
}

/* Q5_1 (24 bytes): d, m, qh[4], qs[16]; y = d*q + m. */
void dequant_q5_1(const uint8_t *src, float *dst, uint64_t n_blocks) {
    int q[32];
    for (uint64_t b = 0; b < n_blocks; b++, src += 24, dst += 32) {
        const float d = half_load_f16(src);
        const float m = half_load_f16(src + 2);
        unpack_q5(src + 4, src + 8, q);
        for (int j = 0; j < 32; j++)
            dst[j] = d * (float)q[j] + m;
    }
}

/* Q8_0 (34 bytes): d, int8 qs[32]; y = d*q. */
void dequant_q8_0(const uint8_t *src, float *dst, uint64_t n_blocks) {
    for (uint64_t b = 0; b < n_blocks; b++, src += 34, dst += 32) {
        const float d = half_load_f16(src);
        for (int j = 0; j < 32; j++)
            dst[j] = d * (float)(int8_t)src[2 + j];
    }
}

typedef void (*dequant_fn)(const uint8_t *src, float *dst, uint64_t n_blocks);

static dequant_fn dequant_lookup(uint32_t type) {
    switch (type) {
    case SW_TYPE_F32: return dequant_f32;
    case SW_TYPE_F16: return dequant_f16;
    case SW_TYPE_BF16: return dequant_bf16;
    case SW_TYPE_Q4_0: return dequant_q4_0;
    case SW_TYPE_Q4_1: return dequant_q4_1;
    case SW_TYPE_Q5_0: return dequant_q5_0;
    case SW_TYPE_Q5_1: return dequant_q5_1;
    case SW_TYPE_Q8_0: return dequant_q8_0;
    case SW_TYPE_Q2_K: return dequant_q2_k;
    case SW_TYPE_Q3_K: return dequant_q3_k;
    case SW_TYPE_Q4_K: return dequant_q4_k;
    case SW_TYPE_Q5_K: return dequant_q5_k;
    case SW_TYPE_Q6_K: return dequant_q6_k;
    case SW_TYPE_Q8_K: return dequant_q8_k;
    default: return NULL;
    }
}

sw_status quant_dequantize(uint32_t type, const void *src, float *dst, uint64_t n_elems) {
    const type_traits *t = type_get_traits(type);
    dequant_fn fn = dequant_lookup(type);
    if (t == NULL || !t->dequant_supported || fn == NULL)
        return sw_errorf(SW_ERR_UNSUPPORTED, "unsupported tensor type %u (%s)",
                         (unsigned)type, type_name(type));
    if (n_elems % t->block_elems != 0)
        return sw_errorf(SW_ERR_ARG,
                         "%llu elements of type %s are not a whole number of "
                         "%u-element blocks",
                         (unsigned long long)n_elems, t->name, (unsigned)t->block_elems);
    if (n_elems == 0)
        return SW_OK;
    if (src == NULL || dst == NULL)
        return sw_errorf(SW_ERR_ARG, "quant_dequantize: NULL %s",
                         src == NULL ? "src" : "dst");
    fn(src, dst, n_elems / t->block_elems);
    return SW_OK;
}
