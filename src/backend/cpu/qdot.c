/*
 * qdot.c — the kernel sets of qdot.h: the portable reference (plain C over
 * quant_dequantize), the baseline-ISA instance of qdot_body.inc, and the
 * choice of set per CPU. The AVX2 instance lives in qdot_avx2.c. All sets
 * give the same bits, so the choice only changes speed.
 */
#include "backend/cpu/qdot.h"

#include <stdlib.h>
#include <string.h>

#include "quant/dequant.h"
#include "quant/types.h"

#if defined(__GNUC__) || defined(__clang__)
#define QDOT_HAVE_VECTOR 1
#define QDOT_TABLE_FN cpu_qkernel_table_generic
#include "backend/cpu/qdot_body.inc"
const cpu_qkernel *cpu_qkernel_table_generic(cpu_dot_f32_fn *dot_f32, cpu_tile_f32_fn *tile_f32);
#else
#define QDOT_HAVE_VECTOR 0
#endif

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#define QDOT_HAVE_AVX2 1
#include <cpuid.h>
const cpu_qkernel *cpu_qkernel_table_avx2(cpu_dot_f32_fn *dot_f32, cpu_tile_f32_fn *tile_f32);
const cpu_qkernel *cpu_qkernel_table_avx512(cpu_dot_f32_fn *dot_f32,
                                            cpu_tile_f32_fn *tile_f32);
#else
#define QDOT_HAVE_AVX2 0
#endif

/* ---- the reference set -------------------------------------------------- */

/* Elements per chunk: a multiple of every block size (1, 32, 256). */
enum { REF_CHUNK = 256 };

static void ref_accumulate(float acc[CPU_DOT_LANES], const float *w, const float *x,
                           uint64_t i0, uint64_t m) {
    for (uint64_t i = 0; i < m; i++)
        acc[(i0 + i) % CPU_DOT_LANES] += w[i] * x[i];
}

static float ref_reduce(const float a[CPU_DOT_LANES]) {
    float t[8], u[4];
    for (int j = 0; j < 8; j++)
        t[j] = a[j] + a[j + 8];
    for (int j = 0; j < 4; j++)
        u[j] = t[j] + t[j + 4];
    return (u[0] + u[2]) + (u[1] + u[3]);
}

/* n elements of `type`, dequantized a chunk at a time; the row was
 * validated by the caller, so quant_dequantize cannot fail here. */
static void ref_dot(uint32_t type, const uint8_t *row, const float *x, uint64_t xs,
                    uint32_t n_x, uint64_t n, float *out) {
    const type_traits *tr = type_get_traits(type);
    float w[REF_CHUNK];
    for (uint32_t t = 0; t < n_x; t++) {
        float acc[CPU_DOT_LANES] = {0};
        for (uint64_t i = 0; i < n; i += REF_CHUNK) {
            uint64_t m = n - i < REF_CHUNK ? n - i : REF_CHUNK;
            (void)quant_dequantize(type, row + i / tr->block_elems * tr->block_bytes, w, m);
            ref_accumulate(acc, w, x + (uint64_t)t * xs + i, i, m);
        }
        out[t] = ref_reduce(acc);
    }
}

static float ref_dot_plain(const float *a, const float *b, uint64_t n) {
    float acc[CPU_DOT_LANES] = {0};
    ref_accumulate(acc, a, b, 0, n);
    return ref_reduce(acc);
}

/* One canonical dot per (row, x): the definition, with no blocking. */
static void ref_tile(const float *w, uint64_t ws, uint32_t n_rows, const float *x, uint64_t xs,
                     uint32_t n_x, uint64_t n, float *y, uint64_t ys) {
    for (uint32_t t = 0; t < n_x; t++)
        for (uint32_t r = 0; r < n_rows; r++)
            y[(uint64_t)t * ys + r] =
                ref_dot_plain(w + (uint64_t)r * ws, x + (uint64_t)t * xs, n);
}

