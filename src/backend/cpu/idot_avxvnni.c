/*
 * idot_avxvnni.c — idot.h's integer dots for AVX2 + FMA + F16C with AVX-VNNI: the
 * kernels of idot_avx2_body.inc with vpdpbusd and vpdpwssd (VEX).
 */
#define IA_VNNI 1
#define CPU_TARGET "avx2,fma,f16c,avxvnni"
#define IA_TABLE cpu_idot_table_avxvnni
#define IA_FINE_TABLE cpu_idot_fine_table_avxvnni
#include "backend/cpu/idot_avx2_body.inc"
