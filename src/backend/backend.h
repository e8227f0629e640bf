/*
 * backend.h — the one small interface every compute backend implements
 * (cpu, sim, pjrt, cuda): memory it owns, two queues, and the handful of
 * ops Gemma needs, described as data.
 *
 * Model of a device (the CUDA/PJRT one; the cpu backend is its degenerate
 * case where every call has finished when it returns):
 *   memory   buffers (backend_buf) made by alloc(); a place in one is a
 *            bmem (buffer + byte offset). The host never dereferences
 *            device memory: it reaches it only through copies.
 *   queues   a compute queue (ops, and small activation copies) and a copy
 *            queue (weight uploads). Each runs its work in submission order.
 *            Every call below *enqueues* and returns a status; an error
 *            found while the work runs is sticky and returned by the next
 *            sync(), event_sync() or submission.
 *   events   event_record(ev, q) marks "everything queued on q so far";
 *            queue_wait(q, ev) makes later work on q wait for that mark,
 *            without blocking the host; event_sync(ev) blocks the host.
 *            Re-recording an event moves its mark; waits already queued keep
 *            the mark they saw.
 * The host blocks only where it needs a result: logits to sample, or the
 * residual stream for a layer computed on the host.
 *
 * Ops are plain structs (bop) handed to submit(); every op reads and writes
 * f32 activations in the backend's memory, and weights as btensors in their
 * stored type. A backend may also offer `block`: one transformer block as
 * one call (backend/block.h), which the engine prefers when present (XLA
 * compiles one program per block; per-op dispatch would be slow there).
 * block_run_ops() is the same block as a sequence of submits.
 *
 * Backends know nothing of plans: the engine decides what goes where and
 * calls these entries; a backend only allocates what it is asked for,
 * within its capacity, and reports what it used. Constructors are reached
 * by name through the registry (backend_create).
 *
 * Errors are sw_status values with sw_errorf() messages; an allocation
 * beyond capacity is SW_ERR_OOM_DEVICE naming the request, the capacity and
 * the bytes in use. Nothing aborts.
 */
#ifndef SW_BACKEND_BACKEND_H
#define SW_BACKEND_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "spillway.h"

typedef struct backend backend;
typedef struct backend_buf backend_buf;     /* one allocation; opaque, per backend */
typedef struct backend_event backend_event; /* a mark in one queue's work */

/* A place in a backend's memory: byte `off` of `buf`. */
typedef struct bmem {
    backend_buf *buf;
    uint64_t off;
} bmem;

static inline bmem bmem_at(bmem m, uint64_t delta) {
    m.off += delta;
    return m;
}

typedef enum backend_queue { BQ_COMPUTE = 0, BQ_COPY = 1, BQ_COUNT = 2 } backend_queue;

/* A weight tensor in a backend's memory, in its stored type: ne1 rows of
 * ne0 elements (matrices), or one row of ne0 f32 (norm vectors). */
typedef struct btensor {
    const char *name;   /* for messages; borrowed */
    uint32_t type;      /* SW_TYPE_* (quant/types.h) */
    uint64_t ne0, ne1;
    uint64_t n_bytes;   /* 0: absent (an optional norm) */
    bmem mem;
} btensor;

/* One layer's KV cache in a backend's memory: for each of n_seq sequences
 * `rows` rows of row_elems elements of `type` (F32, F16 or BF16) for keys,
 * then the same for values. Position p of sequence s lives in row
 * s * rows + (ring ? p % ring : p). */
typedef struct bkv {
    bmem k, v;
    uint32_t type;
    uint32_t row_elems;   /* n_head_kv * head_dim */
    uint32_t rows;        /* per sequence */
    uint32_t ring;        /* 0: rows == context, row = position */
    uint32_t n_seq;
} bkv;

/* ---- ops ----------------------------------------------------------------
 * Activations are row-major [n_tokens][dim] f32. Per-token metadata (token
 * ids, positions, sequence ids, row indices) are int32 arrays in the
 * backend's memory. Every op gives the same bits on every backend that
 * runs the CPU kernels (cpu, sim): results depend only on the row/token. */
