/*
 * alloc_fault.h — host allocation fault injection for tests, SQLite's
 * technique: count the host allocations Spillway makes and fail the Nth.
 *
 * A test executable linked with
 *   -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=aligned_alloc,
 *   --wrap=posix_memalign,--wrap=strdup,--wrap=strndup,--wrap=mmap
 * and tests/alloc_fault.c sends every such call made by its own objects
 * and libspillway.a's (a static library: its objects are the program's)
 * through a counting shim; the shim calls the real function, which under
 * ASan is the sanitizer's, so leaks and overflows are still caught. mmap
 * counts only anonymous mappings (a file mapping is not an allocation).
 * Calls made inside shared libraries (json-c, libc's own stdio and
 * pthread internals) go straight to libc: they are out of the count.
 *
 *   alloc_fault_arm(7);        the 7th counted allocation from now fails
 *   ... run Spillway ...
 *   alloc_fault_disarm();      stop counting; allocations succeed again
 *   alloc_fault_count();       counted while armed (7 or more if reached)
 *   alloc_fault_hit();         whether the 7th was reached (and failed)
 *
 * Only the Nth fails; the calls after it succeed again, so the code's
 * cleanup after a failure, and any fallback, really run. Counting is
 * atomic (worker threads allocate too). Arm 0 to count without failing.
 */
#ifndef SW_TESTS_ALLOC_FAULT_H
#define SW_TESTS_ALLOC_FAULT_H

#include <stdbool.h>
#include <stdint.h>

void alloc_fault_arm(uint64_t fail_at);
void alloc_fault_disarm(void);
uint64_t alloc_fault_count(void);
bool alloc_fault_hit(void);
/* The return address inside the caller of the allocation that failed
 * (for addr2line), NULL when none did. */
void *alloc_fault_site(void);

#endif
