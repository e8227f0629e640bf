/*
 * dequant.h — portable reference dequantization of ggml tensor data to f32.
 *
 * These are the CPU reference every faster kernel (SIMD, CUDA) is tested
 * against. Each result is bit-identical to the gguf Python package's
 * numpy dequantizers (tests/test_quant.c checks this against a golden file
 * made by tools/golden/make_quant_golden.py): the float operations are the
 * same ones in the same order, e.g. Q4_K is (d*sc)*q - (dmin*m), never an
 * algebraically equal rewrite. The build must keep -ffp-contract=off (an
 * FMA would round once where numpy rounds twice) and never use fast-math.
 *
 * Input blocks are read byte by byte as little-endian with no alignment
 * assumption, so src may point anywhere inside a memory-mapped file.
 *
 * Example
 *   float row[256];
 *   if (quant_dequantize(SW_TYPE_Q4_K, block_ptr, row, 256) != SW_OK)
 *       return sw_error_prefix(SW_ERR_FORMAT, "tensor '%s'", name);
 */
#ifndef SW_QUANT_DEQUANT_H
#define SW_QUANT_DEQUANT_H

#include <stdint.h>

#include "spillway.h"

/* Dequantizes n_elems elements (a whole number of blocks) of `type` from
 * src into dst. src holds n_elems / block_elems blocks of block_bytes each
 * (quant/types.h); dst holds n_elems floats; they must not overlap.
 * Thread-safe (no state). n_elems == 0 is a no-op and may pass NULL.
 * Errors: SW_ERR_UNSUPPORTED "unsupported tensor type N (NAME)" for a type
 * without a dequantizer; SW_ERR_ARG if n_elems is not a multiple of the
 * block size or a pointer is NULL. The caller adds the tensor name to the
 * message (sw_error_prefix). */
sw_status quant_dequantize(uint32_t type, const void *src, float *dst, uint64_t n_elems);

/* Per-type kernels behind quant_dequantize: n_blocks whole blocks, no
 * checks. For backends that dequantize a row at a time in a hot loop. */
void dequant_f32(const uint8_t *src, float *dst, uint64_t n_blocks);
void dequant_f16(const uint8_t *src, float *dst, uint64_t n_blocks);
void dequant_bf16(const uint8_t *src, float *dst, uint64_t n_blocks);
void dequant_q4_0(const uint8_t *src, float *dst, uint64_t n_blocks);
void dequant_q4_1(const uint8_t *src, float *dst, uint64_t n_blocks);
void dequant_q5_0(const uint8_t *src, float *dst, uint64_t n_blocks);
void dequant_q5_1(const uint8_t *src, float *dst, uint64_t n_blocks);
void dequant_q8_0(const uint8_t *src, float *dst, uint64_t n_blocks);
void dequant_q2_k(const uint8_t *src, float *dst, uint64_t n_blocks);
/* Q4_K/Q5_K: the 8 6-bit sub-block scales and mins from a block's 12
 * scale bytes (also the CPU backend's integer dots). */
void unpack_scale_min_k4(const uint8_t s[12], int sc[8], int mn[8]);
void dequant_q3_k(const uint8_t *src, float *dst, uint64_t n_blocks);
void dequant_q4_k(const uint8_t *src, float *dst, uint64_t n_blocks);
void dequant_q5_k(const uint8_t *src, float *dst, uint64_t n_blocks);
void dequant_q6_k(const uint8_t *src, float *dst, uint64_t n_blocks);
void dequant_q8_k(const uint8_t *src, float *dst, uint64_t n_blocks);

#endif