typedef enum bop_kind {
    BOP_GET_ROWS,    /* out[t] = row ids[t] of w, dequantized (embedding) */
    BOP_RMSNORM,     /* y = x / sqrt(mean(x^2) + eps) * w, per row of n */
    BOP_MATMUL,      /* y[t][r] = sum_c w[r][c] * x[t][c] */
    BOP_ROPE,        /* rotate-half RoPE in place, angle pos*fscale*base^(-2i/hd) */
    BOP_KV_APPEND,   /* cache rows of (seq[t], pos[t]) = k[t], v[t], rounded to its type */
    BOP_ATTENTION,   /* causal (and windowed) attention of each token over its sequence */
    BOP_GEGLU,       /* out = gelu_tanh(gate) * up */
    BOP_ADD,         /* x += y */
    BOP_SCALE,       /* x *= s */
    BOP_SOFTCAP,     /* x = cap * tanh(x / cap) */
    BOP_GATHER,      /* dst[i] = src[idx[i]], rows of `cols` floats */
    BOP_MOE_ROUTE,   /* per token: the top k of softmax(scores), renormalised, x expert scale */
    BOP_MOE_EXPERTS, /* out[t] = sum of its k experts' w * down_e(gelu(gate_e x) * up_e x) */
    BOP_MOE_CACHED,  /* the same with the experts in cache slots or computed elsewhere */
    BOP_COUNT
} bop_kind;

typedef struct bop_get_rows { btensor w; bmem ids, out; uint32_t n; } bop_get_rows;
/* w with n_bytes 0 (no buffer): no multiplier (Gemma 4's value norm). */
typedef struct bop_rmsnorm { bmem x; btensor w; bmem y; uint32_t n, n_rows; float eps; } bop_rmsnorm;
/* fine: x's magnitude swings along the row (the down projection's input,
 * the GeGLU product); the cpu kernels then quantize it with a scale per 32
 * (idot.h's fine form). x_again: the previous op on this queue was a
 * matmul over the same x and n_tokens, and nothing has written x since
 * (K and V after Q, up after gate); the cpu kernels then reuse the
 * activations they quantized for it. Both change no result; backends with
 * f32 activations ignore them. */
typedef struct bop_matmul {
    btensor w;
    bmem x, y;
    uint32_t n_tokens;
    bool fine, x_again;
} bop_matmul;
typedef struct bop_rope {
    bmem x, pos;
    uint32_t n_tokens, n_heads, head_dim;
    float base, freq_scale;
    uint32_t n_pairs;          /* pairs turned, (i, i + hd/2) for i < n_pairs; 0: all */
} bop_rope;
typedef struct bop_kv_append { bmem k, v, pos, seq; bkv cache; uint32_t n_tokens; } bop_kv_append;
typedef struct bop_attention {
    bmem q, out, pos, seq;     /* q: (n_tokens, n_head, hd), RoPE'd and scaled */
    bkv cache;
    uint32_t n_tokens, n_head, n_head_kv, head_dim;
    uint32_t window;           /* 0: global */
    float softcap;             /* 0: none */
    uint32_t max_keys;         /* hint: block_args.max_keys; 0 unknown */
} bop_attention;
typedef struct bop_geglu { bmem gate, up, out; uint64_t n; } bop_geglu;
typedef struct bop_add { bmem x, y; uint64_t n; } bop_add;
typedef struct bop_scale { bmem x; uint64_t n; float s; } bop_scale;
typedef struct bop_softcap { bmem x; uint64_t n; float cap; } bop_softcap;
/* Gemma 4's router after its projection: scores (n_tokens, n_expert) ->
 * ids and weights (n_tokens, k): the k largest probabilities of the
 * softmax (ties to the lower id), divided by their sum, times
 * expert_scale[id] (f32, n_expert). */
typedef struct bop_moe_route {
    bmem scores, ids, weights;
    btensor expert_scale;
    uint32_t n_tokens, n_expert, k;
} bop_moe_route;
/* The experts of one layer over n_tokens rows of x (n_embd): gate_up
 * holds n_expert matrices of 2 * n_ff_exp rows (gate rows, then up), down
 * n_expert of n_embd rows; out[t] = the sum, in ascending expert id, of
 * weights[t][j] * down_e(gelu_tanh(gate_e x[t]) * up_e x[t]) for
 * e = ids[t][j]. xg (n_tokens, n_embd), gu (n_tokens, 2 * n_ff_exp) and yd
 * (n_tokens, n_embd) are the op's scratch. */
