/*
 * quantize.h — f32 → stored weight types: the reverse of dequant.h, used
 * when converting weights at load (--weights) and when writing synthetic
 * models (spillway synth).
 *
 * F16/BF16 round to nearest even (half.h); Q8_0 follows the gguf Python
 * package's Q8_0.quantize operation for operation (scale = max|x| / 127 in
 * f32, 1/scale, round half away from zero, scale stored as f16), so bytes
 * match it exactly. Q4_K is implemented in quantize_k.c.
 */
#ifndef SW_QUANT_QUANTIZE_H
#define SW_QUANT_QUANTIZE_H

#include <stdint.h>

#include "spillway.h"

/* Whether quant_quantize() can produce `type`. */
int quant_can_quantize(uint32_t type);

/* Converts n f32 values from src to `type` at dst, which must hold
 * type_row_bytes(type, n) bytes. n must be a multiple of the type's block
 * size. Errors: SW_ERR_UNSUPPORTED (no quantizer for the type), SW_ERR_ARG
 * (n not a multiple of the block size). Thread-safe; no allocation. */
sw_status quant_quantize(uint32_t type, const float *src, void *dst, uint64_t n);

/* Or'ed into `want` below: quantized sources are dequantized too (BF16 or
 * F16 targets; --weights bf16-dequant, what the PJRT backend computes on). */
#define QUANT_DEQUANT 0x100u

/* The type a matrix stored as `src` with rows of ne0 elements takes when
 * weights are converted at load to `want` (F16, BF16 or Q8_0; --weights):
 *   - quantized sources (anything but F32/F16/BF16) are kept: returns src,
 *     unless want has QUANT_DEQUANT (then they become want's type);
 *   - Q8_0 needs whole 32-element blocks: a row that is not becomes F16
 *     from an F32 source and is kept from an F16/BF16 one;
 *   - otherwise `want`. Returns src when nothing changes.
 * The planner prices and the engine converts with this one rule. */
uint32_t quant_convert_type(uint32_t src, uint64_t ne0, uint32_t want);

/* Converts n_rows rows of ne0 elements stored as src_type at src into
 * dst_type at dst (type_row_bytes(dst_type, ne0) * n_rows bytes), one row
 * at a time through `row` (ne0 floats of caller scratch): dequantize
 * (exact for F32/F16/BF16), then quant_quantize. Thread-safe; no
 * allocation. Errors: SW_ERR_UNSUPPORTED, SW_ERR_ARG (as quant_quantize). */
sw_status quant_convert_rows(uint32_t src_type, const void *src, uint32_t dst_type, void *dst,
                             uint64_t n_rows, uint64_t ne0, float *row);

/* Block quantizers: n_blocks blocks from src (32 or 256 floats each). */
void quantize_q8_0(const float *src, uint8_t *dst, uint64_t n_blocks);
void quantize_q4_k(const float *src, uint8_t *dst, uint64_t n_blocks);
void quantize_q6_k(const float *src, uint8_t *dst, uint64_t n_blocks);

#endif
