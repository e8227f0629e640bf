/*
 * alloc_fault.c — the counting shim behind alloc_fault.h. Each __wrap_X
 * is what the linker's --wrap=X makes every call to X in the program's
 * objects reach; __real_X is the real function (the sanitizer's under
 * ASan). A failed call returns what the real one returns when memory is
 * short: NULL (MAP_FAILED for mmap, ENOMEM for posix_memalign), errno
 * ENOMEM.
 */
#define _GNU_SOURCE /* strndup, MAP_ANONYMOUS */

#include "alloc_fault.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t align, size_t n);
int __real_posix_memalign(void **out, size_t align, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
void *__real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);

void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_aligned_alloc(size_t align, size_t n);
int __wrap_posix_memalign(void **out, size_t align, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);
void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);

static atomic_bool armed;
static atomic_uint_fast64_t n_counted;
static uint64_t fail_at; /* written only while disarmed */
static atomic_bool hit;
static void *_Atomic site;

void alloc_fault_arm(uint64_t n) {
    fail_at = n;
    atomic_store(&n_counted, 0);
    atomic_store(&hit, false);
    atomic_store(&site, NULL);
    atomic_store(&armed, true);
}

void alloc_fault_disarm(void) { atomic_store(&armed, false); }
uint64_t alloc_fault_count(void) { return atomic_load(&n_counted); }
bool alloc_fault_hit(void) { return atomic_load(&hit); }
void *alloc_fault_site(void) { return atomic_load(&site); }

/* Counts one allocation; true when it is the one to fail. */
static bool should_fail(void *caller) {
    if (!atomic_load(&armed))
        return false;
    uint64_t k = atomic_fetch_add(&n_counted, 1) + 1;
    if (k != fail_at)
        return false;
    atomic_store(&site, caller);
    atomic_store(&hit, true);
    errno = ENOMEM;
    return true;
}

#define CALLER __builtin_return_address(0)

void *__wrap_malloc(size_t n) { return should_fail(CALLER) ? NULL : __real_malloc(n); }

void *__wrap_calloc(size_t n, size_t size) {
    return should_fail(CALLER) ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n) {
    return should_fail(CALLER) ? NULL : __real_realloc(p, n);
}

void *__wrap_aligned_alloc(size_t align, size_t n) {
    return should_fail(CALLER) ? NULL : __real_aligned_alloc(align, n);
}

int __wrap_posix_memalign(void **out, size_t align, size_t n) {
    return should_fail(CALLER) ? ENOMEM : __real_posix_memalign(out, align, n);
}

char *__wrap_strdup(const char *s) { return should_fail(CALLER) ? NULL : __real_strdup(s); }

char *__wrap_strndup(const char *s, size_t n) {
    return should_fail(CALLER) ? NULL : __real_strndup(s, n);
}

void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    if ((flags & MAP_ANONYMOUS) && should_fail(CALLER))
        return MAP_FAILED;
    return __real_mmap(addr, len, prot, flags, fd, off);
}
