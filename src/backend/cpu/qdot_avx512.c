/*
 * qdot_avx512.c — qdot_body.inc compiled for AVX-512 (F, BW, VL, DQ): one
 * 512-bit register holds all 16 canonical lanes of qdot.h's dot, so each
 * dot keeps one accumulator per x row; f16 widens through the 512-bit
 * F16C conversion (exact; NaN groups take the exact path). As for AVX2, no
 * FMA is enabled (the build passes -ffp-contract=off), so results equal
 * the baseline kernels bit for bit. qdot.c calls in here only when the
 * CPU runs CPU_ISA_AVX512.
 */
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "backend/cpu/qdot.h"
#include "quant/types.h"

const cpu_qkernel *cpu_qkernel_table_avx512(cpu_dot_f32_fn *dot_f32,
                                            cpu_tile_f32_fn *tile_f32);

#define CPU_TARGET "avx2,f16c,avx512f,avx512bw,avx512vl,avx512dq"
#include "backend/cpu/target_begin.h"

#define QDOT_AVX512 1
#define QDOT_F16C 1
#define QDOT_TABLE_FN cpu_qkernel_table_avx512
#include "backend/cpu/qdot_body.inc"

#include "backend/cpu/target_end.h"
#else
/* ISO C wants at least one declaration in a translation unit. */
typedef int qdot_avx512_unavailable;
#endif
