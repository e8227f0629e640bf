/*
 * vmath.c — vmath.h's scalar definition (cpu_tanhf and the REF set built
 * on it), the baseline instance of vmath_body.inc, and the choice of set.
 * The AVX2 and AVX-512 instances live in vmath_avx2.c and vmath_avx512.c;
 * all give the same bits.
 */
#include "backend/cpu/vmath.h"

#include <string.h>

#include "backend/vmath_consts.h"

#if defined(__GNUC__) || defined(__clang__)
#define VMATH_HAVE_VECTOR 1
#define VMATH_TABLE_FN cpu_vmath_table_generic
#include "backend/cpu/vmath_body.inc"
#else
#define VMATH_HAVE_VECTOR 0
#endif

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#define VMATH_HAVE_AVX2 1
const cpu_vmath *cpu_vmath_table_avx2(void);
const cpu_vmath *cpu_vmath_table_avx512(void);
#else
#define VMATH_HAVE_AVX2 0
#endif

static uint32_t vs_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static float vs_float(uint32_t u) {
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* exp(z) for z in [0, 20]; the integer part travels in t's bits, so no
 * float-to-int conversion (undefined for NaN) is needed. */
static float vs_exp(float z) {
    const float t = z * VM_LOG2E + VM_MAGIC;
    const float nf = t - VM_MAGIC;
    float r = z - nf * VM_LN2_HI;
    r = r - nf * VM_LN2_LO;
    float p = VM_E6;
    p = p * r + VM_E5;
    p = p * r + VM_E4;
    p = p * r + VM_E3;
    p = p * r + VM_E2;
    p = p * r + VM_E1;
    p = p * r + VM_E0;
    return p * vs_float((vs_bits(t) - VM_MAGIC_BITS + 127u) << 23);
}

float cpu_tanhf(float y) {
    const uint32_t sign = vs_bits(y) & VM_SIGN_BIT;
    const float a = vs_float(vs_bits(y) & ~VM_SIGN_BIT);
    if (a < VM_TANH_SMALL) {
        const float u = y * y;
        float p = VM_P5;
        p = p * u + VM_P4;
        p = p * u + VM_P3;
        p = p * u + VM_P2;
        p = p * u + VM_P1;
        p = p * u + VM_P0;
        /* the sign again: y + y*(u*p) is +0 for y = -0 */
        return vs_float(vs_bits(y + y * (u * p)) | sign);
    }
    const float ac = a > VM_TANH_CLAMP ? VM_TANH_CLAMP : a; /* NaN stays */
    const float e = vs_exp(ac + ac);
    return vs_float(vs_bits(1.0f - 2.0f / (e + 1.0f)) | sign);
}

static float vs_geglu(float g, float up) {
    const float cube = g * g * g;
    const float inner = VM_GELU_BETA * (g + VM_GELU_KAPPA * cube);
    return 0.5f * g * (1.0f + cpu_tanhf(inner)) * up;
}

static void ref_tanh(const float *x, float *y, uint64_t n) {
    for (uint64_t i = 0; i < n; i++)
        y[i] = cpu_tanhf(x[i]);
}

static void ref_geglu(const float *gate, const float *up, float *out, uint64_t n) {
    for (uint64_t i = 0; i < n; i++)
        out[i] = vs_geglu(gate[i], up[i]);
}

static void ref_softcap(float *x, uint64_t n, float cap) {
    for (uint64_t i = 0; i < n; i++)
        x[i] = cpu_tanhf(x[i] / cap) * cap;
}

static void ref_wsum(const float *v, uint64_t stride, const float *w, uint64_t n_rows, float *o,
                     uint64_t n) {
    for (uint64_t i = 0; i < n_rows; i++)
        for (uint64_t d = 0; d < n; d++)
            o[d] = o[d] + w[i] * v[i * stride + d];
}

static const cpu_vmath ref_set = {ref_tanh, ref_geglu, ref_softcap, ref_wsum};

const cpu_vmath *cpu_vmath_get(cpu_isa isa) {
#if VMATH_HAVE_AVX2
    if (isa >= CPU_ISA_AVX512 && cpu_isa_supported(CPU_ISA_AVX512))
        return cpu_vmath_table_avx512();
    if (isa >= CPU_ISA_AVX2 && cpu_isa_supported(CPU_ISA_AVX2))
        return cpu_vmath_table_avx2();
#endif
#if VMATH_HAVE_VECTOR
    if (isa != CPU_ISA_REF)
        return cpu_vmath_table_generic();
#endif
    (void)isa;
    return &ref_set;
}