typedef struct bop_moe_experts {
    btensor gate_up, down;
    bmem x, ids, weights, out, xg, gu, yd;
    uint32_t n_tokens, n_expert, k;
} bop_moe_experts;
/* The experts of bop_moe_experts when only some live here (issue 38's
 * expert cache): gate_up and down hold n_slot experts' slices, slot s the
 * s-th; slot_of (n_expert int32) gives each expert's slot, or -1: computed
 * elsewhere, its outputs in y (n_y rows of n_embd), routing (t, j) reading
 * row y_row[t * k + j]. accumulate: out as bop_moe_experts (the same sum in
 * the same order: the same bits); else only the slotted experts' outputs
 * are written, into y at the rows y_row names (the other side's share;
 * out untouched). */
typedef struct bop_moe_cached {
    btensor gate_up, down;
    bmem x, ids, weights, slot_of, y_row, y, out, xg, gu, yd;
    uint32_t n_tokens, n_expert, n_slot, k, n_y;
    bool accumulate;
} bop_moe_cached;
/* src spans n_src rows; every idx[i] must be < n_src. */
typedef struct bop_gather { bmem src, idx, dst; uint32_t n, n_src, cols; } bop_gather;

typedef struct bop {
    bop_kind kind;
    union {
        bop_get_rows get_rows;
        bop_rmsnorm rmsnorm;
        bop_matmul matmul;
        bop_rope rope;
        bop_kv_append kv_append;
        bop_attention attention;
        bop_geglu geglu;
        bop_add add;
        bop_scale scale;
        bop_softcap softcap;
        bop_gather gather;
        bop_moe_route moe_route;
        bop_moe_experts moe_experts;
        bop_moe_cached moe_cached;
    } u;
} bop;

/* ---- operands: the one description of what an op reads and writes --------
 * bop_for_each_mem (here) and block_for_each_mem (block.h) say, for every
 * place in memory an op or a block touches, how many bytes it spans and
 * how the call uses it. Backends derive everything operand-shaped from
 * them: bounds checks (cuda, sim), address translation and reader tracking
 * (sim), program signatures (pjrt). A new op field is one edit there. */
typedef enum mem_access {
    MEM_READ = 1,     /* the value on entry is read */
    MEM_WRITE = 2,    /* the call writes it */
    MEM_UPDATE = 3    /* both: read, then written (in place) */
} mem_access;

/* How a block operand's rows follow the batch's tokens: what padding a
 * batch to a larger size appends to it (zeros, position -1, sequence 0). */
typedef enum mem_rows {
    MEM_ROWS_NONE = 0, MEM_ROWS_F32, MEM_ROWS_POS, MEM_ROWS_SEQ
} mem_rows;

typedef struct mem_operand {
    bmem *m;               /* inside the op or block_args walked: fn may re-point it */
    uint64_t bytes;        /* the bytes the call spans from *m */
    mem_access access;
    bool result;           /* its value after the call is a result (else, when
                            * written, it is scratch: undefined afterwards) */
    bool kv;               /* a KV cache half */
    mem_rows rows;         /* blocks only */
    const btensor *weight; /* a weight operand: its tensor; else NULL */
    int what;              /* blocks: which operand (block.h's block_operand) */
} mem_operand;

/* Called once per operand, in a fixed order per op (the order of PJRT's
 * program arguments: inputs as the op reads them, then results); stopping
 * at the first non-OK status, which the walker returns. */
typedef sw_status (*mem_operand_fn)(void *user, const mem_operand *o);
sw_status bop_for_each_mem(bop *op, mem_operand_fn fn, void *user);

/* The bytes of one half (keys or values) of a KV cache, every sequence. */
uint64_t bkv_half_bytes(const bkv *c);

/* Submits the op literal to b's compute queue, returning the status from
 * the calling function on failure (block.c's and ends.c's steps). */
#define BOP_SUBMIT(b, ...)                                                 \
    do {                                                                   \
        bop op_ = __VA_ARGS__;                                             \
        sw_status st_ = (b)->vt->submit((b), &op_);                        \
        if (st_ != SW_OK)                                                  \
            return st_;                                                    \
    } while (0)

/* Short name of an op kind ("matmul"). */
const char *bop_name(bop_kind kind);

/* ---- the vtable ---------------------------------------------------------- */

