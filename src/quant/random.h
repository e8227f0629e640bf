/*
 * random.h — tensor data of any block type filled with random quants and
 * small, finite scales: what measurements and tests feed the kernels
 * (never zeros, which some kernels run faster on; never NaN or inf, which
 * would make timing and comparisons meaningless).
 */
#ifndef SW_QUANT_RANDOM_H
#define SW_QUANT_RANDOM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Fills n_bytes (whole blocks of `type`) at dst: F32/F16/BF16 elements
 * uniform in [-1, 1); block types random quants with every f16 scale
 * field (d, and dmin/m where the format has one) of magnitude in [0.001,
 * 0.02). *state is the generator's state (any non-zero seed); the same
 * seed gives the same bytes. */
void quant_fill_random(uint32_t type, uint8_t *dst, uint64_t n_bytes, uint64_t *state);

#ifdef __cplusplus
}
#endif

#endif
