/*
 * pinned.c — page-locked host memory for the streamed layers' staging copy
 * (the plan's `pinned` tier). A device backend that has a pinned allocator
 * (cudaHostAlloc for CUDA) provides it; otherwise (cpu, sim) the engine
 * takes page-aligned memory and asks the kernel to lock it with mlock.
 *
 * Locking is best effort and reported, never fatal: mlock is refused when
 * the buffer exceeds RLIMIT_MEMLOCK (8 MiB by default for unprivileged
 * users), and then the buffer is kept as ordinary pageable memory — the
 * copies still come from one contiguous host buffer, only without the
 * pinned link rate on a real device — and `why` says so for the report.
 */
#define _DEFAULT_SOURCE /* mlock, getrlimit, sysconf */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "engine/engine_internal.h"
#include "plan/plan_api.h"
#include "util/error.h"

static uint64_t page_bytes(void) {
    long page = sysconf(_SC_PAGESIZE);
    return page > 0 ? (uint64_t)page : 4096;
}

/* "RLIMIT_MEMLOCK 8.0 MiB" or "no RLIMIT_MEMLOCK" for the refusal note. */
static void describe_limit(char *buf, size_t cap) {
    struct rlimit rl;
    char sz[32];
    if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) {
        snprintf(buf, cap, "no RLIMIT_MEMLOCK");
        return;
    }
    plan_format_size((uint64_t)rl.rlim_cur, sz, sizeof sz);
    snprintf(buf, cap, "RLIMIT_MEMLOCK %s", sz);
}

sw_status pinned_alloc(backend *device, uint64_t bytes, engine_pinned *p) {
    memset(p, 0, sizeof *p);
    if (bytes == 0)
        return SW_OK;
    if (device != NULL && device->vt->host_alloc_pinned != NULL) {
        sw_status st = device->vt->host_alloc_pinned(device, bytes, &p->ptr);
        if (st != SW_OK)
            return st;
        p->bytes = bytes;
        p->locked = p->from_backend = true;
        return SW_OK;
    }
    uint64_t page = page_bytes(), size = (bytes + page - 1) / page * page;
    if (size < bytes || size > SIZE_MAX || (p->ptr = aligned_alloc(page, size)) == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for the pinned copy of the "
                         "streamed layers (%.1f MiB); lower --host-mem so the plan streams "
                         "from the file mapping", (double)bytes / 1048576.0);
    p->bytes = bytes;
    if (mlock(p->ptr, (size_t)size) == 0) {
        p->locked = true;
    } else {
        char limit[64], sz[32];
        int err = errno;
        describe_limit(limit, sizeof limit);
        plan_format_size(bytes, sz, sizeof sz);
        snprintf(p->why, sizeof p->why, "mlock refused %s (%s; %s): kept pageable", sz,
                 strerror(err), limit);
    }
    return SW_OK;
}

void pinned_free(backend *device, engine_pinned *p) {
    if (p->ptr == NULL)
        return;
    if (p->from_backend) {
        device->vt->host_free_pinned(device, p->ptr);
    } else {
        uint64_t page = page_bytes();
        if (p->locked)
            munlock(p->ptr, (size_t)((p->bytes + page - 1) / page * page));
        free(p->ptr);
    }
    memset(p, 0, sizeof *p);
}
