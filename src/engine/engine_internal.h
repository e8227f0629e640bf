/*
 * engine_internal.h — layouts of sw_engine and sw_session shared by the
 * engine's files and by white-box tests:
 *   engine.c        creation from a plan (backends by name), accessors
 *   load.c          the plan's buffers, resident uploads, failure details
 *   host_weights.c  converted weights and the pinned copy of streamed layers
 *   pinned.c        page-locked host memory
 *   pack.c          a layer packed into one device buffer
 *   ring.c          streamed layers through K slots, ordered by events
 *   forward.c       one engine's forward over a batch: sides, transfers, logits
 *   split_engine.c  a split over several devices: one stage engine each
 *   pipeline.c      ... the later stages on threads of their own
 *   batch.c         sequences, sessions, sw_engine_eval_batch
 *   report.c        --report
 *   notes.c         the notes the parts leave (sw_engine_notes)
 *   assist.c        a Gemma 4 assistant (drafter) over the target's caches
 *   expert_trace.c  each forward's expert routing, as JSON lines
 *
 * Two sides can compute: the host (the cpu backend, weights in host
 * memory) and the device (its backend, weights resident or in a ring
 * slot). Each has its activations buffer (model/act.h) in its own memory.
 */
#ifndef SW_ENGINE_INTERNAL_H
#define SW_ENGINE_INTERNAL_H

#include <stdbool.h>
#include <stdio.h>

#include "backend/backend.h"
#include "backend/block.h"
#include "backend/cpu/threadpool.h"
#include "engine/engine.h"
#include "engine/pack.h"
#include "model/act.h"
#include "model/config.h"
#include "model/model_internal.h"
#include "model/weights.h"
#include "plan/expert_plan.h"
#include "plan/plan.h"

#define ENGINE_MAX_SLOTS 8

typedef struct stage_worker stage_worker; /* pipeline.c */

/* Where a layer (or an end of the forward) computes. */
typedef enum side_id { SIDE_HOST = 0, SIDE_DEVICE = 1 } side_id;

/* A page-locked host buffer (pinned.c): from the device backend's pinned
 * allocator when it has one, else aligned memory locked with mlock — best
 * effort: when the lock is refused the buffer stays, pageable, and `why`
 * says so. */
typedef struct engine_pinned {
    void *ptr;
    uint64_t bytes;
    bool locked;                       /* page-locked */
    bool from_backend;                 /* backend's host_alloc_pinned */
    char why[256];                     /* when not locked: the reason */
} engine_pinned;

/* Host memory the plan gives the weights (host_weights.c). */
typedef struct engine_host_weights {
    uint8_t *arena;                    /* BUF_CONVERTED: conversions kept on the host */
    uint64_t arena_bytes;
    uint8_t *staging;                  /* BUF_STAGING: converts resident layers at load */
    uint64_t staging_bytes;
    float *row;                        /* (widest row) conversion scratch, load only */
    engine_pinned pinned;              /* the pinned tier: streamed layers, packed */
} engine_host_weights;

/* A layer's weights as one backend sees them. */
typedef struct dev_layer {
    btensor w[BW_COUNT];
    btensor host_w[BW_COUNT];          /* host views, for experts the host computes */
} dev_layer;

typedef struct engine_ring {
    uint32_t n_slots;                  /* K */
    uint64_t slot_bytes;
    backend_buf *slot[ENGINE_MAX_SLOTS];
    backend_event *filled[ENGINE_MAX_SLOTS];   /* copy queue: the slot's upload landed */
    backend_event *consumed[ENGINE_MAX_SLOTS]; /* compute queue: its last reader ran */
    int32_t holds[ENGINE_MAX_SLOTS];   /* layer index in each slot, -1 none */
    uint32_t *streamed;                /* (n_streamed) layer indices, in order */
    uint32_t n_streamed;
    uint64_t seq;                      /* streamed-layer computations so far */
    dev_layer views;                   /* the layer being computed */
    sw_status fill_error;              /* a failed refill (reported at acquire) */
} engine_ring;

/* The expert cache (expert_cache.c): the plan's slots per cached layer in
 * one device buffer (expert_plan.h's layout), the policy's state (which
 * expert sits in which slot: plan/expert_sim.h, the one implementation),
 * the host's tables for a step, and its counters. */
