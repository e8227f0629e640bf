/*
 * idot_avx2.c — idot.h's integer dots for AVX2 + FMA + F16C: the kernels
 * of idot_avx2_body.inc with maddubs + madd.
 */
#define IA_VNNI 0
#define CPU_TARGET "avx2,fma,f16c"
#define IA_TABLE cpu_idot_table_avx2
#define IA_FINE_TABLE cpu_idot_fine_table_avx2
#include "backend/cpu/idot_avx2_body.inc"
