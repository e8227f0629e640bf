/*
 * test_quant.c — quant/dequant.c and quant/half.h against the gguf Python
 * package, bit for bit.
 *
 * tests/data/quant_golden.bin (tools/golden/make_quant_golden.py) holds
 * random blocks of every supported type with gguf's f32 output, all 65536
 * F16 and BF16 values, and f32 -> f16/bf16 conversions from numpy/gguf.
 * Every output must be bit-equal, NaN payloads included; the first
 * mismatch of a record is printed. Sources are deliberately misaligned.
 * Also checks the error paths (unsupported type, partial block).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "quant/dequant.h"
#include "quant/half.h"
#include "quant/types.h"

typedef struct reader {
    const uint8_t *p, *end;
    int bad; /* set once a read ran past the end */
} reader;

static const uint8_t *take(reader *r, uint64_t n) {
    if (r->bad || n > (uint64_t)(r->end - r->p)) {
        r->bad = 1;
        return NULL;
    }
    const uint8_t *at = r->p;
    r->p += n;
    return at;
}

static uint32_t get_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t read_u32(reader *r) {
    const uint8_t *p = take(r, 4);
    return p ? get_u32(p) : 0;
}

static uint64_t read_u64(reader *r) {
    const uint8_t *p = take(r, 8);
    return p ? (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32 : 0;
}

static uint8_t *read_file(const char *path, size_t *out_n) {
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    long n;
    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
        fseek(f, 0, SEEK_SET) != 0)
        goto fail;
    buf = malloc((size_t)n + 1);
    if (buf == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n)
        goto fail;
    fclose(f);
    *out_n = (size_t)n;
    return buf;
fail:
    free(buf);
    if (f)
        fclose(f);
    return NULL;
}

/* One dequantize record: run on a misaligned copy of src, compare bits. */
static void check_dequant(uint32_t type, uint64_t n, const uint8_t *src, uint64_t src_bytes,
                          const uint8_t *want, unsigned *seen) {
    uint64_t row_bytes = 0;
    SW_CHECK(type_row_bytes(type, n, &row_bytes) && row_bytes == src_bytes,
             "type %u: %" PRIu64 " src bytes for %" PRIu64 " elements", type, src_bytes, n);
    if (row_bytes != src_bytes)
        return;
    uint8_t *copy = malloc(src_bytes + 1);
    float *got = malloc(n * sizeof *got);
    if (copy == NULL || got == NULL) {
        SW_CHECK(0, "out of memory");
        goto done;
    }
    memcpy(copy + 1, src, src_bytes); /* odd address: no alignment assumed */
    SW_CHECK_OK(quant_dequantize(type, copy + 1, got, n));
    uint64_t bad = 0, first = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (half_f32_to_bits(got[i]) != get_u32(want + 4 * i) && bad++ == 0)
            first = i;
    }
    SW_CHECK(bad == 0,
             "%s: %" PRIu64 " of %" PRIu64 " differ; first [%" PRIu64 "] got %.9g (0x%08" PRIx32
             ") want %.9g (0x%08" PRIx32 ")",
             type_name(type), bad, n, first, (double)got[first], half_f32_to_bits(got[first]),
             (double)half_bits_to_f32(get_u32(want + 4 * first)), get_u32(want + 4 * first));
    if (bad == 0 && type < SW_TYPE_COUNT)
        seen[type]++;
done:
    free(copy);
    free(got);
}

/* One conversion record (kind 1: f32 -> f16, kind 2: f32 -> bf16). */
static void check_convert(uint32_t kind, uint64_t n, const uint8_t *src, const uint8_t *want) {
    uint64_t bad = 0, first = 0;
    uint16_t got_first = 0;
    for (uint64_t i = 0; i < n; i++) {
        float x = half_bits_to_f32(get_u32(src + 4 * i));
        uint16_t got = kind == 1 ? half_f32_to_f16(x) : half_f32_to_bf16(x);
        uint16_t exp = (uint16_t)(want[2 * i] | want[2 * i + 1] << 8);
        if (got != exp && bad++ == 0) {
            first = i;
            got_first = got;
        }
    }
    SW_CHECK(bad == 0, "f32 -> %s: %" PRIu64 " of %" PRIu64 " differ; first 0x%08" PRIx32
             " got 0x%04x want 0x%04x", kind == 1 ? "f16" : "bf16", bad, n,
             bad ? get_u32(src + 4 * first) : 0, (unsigned)got_first,
             bad ? (unsigned)(want[2 * first] | want[2 * first + 1] << 8) : 0u);
}

static int parse_record(reader *r, unsigned *seen, unsigned *n_convert) {
    uint32_t kind = (uint32_t)read_u32(r), type = (uint32_t)read_u32(r);
    uint64_t n = read_u64(r), src_bytes = read_u64(r);
    const uint8_t *src = take(r, src_bytes);
    uint64_t dst_bytes = read_u64(r);
    const uint8_t *dst = take(r, dst_bytes);
    if (r->bad)
        return 0;
    if (kind == 0 && dst_bytes == 4 * n) {
        check_dequant(type, n, src, src_bytes, dst, seen);
    } else if ((kind == 1 || kind == 2) && src_bytes == 4 * n && dst_bytes == 2 * n) {
        check_convert(kind, n, src, dst);
        (*n_convert)++;
    } else {
        SW_CHECK(0, "golden record kind %u type %u has inconsistent sizes", kind, type);
    }
    return 1;
}

