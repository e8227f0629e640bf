/*
 * quantize.c — f32 → F32/F16/BF16/Q8_0, the dispatcher, and the load-time
 * conversion rule and row converter (quantize.h). Bytes are little-endian
 * like every GGUF and safetensors payload.
 */
#include <math.h>
#include <string.h>

#include "quant/dequant.h"
#include "quant/half.h"
#include "quant/quantize.h"
#include "quant/types.h"
#include "util/error.h"

static void put_u16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)(v & 0xff);
    p[1] = (uint8_t)(v >> 8);
}

/* numpy's round-half-away-from-zero as gguf writes it: floor(|x|) plus one
 * when the fraction is at least one half, sign restored. */
static float round_away(float x) {
    float a = fabsf(x);
    float fl = floorf(a);
    float b = fl + floorf(2.0f * (a - fl));
    return x < 0 ? -b : b;
}

void quantize_q8_0(const float *src, uint8_t *dst, uint64_t n_blocks) {
    for (uint64_t b = 0; b < n_blocks; b++, src += 32, dst += 34) {
        float amax = 0.0f;
        for (int j = 0; j < 32; j++)
            if (fabsf(src[j]) > amax)
                amax = fabsf(src[j]);
        float d = amax / 127.0f;
        float id = d == 0.0f ? 0.0f : 1.0f / d;
        put_u16(dst, half_f32_to_f16(d));
        for (int j = 0; j < 32; j++)
            dst[2 + j] = (uint8_t)(int8_t)round_away(src[j] * id);
    }
}

int quant_can_quantize(uint32_t type) {
    return type == SW_TYPE_F32 || type == SW_TYPE_F16 || type == SW_TYPE_BF16 ||
           type == SW_TYPE_Q8_0 || type == SW_TYPE_Q4_K || type == SW_TYPE_Q6_K;
}

sw_status quant_quantize(uint32_t type, const float *src, void *dst, uint64_t n) {
    uint8_t *out = dst;
    switch (type) {
    case SW_TYPE_F32:
        memcpy(out, src, n * sizeof(float));
        return SW_OK;
    case SW_TYPE_F16:
        for (uint64_t i = 0; i < n; i++)
            put_u16(out + 2 * i, half_f32_to_f16(src[i]));
        return SW_OK;
    case SW_TYPE_BF16:
        for (uint64_t i = 0; i < n; i++)
            put_u16(out + 2 * i, half_f32_to_bf16(src[i]));
        return SW_OK;
    case SW_TYPE_Q8_0:
        if (n % 32 != 0)
            return sw_errorf(SW_ERR_ARG, "Q8_0 needs a multiple of 32 values, got %llu",
                             (unsigned long long)n);
        quantize_q8_0(src, out, n / 32);
        return SW_OK;
    case SW_TYPE_Q4_K:
    case SW_TYPE_Q6_K:
        if (n % 256 != 0)
            return sw_errorf(SW_ERR_ARG, "%s needs a multiple of 256 values, got %llu",
                             type_name(type), (unsigned long long)n);
        if (type == SW_TYPE_Q4_K)
            quantize_q4_k(src, out, n / 256);
        else
            quantize_q6_k(src, out, n / 256);
        return SW_OK;
    default:
        return sw_errorf(SW_ERR_UNSUPPORTED, "no quantizer for type %u (%s)", type,
                         type_name(type));
    }
}

static int is_plain(uint32_t type) {
    return type == SW_TYPE_F32 || type == SW_TYPE_F16 || type == SW_TYPE_BF16;
}

uint32_t quant_convert_type(uint32_t src, uint64_t ne0, uint32_t want) {
    if (want & QUANT_DEQUANT) {
        uint32_t to = want & ~QUANT_DEQUANT;
        return (to == SW_TYPE_BF16 || to == SW_TYPE_F16) && src != SW_TYPE_F32 ? to : src;
    }
    if (!is_plain(src) || !quant_can_quantize(want))
        return src;
    if (want == SW_TYPE_Q8_0 && ne0 % 32 != 0)
        return src == SW_TYPE_F32 ? SW_TYPE_F16 : src;
    return want;
}

sw_status quant_convert_rows(uint32_t src_type, const void *src, uint32_t dst_type, void *dst,
                             uint64_t n_rows, uint64_t ne0, float *row) {
    uint64_t src_row = 0, dst_row = 0;
    if (!type_row_bytes(src_type, ne0, &src_row) || !type_row_bytes(dst_type, ne0, &dst_row))
        return sw_errorf(SW_ERR_ARG, "cannot convert rows of %llu %s values to %s",
                         (unsigned long long)ne0, type_name(src_type), type_name(dst_type));
    for (uint64_t r = 0; r < n_rows; r++) {
        sw_status st = quant_dequantize(src_type, (const uint8_t *)src + r * src_row, row, ne0);
        if (st == SW_OK)
            st = quant_quantize(dst_type, row, (uint8_t *)dst + r * dst_row, ne0);
        if (st != SW_OK)
            return st;
    }
    return SW_OK;
}