typedef struct engine_xcache {
    backend_buf *buf;                  /* BUF_EXPERT_CACHE; NULL: no cache */
    struct expert_cache *policy;
    expert_layout layout;
    int32_t *slot_dev, *slot_host;     /* (n_expert) slot_of for each side's op */
    int32_t *y_row;                    /* (n_tok * k) */
    uint32_t *ids, *n_routed;          /* (n_tok * k) the routing; (n_expert) tokens each */
    float *y;                          /* (n_tok * k, n_embd) outputs the host computed */
    backend_event *copied;             /* copy queue: this step's slot fills landed */
    /* prefetch: the guessed routing, what was admitted, and which experts
     * of each layer were prefetched since its last step */
    uint32_t *guess, *pf_expert;       /* (n_tok * k), (n_expert) */
    int32_t *pf_slot;                  /* (n_expert) */
    uint8_t *pf_flag;                  /* (n_layer * n_expert) */
    bool pf_pending;                   /* fills queued that no step has waited for */
    /* where copies come from (expert_copy.c): SW_EXPERT_COPY_*; the
     * registered span, or the staging buffers and their last copies */
    uint32_t copy_source;
    void *reg_ptr;
    uint64_t reg_bytes;
    engine_pinned stage;
    uint64_t stage_each;
    backend_event *stage_ev[EXPERT_STAGE_BUFFERS];
    bool stage_busy[EXPERT_STAGE_BUFFERS];
    uint32_t stage_next;
    sw_expert_report st;
} engine_xcache;

/* One side's activations: the buffer and the arrays in it. */
typedef struct engine_side {
    backend *be;                       /* NULL when the side does not exist */
    backend_buf *buf;                  /* device: the plan's buffer; host: host memory */
    uint8_t *host_base;                /* host side: the allocation */
    bool host_locked;                  /* host_base page-locked by the device backend */
    block_acts act;                    /* x, h, ..., pos, seq; ple: all layers' */
    bmem ids, out_rows;
    bmem ple_tmp, ple_idx;             /* Gemma 4's per-layer inputs, assembled */
    backend_event *done;               /* compute-queue mark the host syncs on */
    bool meta_current;                 /* this forward's pos/seq/out_rows are here */
    bool used;                         /* this forward queued work here */
} engine_side;

/* One of the engine's n_seq sequences. */
typedef struct engine_seq {
    sw_session *owner;                 /* NULL: free */
    uint32_t pos;                      /* next position */
    uint32_t in_batch;                 /* tokens in the batch being built */
} engine_seq;

