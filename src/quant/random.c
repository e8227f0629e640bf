/*
 * random.c — see random.h. A xorshift64* generator; the scale offsets are
 * the block layouts' (the same ones quant/dequant.c reads).
 */
#include "quant/random.h"

#include <string.h>

#include "quant/half.h"
#include "quant/types.h"

static uint64_t next(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545f4914f6cdd1dull;
}

/* Uniform in [lo, hi) with 24 random bits. */
static float uniform(uint64_t *s, float lo, float hi) {
    return lo + (hi - lo) * (float)((next(s) >> 40) * (1.0 / 16777216.0));
}

static void put_f16(uint8_t *p, float f) {
    uint16_t h = half_f32_to_f16(f);
    memcpy(p, &h, 2);
}

/* The f16 scale fields of one block, small and finite (signed where the
 * format's scale is). */
static void set_scales(uint32_t type, uint8_t *b, uint64_t *s) {
    const float lo = 0.001f, hi = 0.02f;
    switch (type) {
    case SW_TYPE_Q4_1: case SW_TYPE_Q5_1: case SW_TYPE_Q4_K: case SW_TYPE_Q5_K:
        put_f16(b, uniform(s, lo, hi));
        put_f16(b + 2, uniform(s, lo, hi));
        return;
    case SW_TYPE_Q2_K:
        put_f16(b + 80, uniform(s, lo, hi));
        put_f16(b + 82, uniform(s, lo, hi));
        return;
    case SW_TYPE_Q3_K: put_f16(b + 108, uniform(s, -hi, hi)); return;
    case SW_TYPE_Q6_K: put_f16(b + 208, uniform(s, -hi, hi)); return;
    case SW_TYPE_Q8_K: {
        float d = uniform(s, lo, hi);
        memcpy(b, &d, 4);
        return;
    }
    default: put_f16(b, uniform(s, -hi, hi)); return; /* Q4_0, Q5_0, Q8_0 */
    }
}

void quant_fill_random(uint32_t type, uint8_t *dst, uint64_t n_bytes, uint64_t *state) {
    const type_traits *tr = type_get_traits(type);
    if (tr == NULL || dst == NULL)
        return;
    for (uint64_t off = 0; off + tr->block_bytes <= n_bytes; off += tr->block_bytes) {
        uint8_t *b = dst + off;
        float f = uniform(state, -1, 1);
        uint16_t h;
        switch (type) {
        case SW_TYPE_F32: memcpy(b, &f, 4); break;
        case SW_TYPE_F16: put_f16(b, f); break;
        case SW_TYPE_BF16:
            h = half_f32_to_bf16(f);
            memcpy(b, &h, 2);
            break;
        default:
            for (uint32_t i = 0; i < tr->block_bytes; i += 8) {
                uint64_t r = next(state);
                memcpy(b + i, &r, tr->block_bytes - i < 8 ? tr->block_bytes - i : 8);
            }
            set_scales(type, b, state);
            break;
        }
    }
}
