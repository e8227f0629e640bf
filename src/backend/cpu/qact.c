/*
 * qact.c — 8-bit block quantization of activations (qact.h): the
 * definition in plain C, and the choice of the AVX-512 rows
 * (qact_avx512.c, the same bits) where the CPU runs them.
 */
#include "backend/cpu/qact.h"

#include <math.h>
#include <string.h>

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#define QACT_HAVE_AVX512 1
void cpu_qact_row_avx512(cpu_qact_fmt fmt, const float *x, uint64_t n, uint8_t *dst);
#else
#define QACT_HAVE_AVX512 0
#endif

uint64_t cpu_qact_stride(cpu_qact_fmt fmt, uint64_t n) {
    const uint64_t b = n + 4 * (n / (uint64_t)fmt) + 2 * (n / 16);
    return (b + 63) / 64 * 64;
}

/* One block of m elements: its scale, and q. A block with a NaN or an
 * infinity gets q = 0 and a NaN scale, so the dot comes out NaN as the
 * f32 one would (and no out-of-range value is ever converted to int8). */
static float qact_block(const float *x, uint32_t m, int8_t *q) {
    float amax = 0.0f;
    int finite = 1;
    for (uint32_t i = 0; i < m; i++) {
        const float a = fabsf(x[i]);
        finite &= isfinite(a) ? 1 : 0;
        amax = a > amax ? a : amax;
    }
    if (!finite || amax == 0.0f) {
        memset(q, 0, m);
        return finite ? 0.0f : NAN;
    }
    const float id = 127.0f / amax;
    if (!isfinite(id)) { /* a block of subnormals: below any weight's reach */
        memset(q, 0, m);
        return 0.0f;
    }
    /* Round to nearest even as nearbyintf does, by adding and removing
     * 1.5 * 2^23 (exact for |v| <= 127.5 in the default rounding mode):
     * plain arithmetic the compiler vectorizes, where nearbyintf is a
     * library call on baseline x86-64. */
    const float magic = 12582912.0f;
    for (uint32_t i = 0; i < m; i++) {
        const float v = x[i] * id;
        q[i] = (int8_t)(int)((v + magic) - magic);
    }
    return amax / 127.0f;
}

/* One row in plain C. */
static void qact_row(cpu_qact_fmt fmt, const float *x, uint64_t n, uint8_t *dst) {
    const uint64_t nb = n / (uint64_t)fmt;
    int8_t *q = (int8_t *)dst;
    float *d = (float *)(void *)(dst + n);
    for (uint64_t b = 0; b < nb; b++)
        d[b] = qact_block(x + b * (uint64_t)fmt, (uint32_t)fmt, q + b * (uint64_t)fmt);
    int16_t *bs = (int16_t *)(void *)(dst + n + 4 * nb);
    for (uint64_t g = 0; g < n / 16; g++) {
        int s = 0;
        for (int i = 0; i < 16; i++)
            s += q[16 * g + (uint64_t)i];
        bs[g] = (int16_t)s;
    }
}

void cpu_qact_quantize_isa(cpu_isa isa, cpu_qact_fmt fmt, const float *x, uint64_t n,
                           uint32_t n_rows, uint8_t *dst) {
    const uint64_t stride = cpu_qact_stride(fmt, n);
#if QACT_HAVE_AVX512
    if (isa >= CPU_ISA_AVX512 && cpu_isa_supported(CPU_ISA_AVX512)) {
        for (uint32_t r = 0; r < n_rows; r++, x += n, dst += stride)
            cpu_qact_row_avx512(fmt, x, n, dst);
        return;
    }
#endif
    (void)isa;
    for (uint32_t r = 0; r < n_rows; r++, x += n, dst += stride)
        qact_row(fmt, x, n, dst);
}

void cpu_qact_quantize(cpu_qact_fmt fmt, const float *x, uint64_t n, uint32_t n_rows,
                       uint8_t *dst) {
    cpu_qact_quantize_isa(cpu_isa_best(), fmt, x, n, n_rows, dst);
}
