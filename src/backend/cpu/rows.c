/*
 * rows.c — the CPU backend's row movers: KV append (new keys and values
 * into their cache rows, in the cache's element type) and gathering rows
 * of activations (the tokens whose logits are wanted).
 *
 * KV rows are rounded by quant_quantize (nearest even for F16/BF16), the
 * same conversion attention widens back exactly, so an f16 cache changes
 * only the stored values' precision. Neither kernel depends on how tokens
 * are batched: each row is written from its own token alone.
 */
#include <string.h>

#include "backend/cpu/cpu_ops.h"
#include "quant/quantize.h"
#include "quant/types.h"
#include "util/error.h"

void cpu_kv_append(const float *k, const float *v, const int32_t *pos, const int32_t *seq,
                   uint32_t n_tokens, uint32_t row_elems, uint32_t type, uint32_t seq_rows,
                   uint32_t ring, void *k_cache, void *v_cache) {
    const uint64_t row_bytes = (uint64_t)row_elems * (type == SW_TYPE_F32 ? 4 : 2);
    for (uint32_t t = 0; t < n_tokens; t++) {
        uint64_t p = (uint64_t)pos[t];
        uint64_t row = (seq ? (uint64_t)seq[t] * seq_rows : 0) + (ring ? p % ring : p);
        uint64_t off = row * row_bytes;
        /* Cannot fail: the type was checked when the cache was sized. */
        (void)quant_quantize(type, k + (uint64_t)t * row_elems, (char *)k_cache + off,
                             row_elems);
        (void)quant_quantize(type, v + (uint64_t)t * row_elems, (char *)v_cache + off,
                             row_elems);
    }
}

sw_status cpu_gather_rows(const float *src, uint32_t n_src, const int32_t *idx, uint32_t n,
                          uint32_t cols, float *dst) {
    for (uint32_t i = 0; i < n; i++)
        if (idx[i] < 0 || (uint32_t)idx[i] >= n_src)
            return sw_errorf(SW_ERR_ARG, "gather: row index %d at %u is outside [0, %u)",
                             idx[i], i, n_src);
    /* memmove: a row may be gathered onto itself (dst aliasing src). */
    for (uint32_t i = 0; i < n; i++)
        memmove(dst + (uint64_t)i * cols, src + (uint64_t)idx[i] * cols,
                (size_t)cols * sizeof(float));
    return SW_OK;
}
