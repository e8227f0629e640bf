/*
 * topk.c — topk_indices (topk.h): each value is inserted into the sorted
 * list of the best so far when it beats its last entry; O(n k), fine for
 * the k of at most a few dozen it serves.
 */
#include "util/topk.h"

uint32_t topk_indices(const float *v, uint32_t n, uint32_t k, uint32_t *out) {
    uint32_t m = 0;
    for (uint32_t i = 0; i < n && k > 0; i++) {
        uint32_t j = m < k ? m++ : k;
        if (j == k && !(v[i] > v[out[k - 1]]))
            continue;
        if (j == k)
            j = k - 1;
        for (; j > 0 && v[i] > v[out[j - 1]]; j--)
            out[j] = out[j - 1];
        out[j] = i;
    }
    return m;
}