#define REF_TYPE(name, id)                                                          \
    static void ref_deq_##name(const uint8_t *src, float *dst, uint64_t n) {        \
        (void)quant_dequantize(id, src, dst, n);                                    \
    }                                                                               \
    static void ref_dot_##name(const uint8_t *row, const float *x, uint64_t xs,     \
                               uint32_t n_x, uint64_t n, float *out) {              \
        ref_dot(id, row, x, xs, n_x, n, out);                                       \
    }
REF_TYPE(f32, SW_TYPE_F32)
REF_TYPE(f16, SW_TYPE_F16)
REF_TYPE(bf16, SW_TYPE_BF16)
REF_TYPE(q4_0, SW_TYPE_Q4_0)
REF_TYPE(q4_1, SW_TYPE_Q4_1)
REF_TYPE(q5_0, SW_TYPE_Q5_0)
REF_TYPE(q5_1, SW_TYPE_Q5_1)
REF_TYPE(q8_0, SW_TYPE_Q8_0)
REF_TYPE(q2_k, SW_TYPE_Q2_K)
REF_TYPE(q3_k, SW_TYPE_Q3_K)
REF_TYPE(q4_k, SW_TYPE_Q4_K)
REF_TYPE(q5_k, SW_TYPE_Q5_K)
REF_TYPE(q6_k, SW_TYPE_Q6_K)
REF_TYPE(q8_k, SW_TYPE_Q8_K)

#define REF_ENTRY(id, name) [id] = {ref_deq_##name, ref_dot_##name, NULL}

static const cpu_qkernel ref_table[SW_TYPE_COUNT] = {
    REF_ENTRY(SW_TYPE_F32, f32),   REF_ENTRY(SW_TYPE_F16, f16),
    REF_ENTRY(SW_TYPE_BF16, bf16), REF_ENTRY(SW_TYPE_Q4_0, q4_0),
    REF_ENTRY(SW_TYPE_Q4_1, q4_1), REF_ENTRY(SW_TYPE_Q5_0, q5_0),
    REF_ENTRY(SW_TYPE_Q5_1, q5_1), REF_ENTRY(SW_TYPE_Q8_0, q8_0),
    REF_ENTRY(SW_TYPE_Q2_K, q2_k), REF_ENTRY(SW_TYPE_Q3_K, q3_k),
    REF_ENTRY(SW_TYPE_Q4_K, q4_k), REF_ENTRY(SW_TYPE_Q5_K, q5_k),
    REF_ENTRY(SW_TYPE_Q6_K, q6_k), REF_ENTRY(SW_TYPE_Q8_K, q8_k),
};

/* ---- choosing a set ----------------------------------------------------- */

#if QDOT_HAVE_AVX2
/* AVX2, FMA and F16C (CPUID.1:ECX bit 29; clang's __builtin_cpu_supports
 * knows no "f16c"): what every x86 set above GENERIC builds on (the
 * integer dots' canonical step is an FMA). Asked once: CPUID traps to the
 * hypervisor on virtual machines, and every matmul asks. */
static int qdot_avx2_ok(void) {
    static _Atomic int known = -1;
    int v = known;
    if (v < 0) {
        __builtin_cpu_init();
        unsigned a = 0, b = 0, c = 0, d = 0;
        const int f16c = __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29)) != 0;
        known = v = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c;
    }
    return v;
}
#endif

#if QDOT_HAVE_AVX2
/* AVX-VNNI (CPUID.(7,1):EAX bit 4; read directly, since older compilers'
 * __builtin_cpu_supports do not know it) on top of the AVX2 set; its
 * check already asked that the OS saves the YMM state. */
static int qdot_avxvnni_ok(void) {
    static _Atomic int known = -1;
    int v = known;
    if (v < 0) {
        unsigned a = 0, b = 0, c = 0, d = 0;
        const int vnni = __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 4)) != 0;
        known = v = qdot_avx2_ok() && vnni;
    }
    return v;
}

/* AVX-512 F/BW/VL/DQ with VNNI, on top of the AVX2 set. The compiler's
 * runtime sets these only when the OS saves the 512-bit state (XCR0).
 * AMX is never asked for. */
