/*
 * qdot.h — the CPU backend's dot products over weights in their stored
 * type (internal to backend/cpu).
 *
 * The canonical dot. Every dot the CPU backend computes — matmul rows,
 * attention scores — sums in one fixed order, so a result never depends on
 * the thread count, the batch size or the instruction set:
 *
 *     acc[l] = 0 for l < 16
 *     for i = 0 .. n-1:  acc[i % 16] += w[i] * x[i]   (product rounded to f32)
 *     t[j] = acc[j] + acc[j+8] (j<8);  u[j] = t[j] + t[j+4] (j<4)
 *     result = (u[0] + u[2]) + (u[1] + u[3])
 *
 * where w[i] is element i exactly as quant_dequantize() produces it. The
 * 16 independent lanes let the compiler vectorize without fast-math flags.
 *
 * Kernel sets (cpu_isa): REF is the portable reference — quant_dequantize()
 * a chunk, then the loop above, in plain C — kept for debugging and as the
 * fallback for compilers without GNU vector extensions. GENERIC (baseline
 * ISA), AVX2 and AVX512 are the fast kernels of qdot_body.inc. All give the
 * same bits; tests/test_cpu_ops.c checks every type on every set, and the
 * f32 tile kernel (cpu_tile_f32_fn) on every set for every block shape;
 * tests/test_qrows.c the decode rows (cpu_qrows_fn) against both.
 */
#ifndef SW_BACKEND_CPU_QDOT_H
#define SW_BACKEND_CPU_QDOT_H

#include <stdint.h>

enum { CPU_DOT_LANES = 16 };

/* n elements (a whole number of blocks) of a row in its stored type ->
 * dst, bit-identical to quant_dequantize(). */
typedef void (*cpu_dequant_fn)(const uint8_t *src, float *dst, uint64_t n);

/* out[t] = canonical dot of the n-element row `row` (stored type) with
 * x + t*x_stride, for t < n_x. Each block is dequantized once per group
 * of up to 4 rows of x. */
typedef void (*cpu_qdot_fn)(const uint8_t *row, const float *x, uint64_t x_stride,
                            uint32_t n_x, uint64_t n, float *out);

/* The canonical dot of two f32 arrays. */
typedef float (*cpu_dot_f32_fn)(const float *a, const float *b, uint64_t n);

/* y[t*y_stride + r] = canonical dot of the f32 row w + r*w_stride with
 * x + t*x_stride, for r < n_rows, t < n_x; n is a multiple of
 * CPU_DOT_LANES. The fast sets dot a block of a few rows with a few x at
 * once, accumulators in registers, so each value loaded serves several
 * dots; the order of each dot's own sum is still the canonical one.
 * Example: cpu_matmul's tiled path calls it on a tile of dequantized rows
 * with all tokens, so each row is dequantized once per call. */
typedef void (*cpu_tile_f32_fn)(const float *w, uint64_t w_stride, uint32_t n_rows,
                                const float *x, uint64_t x_stride, uint32_t n_x, uint64_t n,
                                float *y, uint64_t y_stride);

/* out[r] = canonical dot of row r (the n-element rows are row_bytes
 * apart, stored type) with the one f32 row x, for r < n_rows: `dot` with
 * n_x = 1 over many rows in one call, the decode step's matmul. One call
 * lets the kernel ask for the rows' bytes ahead of use and run several
 * rows' sums side by side (each row's own sum in the canonical order), so
 * a single core streams the weights at memory's pace rather than waiting
 * on one sum's latency. Rows of any length. */
typedef void (*cpu_qrows_fn)(const uint8_t *rows, uint64_t row_bytes, uint64_t n_rows,
                             const float *x, uint64_t n, float *out);

typedef struct cpu_qkernel {
    cpu_dequant_fn dequant; /* NULL: type has no kernel */
    cpu_qdot_fn dot;
    cpu_qrows_fn rows;      /* NULL: call dot once per row */
} cpu_qkernel;

/* In order of preference; each set's CPU also runs REF, GENERIC and
 * AVX2, but AVX512 does not imply AVXVNNI (Ice Lake has AVX-512 VNNI
 * without the VEX form) nor the reverse (Alder Lake). AVX2 is AVX2, FMA
 * and F16C. AVXVNNI is AVX2 with AVX-VNNI: its own integer dots (idot.h),
 * AVX2's everything else. AVX512 is AVX-512 F, BW, VL, DQ and VNNI (with
 * AVX2); where it has no kernel of its own for something, the
 * AVX2 one runs. Every set gives the same bits. */
typedef enum cpu_isa {
    CPU_ISA_REF = 0, CPU_ISA_GENERIC = 1, CPU_ISA_AVX2 = 2, CPU_ISA_AVXVNNI = 3,
    CPU_ISA_AVX512 = 4
} cpu_isa;
enum { CPU_ISA_COUNT = 5 };

/* The best ISA this build and this CPU support (cheap: callers may ask on
 * every call), capped by the environment variable SPILLWAY_CPU_ISA (ref,
 * generic, avx2, avxvnni or avx512) when it is set: for measuring one set
 * against another on the same machine. */
cpu_isa cpu_isa_best(void);

/* "ref", "generic", "avx2", "avxvnni", "avx512". */
const char *cpu_isa_name(cpu_isa isa);

/* Kernels of `type` for `isa`, or NULL if the type has none. An isa this
 * build or CPU lacks (cpu_isa_supported) falls back to the best lesser one
 * (same bits, only slower). Plain types (F32, F16, BF16) take rows of any
 * length; block types need whole blocks (the caller checks). */
const cpu_qkernel *cpu_qkernel_get(cpu_isa isa, uint32_t type);

/* The canonical f32 dot for `isa`. */
cpu_dot_f32_fn cpu_dot_f32_get(cpu_isa isa);

/* The f32 tile kernel for `isa` (same fallback as cpu_qkernel_get). */
cpu_tile_f32_fn cpu_tile_f32_get(cpu_isa isa);

/* Whether kernels for `isa` are compiled in and the CPU runs them. */
int cpu_isa_supported(cpu_isa isa);

#endif