typedef struct backend_stats {
    uint64_t capacity_bytes;   /* UINT64_MAX when unlimited (cpu) */
    uint64_t in_use_bytes;     /* accounted bytes currently allocated */
    uint64_t peak_bytes;       /* high-water mark of in_use_bytes */
    uint64_t n_allocs;         /* successful allocations so far */
    uint64_t bytes_to_device;  /* bytes copied host -> device (both queues) */
    uint64_t peer_bytes;       /* bytes copied in from another device (copy_peer) */
    double copy_busy_s;        /* time the copy queue spent copying */
    double wait_stall_s;       /* time the compute queue waited for copies */
    uint64_t driver_peak_bytes;/* cuda: the most device memory the driver saw
                                * this backend's buffers take (cudaMemGetInfo
                                * deltas, granularity included); 0 elsewhere */
} backend_stats;

struct block_args;

typedef struct backend_vtable {
    const char *name;                                    /* "cpu", "sim" */
    void (*destroy)(backend *b);     /* waits for queued work, frees everything */

    /* Memory, accounted against the capacity; contents undefined. bytes 0
     * gives *out = NULL and SW_OK. free() requires that no queued work
     * still uses the buffer (sync first); NULL is a no-op. Thread-safe. */
    sw_status (*alloc)(backend *b, uint64_t bytes, const char *purpose, backend_buf **out);
    void (*free)(backend *b, backend_buf *buf);
    /* Optional (NULL when the backend's memory is not the host's): a
     * buffer spanning all host memory, so bmem{buf, (uintptr_t)p} names the
     * host bytes at p in place (the file mapping, a caller's array). */
    backend_buf *(*host_memory)(backend *b);
    /* Optional: host memory the device copies from at the full (pinned)
     * link rate (cudaHostAlloc). Not counted against the capacity. */
    sw_status (*host_alloc_pinned)(backend *b, uint64_t bytes, void **out);
    void (*host_free_pinned)(backend *b, void *ptr);
    /* Optional: lets the device copy from host bytes it did not allocate
     * (the file mapping) in place at the pinned rate (cudaHostRegister,
     * read-only). An error changes nothing; the caller copies another way.
     * host_unregister takes the pointer host_register took. */
    sw_status (*host_register)(backend *b, void *ptr, uint64_t bytes);
    void (*host_unregister)(backend *b, void *ptr);

    /* Copies between host memory and dst/src, queued on q. The host bytes
     * must stay valid (and, for d2h, unread) until the copy has run: until
     * an event recorded after it has fired. */
    sw_status (*copy_h2d)(backend *b, backend_queue q, bmem dst, const void *src,
                          uint64_t bytes);
    sw_status (*copy_d2h)(backend *b, backend_queue q, void *dst, bmem src, uint64_t bytes);

    /* Enqueues one op on the compute queue. Arguments are checked here
     * (types, bounds): SW_ERR_ARG / SW_ERR_UNSUPPORTED before anything runs. */
    sw_status (*submit)(backend *b, const bop *op);
    /* Optional: a whole transformer block on the compute queue. */
    sw_status (*block)(backend *b, const struct block_args *a);

    sw_status (*event_create)(backend *b, backend_event **out);
    void (*event_destroy)(backend *b, backend_event *ev);  /* even while marks are pending */
    sw_status (*event_record)(backend *b, backend_event *ev, backend_queue q);
    sw_status (*queue_wait)(backend *b, backend_queue q, backend_event *ev);
    /* Blocks the host until ev's mark has passed (a never-recorded event
     * has). Time spent counts as stall. */
    sw_status (*event_sync)(backend *b, backend_event *ev);
    /* Blocks until both queues are empty; returns any sticky error. */
    sw_status (*sync)(backend *b);

    void (*get_stats)(backend *b, backend_stats *out);
    /* Restarts the high-water mark at the bytes in use now. */
    void (*reset_peak)(backend *b);

    /* Optional (NULL: a split's stream hops through host memory): copies
     * `bytes` from src's memory to b's, two devices of this same backend
     * (a split over several), once src's queued work has run; returns when
     * they have landed. */
    sw_status (*copy_peer)(backend *b, bmem dst, backend *src, bmem src_mem, uint64_t bytes);
} backend_vtable;

struct backend {
    const backend_vtable *vt;
    void *impl;
};

/* Destroys any backend (made by registry.h's backend_create). Accepts
 * NULL. */
void backend_destroy(backend *b);

#endif
