/*
 * topk.h — the k largest of n floats, by index: a sorted insertion, for
 * the small k of logprobs' alternatives and an assistant's centroids.
 */
#ifndef SW_UTIL_TOPK_H
#define SW_UTIL_TOPK_H

#include <stdint.h>

/* The indices of the k largest of v[0..n) into out (room for k), largest
 * first, ties to the lower index. Returns how many: k, or n when fewer. */
uint32_t topk_indices(const float *v, uint32_t n, uint32_t k, uint32_t *out);

#endif
