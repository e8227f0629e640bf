/*
 * sim_pool.c — the simulated device's memory: one arena of exactly
 * capacity_bytes, carved first-fit into 256-byte-aligned blocks.
 *
 * A real device fragments, so this one does too: the block table is kept
 * sorted by offset and always covers the whole arena (free neighbours are
 * merged on free), and an allocation fails when no single free block is big
 * enough even if the free bytes add up. The arena is an anonymous mapping
 * made without a swap reservation, so rehearsing a 16 GiB card commits only
 * the pages actually touched. Fault injection (fail_alloc_at) lets tests
 * fail each allocation site in turn.
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, MAP_NORESERVE */

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backend/sim/sim_internal.h"
#include "util/error.h"

struct sim_block {
    uint64_t off;   /* from the arena base; a multiple of SIM_ALIGN */
    uint64_t size;  /* bytes occupied */
    uint64_t req;   /* bytes asked for (<= size); 0 for a free block */
    bool used;
};

enum { SIM_BLOCKS_INITIAL = 64 };

static uint64_t round_up(uint64_t x, uint64_t m) { return (x + m - 1) / m * m; }

sw_status sim_arena_init(sim_arena *a, uint64_t capacity_bytes, uint64_t fail_alloc_at) {
    sw_status st;
    void *base = MAP_FAILED;
    memset(a, 0, sizeof *a);
    if (capacity_bytes == 0)
        return sw_errorf(SW_ERR_ARG, "sim device: capacity_bytes must be > 0");
    if (capacity_bytes > ((uint64_t)SIZE_MAX >> 1))
        return sw_errorf(SW_ERR_ARG, "sim device: capacity %llu bytes is beyond this host's "
                         "address space", (unsigned long long)capacity_bytes);
    long page = sysconf(_SC_PAGESIZE);
    a->map_bytes = round_up(capacity_bytes, page > 0 ? (uint64_t)page : 4096u);
    int flags = MAP_PRIVATE | MAP_ANONYMOUS;
#ifdef MAP_NORESERVE
    flags |= MAP_NORESERVE;
#endif
    base = mmap(NULL, (size_t)a->map_bytes, PROT_READ | PROT_WRITE, flags, -1, 0);
    if (base == MAP_FAILED) {
        st = sw_errorf(SW_ERR_OOM_HOST, "sim device: out of host memory: cannot reserve "
                       "%llu bytes of address space for its memory; choose a smaller "
                       "--device-mem",
                       (unsigned long long)capacity_bytes);
        goto fail;
    }
    a->blocks = malloc(SIM_BLOCKS_INITIAL * sizeof *a->blocks);
    if (a->blocks == NULL) {
        st = sw_errorf(SW_ERR_OOM_HOST, "sim device: out of host memory for its block table");
        goto fail;
    }
    if (pthread_mutex_init(&a->mu, NULL) != 0) {
        st = sw_errorf(SW_ERR_OOM_HOST, "sim device: cannot create a mutex");
        goto fail;
    }
    a->base = base;
    a->capacity_bytes = capacity_bytes;
    a->cap_blocks = SIM_BLOCKS_INITIAL;
    a->n_blocks = 1;
    a->blocks[0] = (sim_block){.off = 0, .size = capacity_bytes, .req = 0, .used = false};
    a->fail_alloc_at = fail_alloc_at;
    return SW_OK;
fail:
    free(a->blocks);
    if (base != MAP_FAILED)
        munmap(base, (size_t)a->map_bytes);
    memset(a, 0, sizeof *a);
    return st;
}

void sim_arena_destroy(sim_arena *a) {
    if (a->base == NULL)
        return;
    pthread_mutex_destroy(&a->mu);
    munmap(a->base, (size_t)a->map_bytes);
    free(a->blocks);
    memset(a, 0, sizeof *a);
}

/* Makes room for one more block table entry, before anything is changed,
 * so a failure leaves the arena as it was. */
static bool table_reserve(sim_arena *a) {
    if (a->n_blocks < a->cap_blocks)
        return true;
    uint64_t cap = a->cap_blocks * 2;
    sim_block *grown = realloc(a->blocks, cap * sizeof *grown);
    if (grown == NULL)
        return false;
    a->blocks = grown;
    a->cap_blocks = cap;
    return true;
}

static void table_remove(sim_arena *a, uint64_t i) {
    memmove(&a->blocks[i], &a->blocks[i + 1], (a->n_blocks - i - 1) * sizeof *a->blocks);
    a->n_blocks--;
}

/* How much of free block b a request takes, or 0 if it does not fit. The
 * tail block may be shorter than the rounded request: it is all there is. */
static uint64_t block_take(const sim_arena *a, const sim_block *b, uint64_t bytes,
                           uint64_t need) {
    if (b->used)
        return 0;
    if (b->size >= need)
        return need;
    if (b->off + b->size == a->capacity_bytes && b->size >= bytes)
        return b->size;
    return 0;
}