struct sw_engine {
    const sw_model *model;
    model_config config;
    block_shape shape;
    model_weights file_weights;        /* views of the mapping + norm arena (bind) */
    model_weights weights;             /* what the engine computes and uploads from:
                                        * file_weights' views, re-pointed per plan at
                                        * converted or pinned copies (host_weights.c) */
    uint32_t convert_type;             /* the plan's --weights as quant_convert_type()'s
                                        * want (plan_convert_tensor_type); SW_TYPE_COUNT
                                        * = as stored */
    uint32_t kv_type;                  /* SW_TYPE_F32, _F16 or _BF16 */
    engine_host_weights hw;
    cpu_pool *pool;
    backend *host;                     /* cpu backend */
    backend *device;                   /* the plan's device backend, or NULL */
    engine_hooks hooks;
    sw_plan *plan_handle;              /* the executed plan (a copy) */
    const plan *plan;                  /* ... inside it */
    int n_threads;
    uint32_t n_ctx, n_batch, n_seq, n_tok;
    layer_pack *packs;                 /* (n_layer) packing of each layer */
    dev_layer *layers;                 /* (n_layer) views of resident copies and of
                                        * host layers (streamed: ring.views) */
    backend_buf **allocs;              /* device buffers, plan order */
    uint32_t n_allocs;
    uint64_t dev_allocated;            /* device bytes obtained so far (failures) */
    engine_ring ring;
    btensor tok_embd;                  /* host: embedding lookups */
    btensor ple_embd, ple_proj, ple_proj_norm; /* host: Gemma 4's per-layer inputs */
    btensor lm_head[2], out_norm[2];   /* per side: the LM head's copy there */
    backend_buf *logits_dev;           /* (n_tok, n_vocab) when the LM head is resident */
    float *hidden_out;                 /* (n_out, n_embd) host: this forward's normed rows
                                        * for an assistant (assist.h); NULL: none */
    FILE *expert_trace;                /* --expert-trace (expert_trace.c); NULL: none */
    engine_xcache xc;                  /* the expert cache */
    int32_t *trace_ids;                /* (n_tok * n_expert_used) a layer's routing */
    bkv *kv;                           /* (n_layer) on its layer's side */
    void *host_kv;                     /* host arena for KV on the host */
    act_layout act;
    engine_side side[2];               /* by side_id */
    engine_seq *seqs;                  /* (n_seq) */
    sw_batch_item *items;              /* (n_tok) scratch for sw_session_eval */
    uint32_t n_replans;
    /* A split over several devices (plan/split.h; split_engine.c): this
     * engine computes the model's layers [first_layer, stage_end) (0, 0:
     * all of them, no split); the first stage owns the later ones, in
     * order, and drives them from its forward, the activation handed on
     * through host memory. */
    uint32_t first_layer, stage_end;
    uint32_t device_index;             /* the backend's device this stage runs on */
    bool peer_in, peer_out;            /* the stream comes from the stage before / goes
                                        * to the one after device to device (copy_peer),
                                        * not through host memory */
    sw_engine **stages;
    uint32_t n_stages;
    struct plan_split *split;          /* the split executed (sw_engine_launch_split),
                                        * printed by sw_engine_print_plan; or NULL */
    double split_decode_tokens_per_s;  /* the split's predictions (the first */
    double split_prefill_tokens_per_s; /* stage's plan has only its own) */
    stage_worker *workers;             /* (n_workers) the later stages' threads; NULL:
                                        * the stages run in turn on the caller's */
    uint32_t n_workers;
    uint32_t decode_parts, prefill_parts; /* micro-batches of a forward wanting logits
                                        * (the split's plan): of n_seq rows or fewer /
                                        * of more */
    int32_t *parts_meta;               /* (4, n_tok) a batch's rows while it goes in parts */
    double busy_s;                     /* seconds this engine's forwards computed */
    char notes[1024];
    /* measurements for the report */
    double prefill_s, decode_s;
    uint64_t n_prefill_tokens, n_decode_tokens, n_forwards;
};

struct sw_session {
    sw_engine *engine;
    uint32_t slot;                     /* its engine_seq */
    sw_progress_fn progress;
    void *progress_user;
};

/* engine.c: an engine over layers [first, end) of the model from a stage's
 * plan (end 0: the whole model, from a whole plan), on the backend's
 * device `device` (backend_params.device_index). */
sw_status engine_create_stage(const sw_model *model, const plan *p, uint32_t first,
                              uint32_t end, uint32_t device, const sw_engine_options *opt,
                              const engine_hooks *hooks, sw_engine **out,
                              sw_alloc_failure *failure);

/* load.c: allocates the plan's buffers (device buffers through the device
 * backend's accounting allocator, in plan order, exactly the planned
 * sizes), the host activations and KV, the host weight buffers, copies
 * resident weights with progress, and starts the ring. On failure frees
 * what it made and, for a refused allocation, fills *failure. */
sw_status engine_load(sw_engine *e, const sw_engine_options *opt, sw_alloc_failure *failure);
void engine_unload(sw_engine *e);

/* Views of what the host side computes with (embedding, host layers, a
 * host LM head), where e->weights puts them in host memory. Load calls it;
 * so does a test that re-points e->weights. */
void engine_bind_host_views(sw_engine *e);

/* host_weights.c: per the plan, points e->weights at the mapping, at
 * weights converted into the host arena, or at the pinned copy of each
 * streamed layer (allocating those), and builds every layer's pack. */
sw_status host_weights_load(sw_engine *e, sw_alloc_failure *failure);
/* Converts resident layer il's changing matrices into the staging buffer
 * and rebuilds its pack, just before its upload. */
sw_status host_weights_stage(sw_engine *e, uint32_t il);
/* After the uploads: frees the staging buffer and the scratch. */
void host_weights_end_load(sw_engine *e);
void host_weights_free(sw_engine *e);

/* pinned.c. Errors: SW_ERR_OOM_HOST, or the backend allocator's. */
sw_status pinned_alloc(backend *device, uint64_t bytes, engine_pinned *out);
void pinned_free(backend *device, engine_pinned *p);

