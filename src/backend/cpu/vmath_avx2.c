/*
 * vmath_avx2.c — vmath_body.inc compiled for AVX2. Only the vector width
 * of the generated code changes (no FMA: the build passes
 * -ffp-contract=off), so results equal vmath.c's bit for bit. vmath.c
 * calls in here only when the CPU reports AVX2.
 */
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#include <stdint.h>

#define CPU_TARGET "avx2"
#include "backend/cpu/target_begin.h"

/* clang's attribute push does not define __AVX2__: say so ourselves. */
#define VMATH_AVX2 1
#define VMATH_TABLE_FN cpu_vmath_table_avx2
#include "backend/cpu/vmath_body.inc"

#include "backend/cpu/target_end.h"
#else
/* ISO C wants at least one declaration in a translation unit. */
typedef int vmath_avx2_unavailable;
#endif