static void test_golden(void) {
    const char *path = sw_test_data("quant_golden.bin");
    size_t size = 0;
    uint8_t *buf = read_file(path, &size);
    SW_CHECK(buf != NULL, "cannot read %s (regenerate: tools/golden/make_quant_golden.py)", path);
    if (buf == NULL)
        return;
    reader r = {buf, buf + size, 0};
    const uint8_t *magic = take(&r, 4);
    uint32_t ver = (uint32_t)read_u32(&r), text_len = (uint32_t)read_u32(&r);
    const uint8_t *text = take(&r, text_len);
    uint32_t n_rec = (uint32_t)read_u32(&r);
    SW_CHECK(!r.bad && memcmp(magic, "SWQG", 4) == 0 && ver == 1, "%s: bad header", path);
    if (!r.bad)
        printf("golden: %.*s\n", (int)text_len, (const char *)text);
    unsigned seen[SW_TYPE_COUNT] = {0}, n_convert = 0;
    for (uint32_t i = 0; i < n_rec && !r.bad; i++)
        SW_CHECK(parse_record(&r, seen, &n_convert), "%s: record %u truncated", path, i);
    SW_CHECK(!r.bad && r.p == r.end, "%s: trailing or missing bytes", path);
    for (uint32_t t = 0; t < SW_TYPE_COUNT; t++) {
        const type_traits *tr = type_get_traits(t);
        if (tr != NULL && tr->dequant_supported)
            SW_CHECK(seen[t] == 1, "type %s: %u passing golden records, want 1", tr->name,
                     seen[t]);
    }
    SW_CHECK(n_convert == 2, "%u conversion records, want 2", n_convert);
    free(buf);
}

/* Known answers that do not depend on the golden file. */
static void test_known_answers(void) {
    uint8_t q8[34] = {0x00, 0x3c}; /* d = 1.0 */
    float y[32];
    for (int j = 0; j < 32; j++)
        q8[2 + j] = (uint8_t)(j * 9 - 128);
    SW_CHECK_OK(quant_dequantize(SW_TYPE_Q8_0, q8, y, 32));
    SW_CHECK(y[0] == -128.0f && y[31] == 151.0f - 256.0f, "Q8_0: %g %g", (double)y[0],
             (double)y[31]);
    uint8_t q4[18] = {0x00, 0xc0}; /* d = -2.0 */
    q4[2] = 0xf0;                  /* element 0: 0 - 8, element 16: 15 - 8 */
    SW_CHECK_OK(quant_dequantize(SW_TYPE_Q4_0, q4, y, 32));
    SW_CHECK(y[0] == 16.0f && y[16] == -14.0f && y[1] == 16.0f, "Q4_0: %g %g %g",
             (double)y[0], (double)y[16], (double)y[1]);
    SW_CHECK(half_f32_to_bits(half_f16_to_f32(0x7c01)) == 0x7f802000u, "f16 sNaN payload");
    SW_CHECK(half_f32_to_bits(half_f16_to_f32(0x0001)) == 0x33800000u, "f16 min subnormal");
    SW_CHECK(half_f32_to_bits(half_f16_to_f32(0x8000)) == 0x80000000u, "f16 -0");
}

/* Every non-NaN f16 survives f16 -> f32 -> f16. */
static void test_half_round_trip(void) {
    unsigned bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0)
            continue;
        if (half_f32_to_f16(half_f16_to_f32((uint16_t)h)) != h)
            bad++;
    }
    SW_CHECK(bad == 0, "%u f16 values do not round-trip", bad);
}

static void test_errors(void) {
    float y[256];
    uint8_t blk[292] = {0};
    SW_CHECK(quant_dequantize(16, blk, y, 256) == SW_ERR_UNSUPPORTED, "IQ2_XXS supported?");
    SW_CHECK(strcmp(sw_last_error(), "unsupported tensor type 16 (IQ2_XXS)") == 0, "msg: %s",
             sw_last_error());
    SW_CHECK(quant_dequantize(4, blk, y, 32) == SW_ERR_UNSUPPORTED, "retired id 4");
    SW_CHECK(strcmp(sw_last_error(), "unsupported tensor type 4 (unknown)") == 0, "msg: %s",
             sw_last_error());
    SW_CHECK(quant_dequantize(1000, blk, y, 1) == SW_ERR_UNSUPPORTED, "id 1000");
    SW_CHECK(quant_dequantize(SW_TYPE_Q4_K, blk, y, 100) == SW_ERR_ARG, "Q4_K of 100");
    SW_CHECK(strstr(sw_last_error(), "100 elements of type Q4_K") != NULL, "msg: %s",
             sw_last_error());
    SW_CHECK(quant_dequantize(SW_TYPE_Q8_0, blk, y, 33) == SW_ERR_ARG, "Q8_0 of 33");
    SW_CHECK_OK(quant_dequantize(SW_TYPE_Q8_0, NULL, NULL, 0));
    SW_CHECK(quant_dequantize(SW_TYPE_F32, NULL, y, 4) == SW_ERR_ARG, "NULL src");
}

int main(void) {
    test_golden();
    test_known_answers();
    test_half_round_trip();
    test_errors();
    return sw_check_finish("test_quant");
}
