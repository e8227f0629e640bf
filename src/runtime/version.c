/*
 * version.c — sw_version(): the version this library was built as, from
 * the project's CMake version (SW_LIB_VERSION), so a program linked
 * against libspillway.so can tell it from the header it was compiled with.
 */
#include "spillway.h"

#ifndef SW_LIB_VERSION
#error "SW_LIB_VERSION is set by CMakeLists.txt from the project version"
#endif

const char *sw_version(void) { return SW_LIB_VERSION; }
