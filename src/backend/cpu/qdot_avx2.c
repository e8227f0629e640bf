/*
 * qdot_avx2.c — qdot_body.inc compiled for AVX2 (x86-64 with GCC or clang).
 * Only the vector width changes (and f16 widens through F16C, exact): no
 * FMA is enabled (and the build passes -ffp-contract=off), so results
 * equal the baseline kernels bit for bit. qdot.c calls in here only when
 * the CPU reports AVX2 and F16C.
 */
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "backend/cpu/qdot.h"
#include "quant/types.h"

const cpu_qkernel *cpu_qkernel_table_avx2(cpu_dot_f32_fn *dot_f32, cpu_tile_f32_fn *tile_f32);

#define CPU_TARGET "avx2,f16c"
#include "backend/cpu/target_begin.h"

/* clang's attribute push does not define __AVX2__: say so ourselves. */
#define QDOT_AVX2 1
#define QDOT_F16C 1
#define QDOT_TABLE_FN cpu_qkernel_table_avx2
#include "backend/cpu/qdot_body.inc"

#include "backend/cpu/target_end.h"
#else
/* ISO C wants at least one declaration in a translation unit. */
typedef int qdot_avx2_unavailable;
#endif
