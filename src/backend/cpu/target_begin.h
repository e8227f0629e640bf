/*
 * target_begin.h — opens a stretch of a file compiled for the instruction
 * set named by CPU_TARGET (a target string, e.g. "avx2,fma,f16c"), for
 * the kernels that the CPU backend picks at run time (internal to
 * backend/cpu). Define CPU_TARGET, include this, write the functions,
 * include target_end.h. No include guard: once per stretch.
 */
#ifndef CPU_TARGET
#error "target_begin.h: define CPU_TARGET (a target string) first"
#endif

/* a pragma whose target string comes from a macro */
#define CPU_TARGET_PRAGMA_(x) _Pragma(#x)
#define CPU_TARGET_PRAGMA(x) CPU_TARGET_PRAGMA_(x)

#ifdef __clang__
CPU_TARGET_PRAGMA(clang attribute push(__attribute__((target(CPU_TARGET))), apply_to = function))
#else
#pragma GCC push_options
CPU_TARGET_PRAGMA(GCC target(CPU_TARGET))
#endif
