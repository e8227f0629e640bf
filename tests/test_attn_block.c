/*
 * test_attn_block.c — prefill attention in block units (several tokens'
 * queries over each widened key and value chunk, attention.c) gives the
 * per-token units' bits exactly: every cache type, global and windowed
 * attention, a ring, soft-capping, several sequences in one batch, runs
 * broken by a sequence change or a gap in positions, KV groups of 1 to 4,
 * head sizes from one lane group to past a chunk's rows, block scratch
 * from roomy (8 tokens per block) to too small (no blocks), and 1 or 2
 * threads. The per-token form is the one test_precision and
 * backend_cases check against the f32 kernel.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_ops.h"
#include "check.h"
#include "quant/half.h"
#include "quant/types.h"

enum { MAX_T = 40, MAX_HD = 320, MAX_H = 8, MAX_HKV = 2, ROWS = 96, N_SEQ = 2 };

typedef struct attn_case {
    uint32_t type, hd, n_head, n_head_kv, ring, window, n_tokens;
    float softcap;
    int layout;                          /* 0: one run; 1: two sequences; 2: a gap */
} attn_case;

static void *xmalloc(size_t n) {
    void *p = malloc(n);
    if (p == NULL) {
        fprintf(stderr, "test_attn_block: out of memory\n");
        exit(1);
    }
    return p;
}

/* A cache of `type` holding random history in every row. */
static void fill_cache(uint64_t *rng, uint32_t type, uint64_t n, uint8_t *dst) {
    for (uint64_t i = 0; i < n; i++) {
        const float x = sw_test_rng_float(rng, -2.0f, 2.0f);
        if (type == SW_TYPE_F32) {
            memcpy(dst + 4 * i, &x, 4);
        } else {
            const uint16_t h = type == SW_TYPE_F16 ? half_f32_to_f16(x) : half_f32_to_bf16(x);
            memcpy(dst + 2 * i, &h, 2);
        }
    }
}

/* Positions and sequences of the batch: one prompt chunk from p0; two
 * sequences interleaved in runs; or one sequence with a gap. */
static void layout(const attn_case *c, uint64_t *rng, int32_t *pos, int32_t *seq) {
    const int32_t p0 = (int32_t)(sw_test_rng_next(rng) % 40);
    for (uint32_t t = 0; t < c->n_tokens; t++) {
        seq[t] = 0;
        pos[t] = p0 + (int32_t)t;
        if (c->layout == 1) {            /* runs of 3 alternate between the sequences */
            seq[t] = (int32_t)((t / 3) % 2);
            pos[t] = p0 + (int32_t)(t / 6 * 3 + t % 3);
        } else if (c->layout == 2 && t >= c->n_tokens / 2) {
            pos[t] += 5;
        }
    }
}

static int run_case(const attn_case *c, cpu_pool *pool, uint64_t *rng, uint64_t block_floats) {
    const uint64_t elem = c->type == SW_TYPE_F32 ? 4 : 2;
    const uint64_t row_elems = (uint64_t)c->n_head_kv * c->hd;
    const uint64_t cache_bytes = (uint64_t)N_SEQ * ROWS * row_elems * elem;
    const uint64_t q_n = (uint64_t)c->n_tokens * c->n_head * c->hd;
    const uint64_t nth = (uint64_t)cpu_pool_size(pool);
    uint8_t *k = xmalloc(cache_bytes), *v = xmalloc(cache_bytes);
    float *q = xmalloc(q_n * 4), *want = xmalloc(q_n * 4), *got = xmalloc(q_n * 4);
    float *scratch = xmalloc(nth * ROWS * MAX_H * sizeof(float));
    float *block = xmalloc((block_floats ? block_floats : 1) * sizeof(float));
    int32_t pos[MAX_T], seq[MAX_T];
    fill_cache(rng, c->type, cache_bytes / elem, k);
    fill_cache(rng, c->type, cache_bytes / elem, v);
    for (uint64_t i = 0; i < q_n; i++)
        q[i] = sw_test_rng_float(rng, -1.0f, 1.0f);
    layout(c, rng, pos, seq);
    cpu_attn_args a = {.q = q, .k = k, .v = v, .kv_type = c->type, .out = want, .q_pos = pos,
                       .q_seq = c->layout == 1 ? seq : NULL, .seq_rows = ROWS,
                       .n_tokens = c->n_tokens, .n_head = c->n_head,
                       .n_head_kv = c->n_head_kv, .head_dim = c->hd, .kv_ring = c->ring,
                       .window = c->window, .softcap = c->softcap, .scratch = scratch,
                       .scratch_floats = nth * ROWS * MAX_H};
    cpu_attention(pool, &a);            /* per-token units */
    memset(got, 0xff, q_n * 4);
    a.out = got;
    a.block = block;
    a.block_floats = block_floats;
    cpu_attention(pool, &a);
    const int same = memcmp(want, got, q_n * 4) == 0;
    SW_CHECK(same, "%s cache, hd %u, %u/%u heads, ring %u, window %u, softcap %g, %u tokens, "
             "layout %d, %d threads, block %llu floats: block units differ from per-token "
             "units", type_name(c->type), c->hd, c->n_head, c->n_head_kv, c->ring, c->window,
             (double)c->softcap, c->n_tokens, c->layout, cpu_pool_size(pool),
             (unsigned long long)block_floats);
    free(block);
    free(scratch);
    free(got);
    free(want);
    free(q);
    free(v);
    free(k);
    return same;
}

int main(void) {
    static const uint32_t types[] = {SW_TYPE_F32, SW_TYPE_F16, SW_TYPE_BF16};
    static const uint32_t hds[] = {16, 64, 320};
    static const uint32_t heads[][2] = {{4, 1}, {8, 2}, {2, 2}};
    static const uint32_t tokens[] = {2, 7, 40};
    /* (ring, window): global; a window; a ring over a window */
    static const uint32_t rw[][2] = {{0, 0}, {0, 9}, {ROWS / 2, 12}};
    uint64_t rng = 7;
    int n = 0, ok = 0;
    for (int threads = 1; threads <= 2; threads++) {
        cpu_pool *pool = NULL;
        SW_CHECK_OK(cpu_pool_create(threads, &pool));
        if (pool == NULL)
            break;
        for (size_t ti = 0; ti < 3; ti++)
            for (size_t hi = 0; hi < 3; hi++)
                for (size_t gi = 0; gi < 3; gi++)
                    for (size_t ri = 0; ri < 3; ri++)
                        for (size_t ni = 0; ni < 3; ni++) {
                            attn_case c = {.type = types[ti], .hd = hds[hi],
                                           .n_head = heads[gi][0], .n_head_kv = heads[gi][1],
                                           .ring = rw[ri][0], .window = rw[ri][1],
                                           .n_tokens = tokens[ni],
                                           .softcap = (ti + hi + ni) % 2 ? 2.5f : 0.0f,
                                           .layout = (int)((hi + gi + ri + ni) % 3)};
                            /* roomy; enough for 2-token blocks only; none */
                            const uint64_t room[] = {
                                (uint64_t)threads * CPU_ATTN_BLOCK_FLOATS,
                                (uint64_t)threads * (2u * MAX_H * (ROWS + 1) + 16384),
                                (uint64_t)threads * 100};
                            for (int b = 0; b < 3; b++, n++)
                                ok += run_case(&c, pool, &rng, room[b]);
                        }
        cpu_pool_destroy(pool);
    }
    printf("attention block units: %d of %d cases bit-identical to per-token units\n", ok, n);
    return sw_check_finish("test_attn_block");
}
