/*
 * target_end.h — closes the stretch that target_begin.h opened (internal
 * to backend/cpu).
 */
#ifdef __clang__
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#undef CPU_TARGET
#undef CPU_TARGET_PRAGMA
#undef CPU_TARGET_PRAGMA_
