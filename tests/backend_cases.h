/*
 * backend_cases.h — one transformer block with random weights, run on any
 * backend (tests only): test_backend.c compares the sim's block entry and
 * per-op path with the cpu backend's ops; test_cuda_ops.c the CUDA block
 * entry with its op sequence and the cpu backend.
 *
 *   bt_block_case c;
 *   bt_block_case_init(&c, &shape, SW_TYPE_Q4_K, 12, 32, 2, 4, 0.1f);
 *   float *x = bt_block_case_run(b, &c, 5, true, &kv);  // first 5 tokens
 *   ...; free(x); free(kv); bt_block_case_free(&c);
 */
#ifndef SW_TESTS_BACKEND_CASES_H
#define SW_TESTS_BACKEND_CASES_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/block.h"

/* What bt_attn_case_run gives: the backend's cache after the append and
 * its attention output, beside the cpu kernels' on host copies. */
typedef struct bt_attn_result {
    uint8_t *cache, *want_cache;   /* (cache_bytes) keys then values */
    float *out, *want_out;         /* (out_floats) */
    uint64_t cache_bytes, out_floats;
} bt_attn_result;

/* 5 tokens of two sequences (positions near a 64-row cache's end and at
 * its start) over an earlier random history in the cache type: KV append
 * then attention, 4 query heads over 2 KV heads of head_dim. */
void bt_attn_case_run(backend *b, uint32_t kv_type, uint32_t ring, uint32_t window,
                      float softcap, uint32_t head_dim, bt_attn_result *r);
void bt_attn_result_free(bt_attn_result *r);

typedef struct bt_block_case {
    block_shape shape;
    uint32_t max_tokens, rows, n_seq, window;  /* cache: n_seq x rows, f32 */
    uint8_t *weights;                          /* the packed layer */
    uint64_t offs[BW_COUNT], sizes[BW_COUNT], total;
    uint64_t ne0[BW_COUNT], ne1[BW_COUNT];
    uint32_t type[BW_COUNT];
    float *x;                                  /* (max_tokens, n_embd) input */
    int32_t *pos, *seq;                        /* (max_tokens) */
} bt_block_case;

/* Random norms in [0.5, 1.5) and matrices: F32 in [-range, range), or
 * `mtype` blocks (up in Q8_0 when mtype is Q4_K, so gate and up differ);
 * inputs in [-2, 2); token t in sequence t % n_seq at position t / n_seq
 * (each cache row written once). */
void bt_block_case_init(bt_block_case *c, const block_shape *shape, uint32_t mtype,
                        uint32_t max_tokens, uint32_t rows, uint32_t n_seq, uint32_t window,
                        float range);

/* The first n tokens through the block on b (its block entry when `fused`
 * and it has one, else block_run_ops), from a zeroed cache; returns x
 * after the block and, in *kv_out, the cache (both malloc'd). */
float *bt_block_case_run(backend *b, const bt_block_case *c, uint32_t n, bool fused,
                         uint8_t **kv_out);

/* Bytes of the cache bt_block_case_run returns. */
uint64_t bt_block_case_kv_bytes(const bt_block_case *c);

void bt_block_case_free(bt_block_case *c);

#endif
