/*
 * bdot.c — bdot.h's canonical bf16 dot written out in plain C (every CPU
 * can run it, slowly: one f32 fma per element and a flush test per step),
 * the rounding of activations to bf16, and the choice of kernels.
 */
#include "backend/cpu/bdot.h"

#include <float.h>
#include <math.h>
#include <string.h>

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#define BDOT_HAVE_AVX512 1
#include <cpuid.h>
const cpu_bdot *cpu_bdot_avx512(void);
#else
#define BDOT_HAVE_AVX512 0
#endif

enum { LANES = 16 };

static float bf16_in(uint16_t h) {
    if ((h & 0x7f80u) == 0) /* zero or subnormal: taken as zero */
        h &= 0x8000u;
    const uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static float flush(float v) { return fabsf(v) < FLT_MIN ? copysignf(0.0f, v) : v; }

static uint16_t load_bf16(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return h;
}

static float ref_dot(const uint8_t *w, const uint16_t *x, uint64_t n) {
    float acc[LANES] = {0};
    for (uint64_t k = 0; k < n / 32; k++)
        for (int l = 0; l < LANES; l++) {
            const uint64_t e = 32 * k + 2 * (uint64_t)l;
            acc[l] = flush(fmaf(bf16_in(load_bf16(w + 2 * (e + 1))), bf16_in(x[e + 1]), acc[l]));
            acc[l] = flush(fmaf(bf16_in(load_bf16(w + 2 * e)), bf16_in(x[e]), acc[l]));
        }
    float u[8], t[4];
    for (int j = 0; j < 8; j++)
        u[j] = acc[j] + acc[j + 8];
    for (int j = 0; j < 4; j++)
        t[j] = u[j] + u[j + 4];
    return (t[0] + t[2]) + (t[1] + t[3]);
}

static void ref_rows(const uint8_t *rows, uint64_t row_bytes, uint64_t n_rows, const uint16_t *x,
                     uint64_t n, float *out) {
    for (uint64_t r = 0; r < n_rows; r++)
        out[r] = ref_dot(rows + r * row_bytes, x, n);
}

static void ref_tile(const uint8_t *rows, uint64_t row_bytes, uint32_t n_rows, const uint16_t *x,
                     uint64_t x_stride, uint32_t n_x, uint64_t n, float *y, uint64_t y_stride) {
    for (uint32_t t = 0; t < n_x; t++)
        ref_rows(rows, row_bytes, n_rows, x + t * x_stride, n, y + t * y_stride);
}

static const cpu_bdot ref_kernels = {.rows = ref_rows, .tile = ref_tile};

void cpu_bf16_round(const float *x, uint64_t n, uint16_t *out) {
    for (uint64_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &x[i], sizeof u);
        if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep its top bits, quiet */
            out[i] = (uint16_t)(u >> 16 | 0x40u);
        else if ((u & 0x7f800000u) == 0)
            out[i] = (uint16_t)(u >> 16 & 0x8000u);
        else
            out[i] = (uint16_t)((u + 0x7fffu + (u >> 16 & 1u)) >> 16);
    }
}

/* CPUID.(7,1):EAX bit 5 is AVX512_BF16 (read directly: older compilers'
 * __builtin_cpu_supports do not know it); the AVX512 set's check covers
 * the rest and the OS's 512-bit state. Asked once. */
bool cpu_bdot_native(void) {
#if BDOT_HAVE_AVX512
    static _Atomic int known = -1;
    int v = known;
    if (v < 0) {
        unsigned a = 0, b = 0, c = 0, d = 0;
        const int bf16 = __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 5)) != 0;
        known = v = bf16 && cpu_isa_supported(CPU_ISA_AVX512);
    }
    return v != 0;
#else
    return false;
#endif
}

const cpu_bdot *cpu_bdot_get(cpu_isa isa) {
#if BDOT_HAVE_AVX512
    if (isa >= CPU_ISA_AVX512 && cpu_bdot_native())
        return cpu_bdot_avx512();
#endif
    (void)isa;
    return &ref_kernels;
}