/* ring.c: queues the first fills; acquire makes the compute queue wait
 * for layer il's slot and gives its views; release marks the slot
 * consumed and queues its refill behind that mark. reset drops what is in
 * flight after a failed pass and starts over. */
sw_status ring_start(sw_engine *e);
sw_status ring_acquire(sw_engine *e, uint32_t il, const dev_layer **w);
sw_status ring_release(sw_engine *e, uint32_t il);
sw_status ring_reset(sw_engine *e);
void ring_free(sw_engine *e);

/* split_engine.c (a split's stages in order; forward.c computes each): one
 * forward over the n tokens whose ids, positions and sequences are in the
 * host side's metadata arrays; the n_out rows listed in out_rows get
 * logits (n_out, n_vocab) into `logits` (may be NULL when n_out is 0).
 * After a failure every device is drained and its ring reset, so the next
 * forward starts clean. */
sw_status engine_forward(sw_engine *e, uint32_t n, uint32_t n_out, float *logits);

/* expert_trace.c: opens opt's trace file (SW_ERR_IO; SW_ERR_ARG for a
 * model without experts); after layer il's block ran on `side`, writes its
 * n tokens' routings; closes it. */
sw_status expert_trace_open(sw_engine *e, const sw_engine_options *opt);
sw_status expert_trace_layer(sw_engine *e, uint32_t il, side_id side, uint32_t n);
void expert_trace_close(sw_engine *e);

/* expert_cache.c: the cache's tables and policy (after load: the buffer
 * is the plan's); a cached layer's block on the device, its experts from
 * slots, copied in, or computed on the host; counters; free. */
sw_status xcache_open(sw_engine *e);
sw_status xcache_run_block(sw_engine *e, uint32_t il, block_args *a);
/* After device layer il ran on n tokens: with --expert-prefetch, guesses
 * layer il + 1's experts (its router on il's output; resident layers
 * only) and queues their copies into free or cold slots. */
sw_status xcache_prefetch(sw_engine *e, uint32_t il, uint32_t n);
void xcache_report(const sw_engine *e, sw_expert_report *out);
/* After a failed forward: every slot emptied (its contents are unknown). */
void xcache_reset(sw_engine *e);
void xcache_close(sw_engine *e);
/* expert_copy.c: the copies' source, chosen at xcache_open; one expert's
 * two slices (gate/up, down) from src into dst on the copy queue. */
sw_status xcopy_open(sw_engine *e);
sw_status xcopy_expert(sw_engine *e, const bmem dst[2], const uint8_t *const src[2],
                       const uint64_t bytes[2]);
void xcopy_close(sw_engine *e);

/* forward.c: one engine's part of a forward (a split's stage: the
 * embedding where the model starts, the LM head where it ends, `last`; its
 * stream left for the next stage otherwise: on its device when peer_out,
 * else in host memory), timed into busy_s; and this forward's metadata
 * copied from a's host memory to b's, with the stream (the hop between
 * devices: device to device when b->peer_in, else through the host). */
sw_status engine_stage_forward(sw_engine *e, uint32_t n, uint32_t n_out, float *logits,
                               bool last);
sw_status engine_hand_on(const sw_engine *a, sw_engine *b, uint32_t n);

/* pipeline.c: threads for a split's later stages (start after they are
 * made; stop before they are destroyed, draining first); a forward through
 * them (returns before the later stages finish when it wants no logits);
 * and a wait until every stage is idle, returning a stage's error. */
sw_status pipeline_start(sw_engine *e);
sw_status pipeline_forward(sw_engine *e, uint32_t n, uint32_t n_out, float *logits);
/* ... the first stage's part and the hand-on, without waiting for the
 * rest; and a forward in `parts` micro-batches of consecutive rows. */
sw_status pipeline_post(sw_engine *e, uint32_t n, uint32_t n_out, float *logits);
sw_status pipeline_parts(sw_engine *e, uint32_t n, uint32_t n_out, float *logits,
                         uint32_t parts);
sw_status pipeline_drain(sw_engine *e);
void pipeline_stop(sw_engine *e);

/* Host pointers of the host side's metadata arrays. */
int32_t *engine_host_meta(sw_engine *e, uint64_t offset);

#endif
