/*
 * sim_internal.h — the parts of the simulated accelerator, private to
 * backend/sim: its memory (sim_pool.c: a hard-capacity arena and the
 * buffers carved from it), its two queues (sim_queue.c: a thread each,
 * working through a FIFO of commands), what the queues execute (sim_exec.c:
 * ops on an inner cpu backend, copies paced to the link rate, waits, and
 * the ring-slot race check), and the vtable that joins them (sim.c).
 *
 * Everything here is thread-safe: the engine's thread submits while the
 * two queue threads execute.
 */
#ifndef SW_BACKEND_SIM_INTERNAL_H
#define SW_BACKEND_SIM_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend/backend.h"
#include "backend/block.h"
#include "spillway.h"
#include "util/clock.h"

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

/* Consistent snapshot of the accounting. */
void sim_arena_stats(sim_arena *a, uint64_t *in_use, uint64_t *peak, uint64_t *n_allocs);
void sim_arena_reset_peak(sim_arena *a);

/* What a backend_buf is on the sim: one arena allocation, with the
 * counters of the race check (sim_exec.c). A weight buffer's generation
 * counts the copy-queue uploads into it: `gen_queued` when they are
 * submitted, `gen_done` when they have landed. */
#define SIM_BUF_MAGIC 0x53494d4255460001ull
typedef struct sim_buf {
    uint64_t magic;          /* SIM_BUF_MAGIC: other backends' buffers are refused */
    uint8_t *base;
    uint64_t bytes;
    char purpose[48];
    atomic_uint_fast64_t gen_queued, gen_done;
    atomic_int readers;      /* ops running now that read it as a weight */
    atomic_int writers;      /* copies writing into it now */
    struct sim_buf *prev, *next; /* the live buffers, freed at destroy if left */
} sim_buf;

/* ---- queues (sim_queue.c) ---------------------------------------------- */

/* Most weight buffers one command reads (a block reads one packed layer,
 * but its tensors may sit in separate buffers). */
#define SIM_MAX_READS 16

typedef enum sim_cmd_kind {
    CMD_OP,      /* one op, addresses translated for the inner cpu backend */
    CMD_BLOCK,   /* a whole block, likewise */
    CMD_H2D,     /* host -> device (paced on the copy queue) */
    CMD_D2H,     /* device -> host */
    CMD_WAIT     /* wait until another queue has done `seq` commands */
} sim_cmd_kind;

typedef struct sim_cmd {
    sim_cmd_kind kind;
    union {
        bop op;
        struct {
            block_args a;
            block_shape shape;   /* a.shape points here when it runs */
        } block;
        struct {
            void *dst;
            const void *src;
            uint64_t bytes;
            sim_buf *target;     /* h2d on the copy queue: the buffer written */
            double submit_s;     /* when it was queued (the link may start then) */
        } copy;
        struct {
            int queue;
            uint64_t seq;
        } wait;
    } u;
    /* Weight buffers the command reads and the generation each must hold
     * (what had been queued into it when the command was submitted). */
    sim_buf *reads[SIM_MAX_READS];
    uint64_t read_gen[SIM_MAX_READS];
    uint32_t n_reads;
} sim_cmd;

struct sim_backend;
typedef void (*sim_exec_fn)(struct sim_backend *s, int queue, sim_cmd *cmd);

/* A thread executing commands in FIFO order. `done` counts executed
 * commands; an event is a (queue, submitted count) mark that has passed
 * once done reaches it. */
typedef struct sim_queue {
    pthread_mutex_t mu;
    pthread_cond_t cv_work;   /* a command arrived, or stop */
    pthread_cond_t cv_space;  /* a slot freed, or stop */
    pthread_cond_t cv_done;   /* done advanced, or stop */
    pthread_t thread;
    bool thread_started;
    bool stop;
    sim_cmd *ring;            /* capacity commands */
    sim_cmd running;          /* the one taken out of the ring, while it runs */
    uint32_t capacity, head, count;
    uint64_t submitted, done;
    int index;                /* BQ_COMPUTE or BQ_COPY */
    struct sim_backend *owner;
    sim_exec_fn exec;
} sim_queue;

/* Errors: SW_ERR_OOM_HOST. */
sw_status sim_queue_init(sim_queue *q, int index, uint32_t capacity, struct sim_backend *owner,
                         sim_exec_fn exec);
/* Asks the thread to stop after the command in progress (the rest is
 * dropped) and wakes everything waiting on this queue. Stop both queues
 * before destroying either: a thread may be waiting on the other one. */
void sim_queue_stop(sim_queue *q);
/* Stops, joins and frees. */
void sim_queue_destroy(sim_queue *q);
/* Copies cmd into the FIFO, blocking while it is full; *seq (may be NULL)
 * gets its 1-based position. Errors: SW_ERR_DEVICE (shutting down). */
sw_status sim_queue_push(sim_queue *q, const sim_cmd *cmd, uint64_t *seq);
/* Commands submitted so far (an event mark). */
uint64_t sim_queue_mark(sim_queue *q);
/* Blocks until `seq` commands have run; false if stopped first. Seconds
 * blocked are added to *waited when it is not NULL. */
bool sim_queue_wait(sim_queue *q, uint64_t seq, double *waited);

/* ---- the backend (sim.c, sim_exec.c) ------------------------------------ */

typedef struct sim_backend {
    backend base;            /* what callers hold; impl points back here */
    sim_arena arena;
    backend *cpu;            /* runs the ops on host addresses */
    sim_queue queue[BQ_COUNT];
    double link_Bps;         /* 0: unthrottled */
    double link_free_s;      /* monotonic time the paced link frees up (copy thread) */
    double copy_ready_s;     /* when the copy queue's last blocking wait ended */
    atomic_bool stopping;    /* destroy has begun: pacing sleeps end */
    pthread_mutex_t pace_mu;
    pthread_cond_t cv_pace;  /* CLOCK_MONOTONIC; pacing sleeps, woken by stopping */
    double op_delay_s;       /* test hook: each op sleeps while it reads */
    uint64_t fail_op_at, n_ops;
    pthread_mutex_t mu;      /* guards what follows */
    sim_buf *live;           /* buffers not yet freed */
    sw_status sticky;        /* first error found while work ran */
    char sticky_msg[512];
    uint64_t bytes_to_device;
    uint64_t peer_bytes;     /* copied in from another sim device (a split's hops) */
    double busy_s, stall_s;
} sim_backend;


/* Executes one command on the thread of queue `queue` (sim_exec.c). */
void sim_exec(sim_backend *s, int queue, sim_cmd *cmd);

/* Records the first asynchronous failure (later ones are dropped). */
void sim_fail(sim_backend *s, sw_status st, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#endif
