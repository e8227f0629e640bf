/*
 * test_quantize.c — quant/quantize.c against the gguf Python package, byte
 * for byte, and the Q4_K and Q6_K quantizers' round trips.
 *
 * tests/data/quantize_golden.bin (tools/golden/make_quantize_golden.py)
 * holds f32 rows — random magnitudes 1e-6..1e4, zeros, Q8_0 rounding ties,
 * signed zeros, f16 overflow and subnormals, and for F16/BF16 inf and NaN —
 * with the bytes gguf.quants.quantize makes of them as F16, BF16 and Q8_0,
 * the types --weights converts to. quant_quantize must match exactly; so
 * must quant_convert_rows from the same f32 rows (and from F16/BF16 rows
 * back to the same type: widening then rounding is the identity).
 *
 * Q4_K (quantize_k.c, a plain min/max quantizer used for synthetic models)
 * has no reference bytes to match; instead every value must come back
 * within half a quantization step (d * scale of its 32-value sub-block) of
 * the input. That holds when the block's scales are f16 normals (block
 * magnitudes above ~1e-3) and the sub-block spans at least half a step of
 * the block's largest scale; a narrower sub-block gets scale 0 and decodes
 * to its offset, within its own range plus half dmin, which is checked too.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "quant/dequant.h"
#include "quant/half.h"
#include "quant/quantize.h"
#include "quant/types.h"

static uint32_t get_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_u64(const uint8_t *p) {
    return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32;
}

static uint8_t *read_file(const char *path, size_t *n_out) {
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    long n;
    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
        fseek(f, 0, SEEK_SET) != 0 || (buf = malloc((size_t)n + 1)) == NULL ||
        fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    } else {
        *n_out = (size_t)n;
    }
    if (f)
        fclose(f);
    return buf;
}

/* Index of the first differing byte, or -1. */
static int64_t first_diff(const uint8_t *a, const uint8_t *b, uint64_t n) {
    for (uint64_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return (int64_t)i;
    return -1;
}

static void check_record(uint32_t type, uint64_t n, const float *src, const uint8_t *want,
                         uint64_t want_bytes) {
    uint64_t bytes = 0;
    SW_CHECK(type_row_bytes(type, n, &bytes) && bytes == want_bytes,
             "%s: %" PRIu64 " golden bytes for %" PRIu64 " values", type_name(type), want_bytes,
             n);
    if (bytes != want_bytes)
        return;
    uint8_t *got = malloc(bytes), *back = malloc(bytes);
    float *row = malloc(256 * sizeof *row);
    SW_CHECK_OK(quant_quantize(type, src, got, n));
    int64_t d = first_diff(got, want, bytes);
    SW_CHECK(d < 0, "%s: byte %" PRId64 " is 0x%02x, gguf wrote 0x%02x (input value %" PRId64
             " ~ %.9g)", type_name(type), d, d < 0 ? 0 : got[d], d < 0 ? 0 : want[d],
             d < 0 ? 0 : (type == SW_TYPE_Q8_0 ? d / 34 * 32 : d / 2),
             d < 0 ? 0.0 : (double)src[type == SW_TYPE_Q8_0 ? d / 34 * 32 : d / 2]);
    /* The load-time converter gives the same bytes from f32 rows of 256. */
    SW_CHECK_OK(quant_convert_rows(SW_TYPE_F32, src, type, back, n / 256, 256, row));
    SW_CHECK(!memcmp(back, want, bytes), "%s: quant_convert_rows differs from gguf",
             type_name(type));
    if (type == SW_TYPE_F16 || type == SW_TYPE_BF16) {
        /* Widening is exact, so converting a 16-bit row to itself is a copy
         * (NaN payloads aside: none of gguf's outputs is a signalling NaN). */
        SW_CHECK_OK(quant_convert_rows(type, want, type, back, n / 256, 256, row));
        SW_CHECK(!memcmp(back, want, bytes), "%s -> %s is not the identity", type_name(type),
                 type_name(type));
    }
    printf("  %-5s %6" PRIu64 " values, %7" PRIu64 " bytes: %s\n", type_name(type), n, bytes,
           d < 0 ? "byte-exact" : "DIFFERENT");
    free(got);
    free(back);
    free(row);
}

static void test_golden(void) {
    size_t size = 0;
    uint8_t *buf = read_file(sw_test_data("quantize_golden.bin"), &size);
    SW_CHECK(buf != NULL, "cannot read %s (tools/golden/make_quantize_golden.py writes it)",
             sw_test_data("quantize_golden.bin"));
    if (buf == NULL)
        return;
    const uint8_t *p = buf, *end = buf + size;
    SW_CHECK(size >= 12 && !memcmp(p, "SWQZ", 4) && get_u32(p + 4) == 1, "bad golden header");
    uint32_t text_len = get_u32(p + 8);
    p += 12;
    printf("golden: %.*s\n", (int)text_len, (const char *)p);
    p += text_len;
    uint32_t n_rec = get_u32(p);
    p += 4;
    unsigned seen = 0;
    for (uint32_t i = 0; i < n_rec && end - p >= 12; i++) {
        uint32_t type = get_u32(p);
        uint64_t n = get_u64(p + 4);
        p += 12;
        if ((uint64_t)(end - p) < 4 * n + 8)
            break;
        float *src = malloc(n * sizeof *src); /* aligned copy of the f32 input */
        memcpy(src, p, n * sizeof *src);
        p += 4 * n;
        uint64_t dst_bytes = get_u64(p);
        p += 8;
        if ((uint64_t)(end - p) < dst_bytes) {
            free(src);
            break;
        }
        check_record(type, n, src, p, dst_bytes);
        p += dst_bytes;
        seen++;
        free(src);
    }
    SW_CHECK(seen == n_rec && seen == 3, "read %u of %u golden records", seen, n_rec);
    free(buf);
}

/* The --weights rule: which matrices change, and to what. */
static void test_convert_type(void) {
    SW_CHECK(quant_convert_type(SW_TYPE_F32, 64, SW_TYPE_Q8_0) == SW_TYPE_Q8_0, "f32 -> q8_0");
    SW_CHECK(quant_convert_type(SW_TYPE_F32, 40, SW_TYPE_Q8_0) == SW_TYPE_F16,
             "f32 rows of 40 -> f16 (q8_0 needs blocks of 32)");
    SW_CHECK(quant_convert_type(SW_TYPE_BF16, 40, SW_TYPE_Q8_0) == SW_TYPE_BF16,
             "bf16 rows of 40 are kept");
    SW_CHECK(quant_convert_type(SW_TYPE_BF16, 64, SW_TYPE_F16) == SW_TYPE_F16, "bf16 -> f16");
    SW_CHECK(quant_convert_type(SW_TYPE_Q4_K, 256, SW_TYPE_Q8_0) == SW_TYPE_Q4_K,
             "quantized sources are kept");
    SW_CHECK(quant_convert_type(SW_TYPE_F16, 64, SW_TYPE_F16) == SW_TYPE_F16, "same type");
}

/* Sub-block j's 6-bit scale and min (ggml's get_scale_min_k4). */
static void scale_min(const uint8_t *s, int j, int *sc, int *m) {
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
        *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

/* Worst |x - y| / (half a step) over one quantized block; degenerate
 * (scale 0) sub-blocks count in *n_flat, and *flat_over gets their worst
 * error beyond their own bound (range + dmin/2). */
static double q4k_block(const float *x, int *n_flat, double *flat_over) {
    uint8_t q[144];
    float y[256];
    quantize_q4_k(x, q, 1);
    SW_CHECK_OK(quant_dequantize(SW_TYPE_Q4_K, q, y, 256));
    float d = half_load_f16(q), dmin = half_load_f16(q + 2);
    double worst = 0;
    for (int j = 0; j < 8; j++) {
        int sc, m;
        scale_min(q + 4, j, &sc, &m);
        float lo = 0, hi = x[32 * j], step = d * (float)sc;
        for (int l = 0; l < 32; l++) {
            lo = fminf(lo, x[32 * j + l]);
            hi = fmaxf(hi, x[32 * j + l]);
        }
        for (int l = 0; l < 32; l++) {
            double err = fabs((double)x[32 * j + l] - y[32 * j + l]);
            if (sc == 0) {
                *flat_over = fmax(*flat_over, err - ((double)(hi - lo) + 0.5 * dmin +
                                                     1e-6 * fabs(lo)));
                continue;
            }
            worst = fmax(worst, err / (0.5 * step));
        }
        *n_flat += sc == 0;
    }
    return worst;
}

/* Block b of 256 test values: normal-ish at 1e-2..1e2; every 4th block
 * one-signed, every 5th with alternate sub-blocks of `sub` 1000x narrower
 * (flat). */
static void test_block(uint64_t *rng, int b, int sub, float x[256]) {
    const float mag = powf(10.0f, sw_test_rng_float(rng, -2.0f, 2.0f));
    for (int i = 0; i < 256; i++) {
        float v = sw_test_rng_float(rng, -1.0f, 1.0f) * mag;
        if (b % 4 == 1)
            v = fabsf(v);
        else if (b % 4 == 2)
            v = -fabsf(v);
        if (b % 5 == 3 && (i / sub) % 2)
            v *= 1e-3f;
        x[i] = v;
    }
}

static void test_q4_k_round_trip(void) {
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    float x[256];
    double worst = 0, flat_over = -1;
    int n_flat = 0;
    for (int b = 0; b < 4000; b++) {
        test_block(&rng, b, 32, x);
        worst = fmax(worst, q4k_block(x, &n_flat, &flat_over));
    }
    SW_CHECK(flat_over <= 0, "Q4_K: a flat sub-block decodes %g beyond its range", flat_over);
    /* 1e-5: the step and the reconstruction are themselves f32 products. */
    SW_CHECK(worst <= 1.0 + 1e-5, "Q4_K: a value is %.6f half-steps from its input", worst);
    printf("  Q4_K round trip: worst error %.6f half-steps over 4000 blocks (%d flat "
           "sub-blocks within their range)\n", worst, n_flat);
}

/* Q6_K (quantize_k.c, max-abs per sub-block of 16): each value within
 * half its sub-block's step of its input (plus the f32 products' own
 * rounding), over blocks of many magnitudes, one-signed, and with flat
 * sub-blocks next to wide ones; the block's bytes decode by dequant_k.c. */
static void test_q6_k_round_trip(void) {
    uint64_t rng = 0x2545f4914f6cdd1dull;
    float x[256], y[256];
    uint8_t q[210];
    double worst = 0;
    for (int b = 0; b < 4000; b++) {
        test_block(&rng, b, 16, x);
        quantize_q6_k(x, q, 1);
        SW_CHECK_OK(quant_dequantize(SW_TYPE_Q6_K, q, y, 256));
        const float d = half_load_f16(q + 208);
        for (int i = 0; i < 256; i++) {
            const double step = (double)d * (int8_t)q[192 + i / 16];
            const double err = fabs((double)x[i] - y[i]);
            worst = fmax(worst, step > 0 ? err / (0.5 * step) : (err > 0 ? INFINITY : 0));
        }
    }
    SW_CHECK(worst <= 1.0 + 1e-5, "Q6_K: a value is %.6f half-steps from its input", worst);
    uint8_t z[210];
    float zero[256] = {0}, back[256];
    quantize_q6_k(zero, z, 1);
    SW_CHECK_OK(quant_dequantize(SW_TYPE_Q6_K, z, back, 256));
    bool all_zero = true;
    for (int i = 0; i < 256; i++)
        all_zero = all_zero && back[i] == 0.0f;
    SW_CHECK(all_zero, "Q6_K: zeros do not decode to zeros");
    SW_CHECK(quant_quantize(SW_TYPE_Q6_K, x, q, 100) == SW_ERR_ARG, "Q6_K of 100 values");
    printf("  Q6_K round trip: worst error %.6f half-steps over 4000 blocks\n", worst);
}

int main(void) {
    test_golden();
    test_convert_type();
    test_q4_k_round_trip();
    test_q6_k_round_trip();
    return sw_check_finish("test_quantize");
}
