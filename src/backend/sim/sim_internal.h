/*
 * sim_internal.h — the two parts of the simulated accelerator, private to
 * backend/sim: the device memory arena (sim_pool.c) and the copy engine
 * (sim_copy.c). sim.c joins them behind the backend vtable and runs the ops
 * on the CPU kernels.
 *
 * Both parts are thread-safe: the engine's prefetcher may queue copies and
 * the compute thread may allocate, wait and read stats at the same time.
 */
#ifndef SW_BACKEND_SIM_INTERNAL_H
#define SW_BACKEND_SIM_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "spillway.h"

/* Every allocation starts on this boundary, as cudaMalloc's do. */
#define SIM_ALIGN 256u

/* ---- device memory arena (sim_pool.c) --------------------------------- */

typedef struct sim_block sim_block;

/* One block of exactly capacity_bytes of (lazily committed) host memory,
 * carved first-fit into 256-byte-aligned blocks. A block occupies its
 * request rounded up to SIM_ALIGN (the last block before the arena's end
 * may take less when the capacity itself is not a multiple), and
 * in_use_bytes counts occupied bytes, so in use + free == capacity. */
typedef struct sim_arena {
    pthread_mutex_t mu;
    uint8_t *base;           /* capacity_bytes, page aligned */
    uint64_t capacity_bytes;
    uint64_t map_bytes;      /* what was mapped (capacity rounded to pages) */
    sim_block *blocks;       /* sorted by offset, cover [0, capacity) */
    uint64_t n_blocks, cap_blocks;
    uint64_t in_use_bytes, peak_bytes, n_allocs;
    uint64_t n_attempts;     /* alloc calls with bytes > 0, for injection */
    uint64_t fail_alloc_at;  /* 1-based attempt that fails; 0 = none */
} sim_arena;

/* Errors: SW_ERR_ARG (capacity 0), SW_ERR_OOM_HOST (cannot map). */
sw_status sim_arena_init(sim_arena *a, uint64_t capacity_bytes, uint64_t fail_alloc_at);
void sim_arena_destroy(sim_arena *a);

/* First-fit allocation. bytes == 0 gives *out = NULL and SW_OK without
 * counting as an attempt. Errors: SW_ERR_OOM_DEVICE ("device out of
 * memory: requested N bytes for 'p', capacity C, in use U (largest free
 * block F)", plus " (injected fault)" for the fail_alloc_at attempt),
 * SW_ERR_OOM_HOST (block table could not grow). */
sw_status sim_arena_alloc(sim_arena *a, uint64_t bytes, const char *purpose, void **out);

/* Frees a pointer from sim_arena_alloc; NULL is a no-op. A pointer that is
 * not the start of a live block is a programmer error (asserted). */
void sim_arena_free(sim_arena *a, void *ptr);

/* True when [p, p + bytes) lies inside one live allocation. */
bool sim_arena_holds(sim_arena *a, const void *p, uint64_t bytes);

/* Consistent snapshot of the accounting. */
void sim_arena_stats(sim_arena *a, uint64_t *in_use, uint64_t *peak, uint64_t *n_allocs);
void sim_arena_reset_peak(sim_arena *a);

/* ---- copy engine (sim_copy.c) ----------------------------------------- */

/* Requests the copy thread can hold before copy_async blocks. */
#define SIM_QUEUE_LEN 64u
/* Copies move in chunks of this size: the pacing granule, and the point
 * where a destroy can cancel a long copy. */
#define SIM_CHUNK_BYTES (1u << 20)

typedef struct sim_copy_req {
    void *dst;
    const void *src;
    uint64_t bytes;
    uint64_t seq;            /* 1, 2, 3, ... in queue order */
    double submit_s;         /* when it was queued (the link may start then) */
} sim_copy_req;

typedef struct sim_copier {
    pthread_mutex_t mu;
    pthread_cond_t cv_work;  /* queue non-empty, or stop (also paces) */
    pthread_cond_t cv_space; /* a queue slot freed, or stop */
    pthread_cond_t cv_done;  /* done_seq advanced, or stop */
    pthread_cond_t cv_pace;  /* CLOCK_MONOTONIC; pacing sleeps, woken by stop */
    pthread_t thread;
    bool thread_started;
    bool stop;
    sim_copy_req queue[SIM_QUEUE_LEN];
    uint32_t head, count;
    uint64_t last_seq;       /* seq of the newest queued copy */
    uint64_t done_seq;       /* every copy with seq <= done_seq has landed */
    double link_bytes_per_s; /* 0: unthrottled */
    double link_free_s;      /* monotonic time the paced link frees up */
    uint64_t bytes_to_device;
    double busy_s, stall_s;
} sim_copier;

/* An event is the sequence number of the last copy it was attached to:
 * copies land in order, so it is signalled once done_seq reaches it (0:
 * never used, always signalled). The queue never points at events, so an
 * event may be destroyed while its copy is still in flight. */
typedef struct sim_event {
    uint64_t seq;
} sim_event;

/* Starts the copy thread. Errors: SW_ERR_OOM_HOST. */
sw_status sim_copier_init(sim_copier *c, double link_bytes_per_s);

/* Cancels what has not landed (the chunk in progress finishes), joins the
 * thread and frees the primitives. Never blocks on a pending copy. */
void sim_copier_destroy(sim_copier *c);

/* Queues dst <- src; blocks while the queue is full. ev may be NULL.
 * Errors: SW_ERR_DEVICE (the copier is shutting down). */
sw_status sim_copier_submit(sim_copier *c, void *dst, const void *src, uint64_t bytes,
                            sim_event *ev);

/* Blocks until ev's copy has landed; blocked time adds to stall_s.
 * Errors: SW_ERR_DEVICE (shut down before the copy landed). */
sw_status sim_copier_wait(sim_copier *c, const sim_event *ev);

void sim_copier_stats(sim_copier *c, uint64_t *bytes_to_device, double *busy_s,
                      double *stall_s);

/* Adds bytes copied outside the queue (synchronous copies) to the stats. */
void sim_copier_count(sim_copier *c, uint64_t bytes);

/* Monotonic clock in seconds (shared by the pacing and the stats). */
double sim_now_s(void);

#endif