static int qdot_avx512_ok(void) {
    static _Atomic int known = -1;
    int v = known;
    if (v < 0)
        known = v = qdot_avx2_ok() && __builtin_cpu_supports("avx512f") &&
                    __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                    __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vnni");
    return v;
}
#endif

int cpu_isa_supported(cpu_isa isa) {
    switch (isa) {
    case CPU_ISA_REF: return 1;
    case CPU_ISA_GENERIC: return QDOT_HAVE_VECTOR;
    case CPU_ISA_AVX2:
#if QDOT_HAVE_AVX2
        return qdot_avx2_ok();
#else
        return 0;
#endif
    case CPU_ISA_AVXVNNI:
#if QDOT_HAVE_AVX2
        return qdot_avxvnni_ok();
#else
        return 0;
#endif
    case CPU_ISA_AVX512:
#if QDOT_HAVE_AVX2
        return qdot_avx512_ok();
#else
        return 0;
#endif
    }
    return 0;
}

const char *cpu_isa_name(cpu_isa isa) {
    static const char *const names[CPU_ISA_COUNT] = {"ref", "generic", "avx2", "avxvnni",
                                                        "avx512"};
    return (unsigned)isa < CPU_ISA_COUNT ? names[isa] : "?";
}

/* SPILLWAY_CPU_ISA as a cap; CPU_ISA_AVX512 (no cap) when unset or not a
 * set's name. Read once. */
static cpu_isa isa_cap(void) {
    static _Atomic int known = -1;
    int v = known;
    if (v < 0) {
        const char *env = getenv("SPILLWAY_CPU_ISA");
        v = CPU_ISA_AVX512;
        for (int i = 0; env != NULL && i < CPU_ISA_COUNT; i++)
            if (strcmp(env, cpu_isa_name((cpu_isa)i)) == 0)
                v = i;
        known = v;
    }
    return (cpu_isa)v;
}

cpu_isa cpu_isa_best(void) {
    const cpu_isa cap = isa_cap();
    for (int i = CPU_ISA_AVX512; i > CPU_ISA_REF; i--)
        if (i <= (int)cap && cpu_isa_supported((cpu_isa)i))
            return (cpu_isa)i;
    return CPU_ISA_REF;
}

static const cpu_qkernel *qdot_table(cpu_isa isa, cpu_dot_f32_fn *dot_f32,
                                     cpu_tile_f32_fn *tile_f32) {
#if QDOT_HAVE_AVX2
    if (isa >= CPU_ISA_AVX512 && cpu_isa_supported(CPU_ISA_AVX512))
        return cpu_qkernel_table_avx512(dot_f32, tile_f32);
    if (isa >= CPU_ISA_AVX2 && cpu_isa_supported(CPU_ISA_AVX2))
        return cpu_qkernel_table_avx2(dot_f32, tile_f32);
#endif
#if QDOT_HAVE_VECTOR
    if (isa != CPU_ISA_REF)
        return cpu_qkernel_table_generic(dot_f32, tile_f32);
#endif
    (void)isa;
    *dot_f32 = ref_dot_plain;
    *tile_f32 = ref_tile;
    return ref_table;
}

const cpu_qkernel *cpu_qkernel_get(cpu_isa isa, uint32_t type) {
    cpu_dot_f32_fn unused_dot;
    cpu_tile_f32_fn unused_tile;
    if (type >= SW_TYPE_COUNT)
        return NULL;
    const cpu_qkernel *k = &qdot_table(isa, &unused_dot, &unused_tile)[type];
    return k->dot != NULL ? k : NULL;
}

cpu_dot_f32_fn cpu_dot_f32_get(cpu_isa isa) {
    cpu_dot_f32_fn f;
    cpu_tile_f32_fn unused;
    qdot_table(isa, &f, &unused);
    return f;
}

cpu_tile_f32_fn cpu_tile_f32_get(cpu_isa isa) {
    cpu_dot_f32_fn unused;
    cpu_tile_f32_fn f;
    qdot_table(isa, &unused, &f);
    return f;
}
