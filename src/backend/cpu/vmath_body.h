/*
 * vmath_body.h — the vector instance of vmath.h, written once with GNU
 * vector extensions and compiled for the baseline ISA (vmath.c)
 * and for AVX2 (vmath_avx2.c) and AVX-512 (vmath_avx512.c). Every lane performs the operations of
 * cpu_tanhf in the same order, so both instances give its bits. Tails
 * run through the same vector code on a zero-padded copy.
 *
 * The includer defines VMATH_TABLE_FN, the name of the table function.
 */
#include <string.h>

#include "backend/cpu/vmath.h"
#include "backend/cpu/vmath_consts.h"

/* 16 lanes where the includer enables AVX-512, 8 with AVX2, else the
 * baseline's 4 (wider vectors there would change the calling
 * convention). Lanes are independent, so the width changes no bits. */
#if defined(VMATH_AVX512)
#define VM_W 16
#elif defined(VMATH_AVX2)
#define VM_W 8
#else
#define VM_W 4
#endif
typedef float vm_f __attribute__((vector_size(4 * VM_W)));
typedef int32_t vm_i __attribute__((vector_size(4 * VM_W)));
typedef uint32_t vm_u __attribute__((vector_size(4 * VM_W)));

static inline vm_f vm_load(const float *p) {
    vm_f v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline void vm_store(float *p, vm_f v) { memcpy(p, &v, sizeof v); }
static inline vm_f vm_splat(float x) {
    vm_f v;
    for (int k = 0; k < VM_W; k++)
        v[k] = x;
    return v;
}
static inline vm_f vm_select(vm_i m, vm_f a, vm_f b) {
    return (vm_f)(((vm_i)a & m) | ((vm_i)b & ~m));
}

/* exp(z) of vmath.h for z in [0, 20] (other lanes: garbage, never NaN traps) */
static inline vm_f vm_exp(vm_f z) {
    const vm_f t = z * vm_splat(VM_LOG2E) + vm_splat(VM_MAGIC);
    const vm_f nf = t - vm_splat(VM_MAGIC);
    vm_f r = z - nf * vm_splat(VM_LN2_HI);
    r = r - nf * vm_splat(VM_LN2_LO);
    vm_f p = vm_splat(VM_E6);
    p = p * r + vm_splat(VM_E5);
    p = p * r + vm_splat(VM_E4);
    p = p * r + vm_splat(VM_E3);
    p = p * r + vm_splat(VM_E2);
    p = p * r + vm_splat(VM_E1);
    p = p * r + vm_splat(VM_E0);
    const vm_u sc = ((vm_u)t - VM_MAGIC_BITS + 127u) << 23;
    return p * (vm_f)sc;
}

static inline vm_f vm_tanh(vm_f y) {
    const vm_i sign = (vm_i)y & (int32_t)VM_SIGN_BIT;
    const vm_f a = (vm_f)((vm_i)y & (int32_t)~VM_SIGN_BIT);
    const vm_f u = y * y;
    vm_f p = vm_splat(VM_P5);
    p = p * u + vm_splat(VM_P4);
    p = p * u + vm_splat(VM_P3);
    p = p * u + vm_splat(VM_P2);
    p = p * u + vm_splat(VM_P1);
    p = p * u + vm_splat(VM_P0);
    const vm_f small = y + y * (u * p);
    const vm_f ac = vm_select(a > vm_splat(VM_TANH_CLAMP), vm_splat(VM_TANH_CLAMP), a);
    const vm_f e = vm_exp(ac + ac);
    const vm_f big = vm_splat(1.0f) - vm_splat(2.0f) / (e + vm_splat(1.0f));
    /* the sign onto both: big is >= 0, and small is +0 for y = -0 */
    return (vm_f)((vm_i)vm_select(a < vm_splat(VM_TANH_SMALL), small, big) | sign);
}

static inline vm_f vm_geglu(vm_f g, vm_f up) {
    const vm_f cube = g * g * g;
    const vm_f inner = vm_splat(VM_GELU_BETA) * (g + vm_splat(VM_GELU_KAPPA) * cube);
    return vm_splat(0.5f) * g * (vm_splat(1.0f) + vm_tanh(inner)) * up;
}

/* Tail helpers: the last n < VM_W elements through the vector code. */
static inline vm_f vm_load_part(const float *p, uint64_t n) {
    float b[VM_W] = {0};
    memcpy(b, p, n * sizeof *p);
    return vm_load(b);
}
static inline void vm_store_part(float *p, vm_f v, uint64_t n) {
    float b[VM_W];
    vm_store(b, v);
    memcpy(p, b, n * sizeof *p);
}

static void vm_tanh_n(const float *x, float *y, uint64_t n) {
    uint64_t i = 0;
    for (; i + VM_W <= n; i += VM_W)
        vm_store(y + i, vm_tanh(vm_load(x + i)));
    if (i < n)
        vm_store_part(y + i, vm_tanh(vm_load_part(x + i, n - i)), n - i);
}

static void vm_geglu_n(const float *gate, const float *up, float *out, uint64_t n) {
    uint64_t i = 0;
    for (; i + VM_W <= n; i += VM_W)
        vm_store(out + i, vm_geglu(vm_load(gate + i), vm_load(up + i)));
    if (i < n)
        vm_store_part(out + i, vm_geglu(vm_load_part(gate + i, n - i), vm_load_part(up + i, n - i)),
                      n - i);
}

static void vm_softcap_n(float *x, uint64_t n, float cap) {
    const vm_f c = vm_splat(cap);
    uint64_t i = 0;
    for (; i + VM_W <= n; i += VM_W)
        vm_store(x + i, vm_tanh(vm_load(x + i) / c) * c);
    if (i < n)
        vm_store_part(x + i, vm_tanh(vm_load_part(x + i, n - i) / c) * c, n - i);
}

/* Columns in blocks of 4 vectors held in registers across all rows: each
 * o element still takes its products in row order. */
static void vm_wsum(const float *v, uint64_t stride, const float *w, uint64_t n_rows, float *o,
                    uint64_t n) {
    uint64_t d = 0;
    for (; d + 4 * VM_W <= n; d += 4 * VM_W) {
        vm_f a0 = vm_load(o + d), a1 = vm_load(o + d + VM_W);
        vm_f a2 = vm_load(o + d + 2 * VM_W), a3 = vm_load(o + d + 3 * VM_W);
        for (uint64_t i = 0; i < n_rows; i++) {
            const float *r = v + i * stride + d;
            const vm_f wi = vm_splat(w[i]);
            a0 = a0 + wi * vm_load(r);
            a1 = a1 + wi * vm_load(r + VM_W);
            a2 = a2 + wi * vm_load(r + 2 * VM_W);
            a3 = a3 + wi * vm_load(r + 3 * VM_W);
        }
        vm_store(o + d, a0);
        vm_store(o + d + VM_W, a1);
        vm_store(o + d + 2 * VM_W, a2);
        vm_store(o + d + 3 * VM_W, a3);
    }
    for (; d < n; d++) {
        float a = o[d];
        for (uint64_t i = 0; i < n_rows; i++)
            a = a + w[i] * v[i * stride + d];
        o[d] = a;
    }
}

const cpu_vmath *VMATH_TABLE_FN(void);
const cpu_vmath *VMATH_TABLE_FN(void) {
    static const cpu_vmath t = {vm_tanh_n, vm_geglu_n, vm_softcap_n, vm_wsum};
    return &t;
}