static uint64_t largest_free(const sim_arena *a) {
    uint64_t best = 0;
    for (uint64_t i = 0; i < a->n_blocks; i++)
        if (!a->blocks[i].used && a->blocks[i].size > best)
            best = a->blocks[i].size;
    return best;
}

static sw_status oom(const sim_arena *a, uint64_t bytes, const char *purpose, bool injected) {
    return sw_errorf(SW_ERR_OOM_DEVICE,
                     "device out of memory: requested %llu bytes for '%s', capacity %llu, "
                     "in use %llu (largest free block %llu)%s",
                     (unsigned long long)bytes, purpose ? purpose : "?",
                     (unsigned long long)a->capacity_bytes, (unsigned long long)a->in_use_bytes,
                     (unsigned long long)largest_free(a), injected ? " (injected fault)" : "");
}

/* Carves `take` bytes off the front of free block i; the rest stays free. */
static void block_split(sim_arena *a, uint64_t i, uint64_t bytes, uint64_t take) {
    sim_block *b = &a->blocks[i];
    if (take < b->size) {
        memmove(&a->blocks[i + 2], &a->blocks[i + 1],
                (a->n_blocks - i - 1) * sizeof *a->blocks);
        a->blocks[i + 1] = (sim_block){.off = b->off + take, .size = b->size - take};
        a->n_blocks++;
        b->size = take;
    }
    b->used = true;
    b->req = bytes;
}

sw_status sim_arena_alloc(sim_arena *a, uint64_t bytes, const char *purpose, void **out) {
    sw_status st = SW_OK;
    *out = NULL;
    if (bytes == 0)
        return SW_OK;
    pthread_mutex_lock(&a->mu);
    a->n_attempts++;
    if (a->n_attempts == a->fail_alloc_at) {
        st = oom(a, bytes, purpose, true);
        goto done;
    }
    if (bytes > a->capacity_bytes) {
        st = oom(a, bytes, purpose, false);
        goto done;
    }
    uint64_t need = round_up(bytes, SIM_ALIGN), take = 0, i = 0;
    for (; i < a->n_blocks && take == 0; i++)
        take = block_take(a, &a->blocks[i], bytes, need);
    if (take == 0) {
        st = oom(a, bytes, purpose, false);
        goto done;
    }
    i--;
    if (!table_reserve(a)) {
        st = sw_errorf(SW_ERR_OOM_HOST, "sim device: out of host memory for its block table "
                       "(allocating '%s')", purpose ? purpose : "?");
        goto done;
    }
    block_split(a, i, bytes, take);
    a->in_use_bytes += take;
    if (a->in_use_bytes > a->peak_bytes)
        a->peak_bytes = a->in_use_bytes;
    a->n_allocs++;
    *out = a->base + a->blocks[i].off;
done:
    pthread_mutex_unlock(&a->mu);
    return st;
}

/* Index of the last block starting at or before off (the table is sorted
 * and starts at 0, so there always is one). */
static uint64_t block_find(const sim_arena *a, uint64_t off) {
    uint64_t lo = 0, hi = a->n_blocks;
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (a->blocks[mid].off <= off)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* Offset of p in the arena, or false if p is outside it. Compared as
 * integers: relational operators on unrelated pointers are undefined. */
static bool arena_offset(const sim_arena *a, const void *p, uint64_t *off) {
    uintptr_t base = (uintptr_t)a->base, q = (uintptr_t)p;
    if (q < base || q - base >= a->capacity_bytes)
        return false;
    *off = (uint64_t)(q - base);
    return true;
}

void sim_arena_free(sim_arena *a, void *ptr) {
    uint64_t off = 0;
    if (ptr == NULL)
        return;
    pthread_mutex_lock(&a->mu);
    bool inside = arena_offset(a, ptr, &off);
    uint64_t i = inside ? block_find(a, off) : 0;
    assert(inside && a->blocks[i].off == off && a->blocks[i].used);
    if (!inside || a->blocks[i].off != off || !a->blocks[i].used)
        goto done; /* not ours: ignoring it beats corrupting the table */
    a->in_use_bytes -= a->blocks[i].size;
    a->blocks[i].used = false;
    a->blocks[i].req = 0;
    if (i + 1 < a->n_blocks && !a->blocks[i + 1].used) {
        a->blocks[i].size += a->blocks[i + 1].size;
        table_remove(a, i + 1);
    }
    if (i > 0 && !a->blocks[i - 1].used) {
        a->blocks[i - 1].size += a->blocks[i].size;
        table_remove(a, i);
    }
done:
    pthread_mutex_unlock(&a->mu);
}

void sim_arena_stats(sim_arena *a, uint64_t *in_use, uint64_t *peak, uint64_t *n_allocs) {
    pthread_mutex_lock(&a->mu);
    *in_use = a->in_use_bytes;
    *peak = a->peak_bytes;
    *n_allocs = a->n_allocs;
    pthread_mutex_unlock(&a->mu);
}

void sim_arena_reset_peak(sim_arena *a) {
    pthread_mutex_lock(&a->mu);
    a->peak_bytes = a->in_use_bytes;
    pthread_mutex_unlock(&a->mu);
}
