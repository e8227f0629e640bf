/*
 * vmath_avx512.c — vmath_body.inc compiled for AVX-512 (F, DQ): 16 lanes.
 * Only the vector width of the generated code changes (no FMA: the build passes
 * -ffp-contract=off), so results equal vmath.c's bit for bit. vmath.c
 * calls in here only when the CPU runs CPU_ISA_AVX512.
 */
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#include <stdint.h>

#define CPU_TARGET "avx2,avx512f,avx512dq"
#include "backend/cpu/target_begin.h"

#define VMATH_AVX512 1
#define VMATH_TABLE_FN cpu_vmath_table_avx512
#include "backend/cpu/vmath_body.inc"

#include "backend/cpu/target_end.h"
#else
/* ISO C wants at least one declaration in a translation unit. */
typedef int vmath_avx512_unavailable;
#endif
